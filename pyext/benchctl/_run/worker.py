"""``python -m benchctl._run.worker JOB.json``: run one matrix cell in this fresh process.

The runner writes the job (workload, its arguments, the cell's settings and
where to put the result) to a JSON file and starts this module with its own
interpreter, no shell. The worker applies the settings, runs the workload
under a :class:`~benchctl._run.recorder.CountedRecorder` (which checks between
timed iterations, at least every 2 ms, that the settings still hold, and asks every setting what it
reads where each phase ends: ``phases[phase][setting.phase_key]``, e.g. glibc malloc's
state under ``"malloc"``), reads every setting back,
(a paired cell's worker, whose job holds a ``pair``: under a
:class:`~benchctl._run.paired.PairedRecorder`, which switches the pair's settings between the
baseline's values and the cell's between timed iterations; with ``carry_control`` also the paired
A/A control's arm, kept under the result's ``control``),
and writes one JSON result atomically to ``result_path``.
Exit status 0 means the result says ``"status": "ok"``; on an exception the
worker still writes what it has (``"status": "failed"`` with the error and
any iterations already recorded), prints the traceback to stderr and exits 1.
A worker killed outright writes nothing; the runner records that from the
exit status.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from typing import Any

from .. import clock, settings, _workloads as workloads
from .._cpustat import BusySampler
from .._results.document import atomic_write_text, dumps
from .paired import CONTROL_LETTER, Pair, PairedRecorder
from .recorder import CountedRecorder, open_counter_group

__all__ = ["PROTOCOL", "run_job", "die_with_parent", "main"]

#: The job/result format the runner and this worker speak; the runner writes it into every job.
PROTOCOL = 1
# The end of a failure's traceback kept in the result: the user's frames are last.
_TRACEBACK_CHARS = 6000


def _phases(rec: CountedRecorder) -> dict[str, Any]:
    out = {}
    for phase, ticks in rec.ticks.items():
        out[phase] = {
            "ticks": [int(t) for t in ticks],
            "ns": [float(v) for v in clock.to_ns(ticks)] if ticks else [],
            "counters": rec.counters.get(phase, {}),
        }
        read, errors = rec.ended.get(phase, {}), rec.ended_errors.get(phase, {})
        for name, setting in settings.SETTINGS.items():
            key = setting.phase_key or name
            if name in read:
                value = read[name]
                out[phase][key] = value.to_json() if hasattr(value, "to_json") else value
            elif name in errors:
                out[phase][f"{key}_error"] = errors[name]
    return out


class _Stage:
    """What the worker is doing now, so that a failure says where it happened."""

    def __init__(self) -> None:
        self.now = "loading the workload"


def _apply_settings(plan: list, stage: _Stage, pair: Pair | None = None) -> dict[str, Any]:
    switched = [settings.SETTINGS[name] for name in pair.names] if pair is not None else []
    if any(setting.needs_torch for setting in [s for _, s, _ in plan] + switched):
        stage.now = "importing torch"
        import torch  # noqa: F401  (its thread pools must exist before settings touch them)
    applied = {}
    for name, setting, value in plan:
        stage.now = f"applying {name}={settings.format_value(value)}"
        applied[name] = setting.apply(value)
    return applied


def _read_back(plan: list, applied: dict[str, Any], rec: CountedRecorder, stage: _Stage) -> dict[str, Any]:
    """Each setting as requested, applied, observed after the run, and (where it has an in-run check)
    ``during`` the timed iterations: ``{"held", "seen", "samples"}``."""
    out = {}
    for name, setting, value in plan:
        stage.now = f"reading back {name}={settings.format_value(value)}"
        out[name] = {"requested": value, "applied": applied[name], "observed": setting.readback(value)}
        if name in rec.during:
            out[name]["during"] = rec.during[name].to_json()
    return out


def _paired_read_back(rec: PairedRecorder, stage: _Stage, arm: str = "B") -> dict[str, Any]:
    """Each switched setting as ``arm`` (B: the cell; C: the control it carries) asked, first observed, observed
    after the run (the process switched back to ``arm`` for it) and during that arm's timed iterations: that
    arm's readback, as an unpaired worker's."""
    if rec.pair.is_control or not rec.values:
        return {}
    if rec.arm != arm:
        stage.now = f"switching to arm {arm} to read it back"
        rec.switch_to(arm)
    out = {}
    for name, setting, value in settings.ordered(rec.values[arm]):
        stage.now = f"reading back {name}={settings.format_value(value)}"
        observed = setting.readback(value)
        if setting.held_by_calls:  # counted from its last switch on: every span of the arm, summed
            observed = rec.held_calls(arm, name, observed)
        out[name] = {"requested": value, "applied": rec.applied[arm].get(name), "observed": observed}
        if name in rec.watches[arm]:
            out[name]["during"] = rec.watches[arm][name].to_json()
    return out


def _pools() -> list[dict]:
    """The thread pools threadpoolctl sees now: which library, which API, how many threads."""
    from threadpoolctl import threadpool_info

    return [{k: p.get(k) for k in ("prefix", "user_api", "internal_api", "num_threads")} for p in threadpool_info()]


def _import_probing() -> None:
    """Import what a probe worker's profiling needs (torch.profiler, which imports torch._dynamo: thousands of files)
    before the user's code: a thread its import starts that runs Python holds the GIL, and each of those imports'
    file reads lets the GIL go and waits up to 5 ms to take it back (beside a thread spinning in Python, the probe
    worker spent minutes importing them after the code). A workload without torch imports nothing here."""
    try:
        import torch.profiler  # noqa: F401
    except ImportError:
        pass


def run_job(job: dict) -> dict:
    """Execute ``job`` in this process; return the result document (never raises)."""
    result: dict[str, Any] = {
        "protocol": PROTOCOL,
        "status": "failed",
        "phases": {},
        "readback": {},
        "notes": {},
        "worker": {"pid": os.getpid(), "python": sys.executable},
    }
    started = time.perf_counter()
    rec = None
    stage = _Stage()
    control_readback: dict[str, Any] = {}
    try:
        if job.get("probe"):
            _import_probing()
        workload = workloads.get(job["workload"])
        args = workload.resolve_args(job["args"])
        pair = Pair.from_json(job["pair"]) if job.get("pair") is not None else None
        # A paired worker starts as the baseline cell's would; the pair's settings are switched, not applied.
        plan = [(n, s, v) for n, s, v in settings.ordered(job["settings"]) if pair is None or n not in pair.names]
        applied = _apply_settings(plan, stage, pair)
        stage.now = "opening counters"
        group, result["counters_info"] = open_counter_group()
        rec = (CountedRecorder(group, probe=bool(job.get("probe")), plan=plan, probe_limit_s=job.get("probe_limit_s"))
               if pair is None
               else PairedRecorder(group, pair, plan=plan, carry_control=bool(job.get("carry_control")),
                                   rotation=int(job.get("rotation") or 0)))
        stage.now = f"running workload {workload.name!r}"
        beside = BusySampler()  # what else ran on the machine while the workload did
        try:
            workload.fn(args, rec)
            rec.finish()
        finally:
            result["beside"] = beside.finish()
            if group is not None:
                group.close()
        result["readback"] = _read_back(plan, applied, rec, stage)
        unswitched = dict(result["readback"])
        if isinstance(rec, PairedRecorder):
            result["readback"].update(_paired_read_back(rec, stage))
            if CONTROL_LETTER in rec.arms:
                control_readback = {**unswitched, **_paired_read_back(rec, stage, CONTROL_LETTER)}
        if rec.probe:
            stage.now = "listing the thread pools"
            rec.note("pools", _pools())
        result["status"] = "ok"
    except BaseException as e:  # the result must say what happened, whatever it was
        result["error"] = f"{type(e).__name__} while {stage.now}: {e}"
        if isinstance(e, SystemExit):  # "SystemExit ...: 0" alone reads as a number, not as what the code did
            result["error"] += (f" (the code called sys.exit({e.code!r}) or raised SystemExit, which ends the "
                                "process its calls are timed in: leave it out of the timed code)")
        result["traceback"] = traceback.format_exc()[-_TRACEBACK_CHARS:]
        traceback.print_exc(file=sys.stderr)
    finally:
        if rec is not None:
            result["phases"] = _phases(rec)
            result["notes"] = rec.notes
            if isinstance(rec, PairedRecorder):
                phases = result["phases"]
                result["phases"], result["pair"] = rec.split(phases)
                control = rec.split_control(phases, result["pair"])
                if control is not None and result["status"] == "ok":
                    result["control"] = {"phases": control[0], "pair": control[1], "readback": control_readback}
        result["worker"]["wall_s"] = time.perf_counter() - started
    return result


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where prctl is unavailable.

    The runner kills its workers when it stops cleanly; this covers SIGKILL of
    the runner, which leaves it no chance to. Linux sends the signal when the
    *thread* that started the worker exits; run_worker waits in that thread. A
    forked worker's parent is its fork server, which dies with the runner the same way.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m benchctl._run.worker JOB.json (started by benchctl's runner)", file=sys.stderr)
        return 2
    die_with_parent()
    with open(argv[0]) as f:
        job = json.load(f)
    if job.get("protocol") != PROTOCOL:
        print(f"benchctl.worker: job protocol {job.get('protocol')!r}, this worker speaks {PROTOCOL}",
              file=sys.stderr)
        return 2
    if job.get("runner_pid") is not None and os.getppid() != job["runner_pid"]:
        # The runner died before die_with_parent() took effect: nobody wants this result.
        print("benchctl.worker: the runner that started this worker is gone", file=sys.stderr)
        return 2
    result = run_job(job)
    atomic_write_text(job["result_path"], dumps(result))
    # Written: the interpreter's teardown would now run the code's own finalisers, no part of what was measured,
    # and one can crash there (torch's profiler started at import and never stopped ends in SIGSEGV at exit),
    # which would fail a finished worker. A forked worker ends this way too (forkserver._child).
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0 if result["status"] == "ok" else 1)


if __name__ == "__main__":
    sys.exit(main())
