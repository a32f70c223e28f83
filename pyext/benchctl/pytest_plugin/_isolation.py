"""``isolate=True``: a test's calls measured in fresh worker processes, ``repeat`` of them.

The parent session does not run the test's body. It runs the workload
``pytest_node`` (:mod:`benchctl._workloads.pytest_node`) through
:func:`benchctl.run_matrix`: each repetition is a fresh ``python -m
benchctl._run.worker`` process that starts with the marker's settings (the
``alloc`` and ``env`` ones included, through the runner's cell environment)
and runs that one test with pytest, with the same rootdir, ini file and
benchctl options. There the fixture records its rounds into the worker's
recorder. Back here each worker's rounds are turned into per-call times, and
the test's statistics are taken across processes (:meth:`.stats.Stats.from_processes`).
A test that fails in any worker fails here with that worker's report; one
skipped in every worker is skipped here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._run import run_matrix
from ._markers import Spec
from ._options import Options
from ._stats import Stats

__all__ = ["WORKLOAD", "FORWARDED_OPTIONS", "Isolated", "run_isolated", "per_call_run"]

WORKLOAD = "pytest_node"
#: pytest options of the parent's command line that the worker's session needs to collect the
#: test the same way (plugins, ini overrides, import mode, conftest handling).
FORWARDED_OPTIONS = ("-p", "-o", "--override-ini", "--import-mode", "--confcutdir", "--noconftest")
_FLAGS_WITHOUT_VALUE = ("--noconftest",)


@dataclass
class Isolated:
    """What the workers of one isolated test came to."""

    runs: list = field(default_factory=list)      # run records, per-call times
    stats: Stats | None = None
    failure: str | None = None
    skipped: str | None = None


def _forwarded(args) -> list[str]:
    """The parent's :data:`FORWARDED_OPTIONS` with their values, in order."""
    out, take_next = [], False
    for arg in map(str, args):
        if take_next:
            out.append(arg)
            take_next = False
            continue
        for opt in FORWARDED_OPTIONS:
            if arg == opt:
                out.append(arg)
                take_next = opt not in _FLAGS_WITHOUT_VALUE
                break
            if arg.startswith(opt + "=") or (opt in ("-p", "-o") and arg.startswith(opt) and len(arg) > 2):
                out.append(arg)
                break
    return out


def per_call_run(run: dict, nodeid: str) -> dict:
    """A worker's run record with the cell replaced by ``{"test": nodeid}`` (the settings stay in its
    readback) and each phase's round times divided into per-call times."""
    out = dict(run, cell={"test": nodeid}, settings=run["cell"])
    calls = (run.get("notes") or {}).get("calls_per_round", {})
    phases = {}
    for phase, data in run["phases"].items():
        k = int(calls.get(phase, 1))
        phases[phase] = dict(data, ns=[v / k for v in data["ns"]], calls_per_round=k,
                             counters={ev: [None if v is None else v / k for v in values]
                                       for ev, values in (data.get("counters") or {}).items()})
    out["phases"] = phases
    return out


def _failure_text(runs: list[dict]) -> str | None:
    failed = [(i, r) for i, r in enumerate(runs) if r["status"] != "ok"]
    if not failed:
        return None
    i, run = failed[0]
    text = run.get("error") or "the worker failed"
    # The worker names the stage; for a test that failed there, pytest's own report says it all.
    text = text.removeprefix(f"RuntimeError while running workload {WORKLOAD!r}: ")
    tail = (run.get("stderr_tail") or "").strip()
    if tail and "pytest" not in text:
        text += "\nworker stderr (end):\n" + tail
    return f"isolated run {i + 1} of {len(runs)} failed ({len(failed)} failed in all): {text}"


def run_isolated(item, spec: Spec, options: Options, phase: str) -> Isolated:
    """Run ``item`` in ``spec.repeat`` fresh workers with ``spec.settings``; gather what they measured."""
    config = item.config
    args = {"nodeid": item.nodeid, "path": str(item.path), "rootdir": str(config.rootpath),
            "invocation_dir": str(config.invocation_params.dir),
            "inifile": str(config.inipath) if config.inipath else "",
            "options": options.worker_args() + _forwarded(config.invocation_params.args)}
    matrix = {name: [value] for name, value in spec.settings.items()}
    # No A/A control arm: it would double the workers of every isolated test.
    doc = run_matrix(WORKLOAD, args=args, matrix=matrix, repeat=spec.repeat, progress=False,
                     worker_timeout_s=options.worker_timeout_s, control=False)
    result = Isolated(runs=[per_call_run(r, item.nodeid) for r in doc["runs"]])
    result.failure = _failure_text(doc["runs"])
    if result.failure:
        return result
    outcomes = [(r.get("notes") or {}).get("pytest_outcome", {}) for r in result.runs]
    if all(o.get("outcome") == "skipped" for o in outcomes):
        result.skipped = outcomes[0].get("reason") or "skipped in the worker"
        return result
    series = [(r["phases"][phase]["ns"], r["phases"][phase]["calls_per_round"], r["phases"][phase].get("warmup"))
              for r in result.runs if r["phases"].get(phase, {}).get("ns")]
    if series:
        result.stats = Stats.from_processes(series)
    return result

