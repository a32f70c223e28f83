"""Launching one worker process: start it on a job file, wait for it, and turn what it left into a run record.

The worker runs :mod:`.worker`'s ``main`` on ``JOB.json`` in a fresh interpreter with the cell's
environment, or is forked on the job by a server started with that environment
(:mod:`.forkserver`); either way it runs in its own session (so it and every process it starts, such as
DataLoader workers, are killed as one group), with output going to files
(a chatty worker can never block on a full pipe). A worker that crashes, is
killed or times out still gives a record: ``status: failed`` with its exit
status, the signal, an error sentence and the tail of its stderr.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .. import settings
from ..errors import ExitCode
from .._results import stats
from . import worker
from .forkserver import ForkServer, ForkServerError, python_main
from .paired import Pair

__all__ = ["STDERR_TAIL_CHARS", "now", "run_worker"]

STDERR_TAIL_CHARS = 4000


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class _Files:
    """The files one worker reads and writes in the runner's scratch directory."""

    job: str
    result: str
    stdout: str
    stderr: str

    @classmethod
    def in_dir(cls, workdir: str) -> "_Files":
        tag = f"{os.getpid()}-{time.monotonic_ns()}"
        return cls(*(os.path.join(workdir, f"{kind}-{tag}.{ext}") for kind, ext in
                     (("job", "json"), ("result", "json"), ("stdout", "txt"), ("stderr", "txt"))))

    def remove(self) -> None:
        for path in (self.job, self.result, self.stdout, self.stderr):
            try:
                os.unlink(path)
            except OSError:
                pass


def _tail(path: str, limit: int = STDERR_TAIL_CHARS) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _signal_name(status: int | None) -> str | None:
    if status is None or status >= 0:
        return None
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


def _kill_group(pid: int) -> None:
    """SIGKILL the worker's whole process group (id = its pid): its children (DataLoader workers) too."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is already gone
        pass


def _wait(files: _Files, env: dict[str, str], timeout_s: float | None) -> tuple[int, bool, int]:
    """Start the worker on ``files.job`` and wait: (exit status, timed out, pid)."""
    with open(files.stdout, "wb") as out, open(files.stderr, "wb") as err:
        # Its own session (and process group, id = its pid): the worker and everything it
        # starts can be killed as one, and a terminal's Ctrl-C reaches the runner only.
        proc = subprocess.Popen(python_main(worker.__name__, files.job), env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        timed_out = False
        try:
            status = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            status = proc.wait()
        except BaseException:  # Ctrl-C of the runner: no orphan worker left behind
            _kill_group(proc.pid)
            proc.wait()
            raise
        _kill_group(proc.pid)  # children the worker left running would disturb the next cell
    return status, timed_out, proc.pid


def _wait_forked(files: _Files, server: ForkServer, timeout_s: float | None) -> tuple[int, bool, int]:
    """:func:`_wait` for a worker forked by ``server`` (in its own session, as an exec'd one)."""
    pid = server.start(files.job, files.stdout, files.stderr)
    timed_out = False
    try:
        status = server.wait(timeout_s)
        if status is None:
            timed_out = True
            _kill_group(pid)
            status = server.wait(None)
    except BaseException:  # Ctrl-C, or the server died: no orphan worker left behind
        _kill_group(pid)
        raise
    _kill_group(pid)
    return status, timed_out, pid


def _read_result(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):  # killed before writing: the exit status tells the story
        return None


def _with_warmup(phases: dict) -> dict:
    """Each phase's warm-up length, detected once when the run is recorded."""
    for data in phases.values():
        data["warmup"] = int(stats.detect_warmup(data["ns"])) if data["ns"] else 0
    return phases


def _failure_sentence(status: int, timed_out: bool, timeout_s: float | None, wrote_result: bool) -> str:
    if timed_out:
        return f"worker exceeded the {round(timeout_s, 1)} s timeout and was killed"
    if _signal_name(status):
        return f"worker killed by {_signal_name(status)}"
    if not wrote_result:
        return f"worker exited with status {status} without writing a result"
    return f"worker exited with status {status}"


def _pair_with_warmup(pair: dict) -> dict:
    return {**pair, "phases": _with_warmup(pair.get("phases", {}))}


def _record(result: dict | None, status: int, pid: int | None) -> dict[str, Any]:
    got = result or {}
    ok = status == 0 and got.get("status") == "ok"
    return {
        "status": "ok" if ok else "failed",
        "exit_status": status,
        "signal": _signal_name(status),
        "phases": _with_warmup(got.get("phases", {})),
        **({"pair": _pair_with_warmup(got["pair"])} if got.get("pair") else {}),
        **({"control": {**got["control"], "phases": _with_warmup(got["control"].get("phases", {})),
                        "pair": _pair_with_warmup(got["control"]["pair"])}} if got.get("control") else {}),
        "readback": got.get("readback", {}),
        "notes": got.get("notes", {}),
        "counters_info": got.get("counters_info"),
        "beside": got.get("beside"),
        "worker": got.get("worker", {"pid": pid}),
        "error": got.get("error"),
        "traceback": got.get("traceback"),
        "stderr_tail": None,
        "stdout_tail": None,
    }


def run_worker(workload: str, args: dict, cell: dict, env: dict[str, str], workdir: str,
               timeout_s: float | None = None, probe: bool = False, server: ForkServer | None = None,
               pair: Pair | None = None, starts_as: dict | None = None, carry_control: bool = False,
               rotation: int = 0, probe_limit_s: float | None = None) -> dict:
    """Run one cell in a fresh worker process; return its run record (status ok or failed).

    ``probe``: the worker's recorder says so, for workloads that then measure
    more about themselves (see :mod:`benchctl._workloads.user`); ``probe_limit_s``: such a worker stops once its
    timed calls took this long (:class:`~benchctl._run.recorder.Recorder`). ``server``: fork
    the worker from this server (started with ``env``) instead of starting an
    interpreter (see :mod:`.forkserver`); a server that dies fails the worker.
    ``pair``: time the cell paired with the baseline (:mod:`.paired`): the worker applies the settings of
    ``starts_as`` (the baseline cell, whose environment ``env`` is) and switches ``pair``'s; ``carry_control``:
    it also times the paired A/A control as a third arm, returned under the record's ``control`` (its phases,
    ``pair`` record and readback) for the runner to keep as the control's run; ``rotation``: the arm its
    schedule starts with (the repetition: :func:`.paired.rotated`).
    """
    if carry_control and pair is None:
        raise ValueError("carry_control needs a pair: the control is an arm of a paired worker")
    cell_settings, _ = settings.split_cell(cell if starts_as is None else starts_as)
    files = _Files.in_dir(workdir)
    job = {"protocol": worker.PROTOCOL, "workload": workload, "args": args, "settings": cell_settings,
           "result_path": files.result, "runner_pid": os.getpid() if server is None else server.pid,
           "probe": probe, **({"probe_limit_s": probe_limit_s} if probe and probe_limit_s else {}),
           **({"pair": pair.to_json()} if pair is not None else {}),
           **({"carry_control": True} if carry_control else {}),
           **({"rotation": rotation} if pair is not None else {})}
    with open(files.job, "w") as f:
        json.dump(job, f)
    started_at, started = now(), time.perf_counter()
    forked = {} if server is None else {"fork_server_pid": server.pid}
    if server is not None and server.workers == 0:  # the server started for this worker: the budget counts it
        forked["fork_server_start_s"] = server.start_s
    try:
        try:
            status, timed_out, pid = (_wait(files, env, timeout_s) if server is None
                                      else _wait_forked(files, server, timeout_s))
        except ForkServerError as e:
            return {"started_at": started_at, "duration_s": time.perf_counter() - started,
                    **_record(None, int(ExitCode.INTERNAL_ERROR), None), "error": str(e), "forked": True, **forked}
        result = _read_result(files.result)
        record = {"started_at": started_at, "duration_s": time.perf_counter() - started,
                  **_record(result, status, pid), "forked": server is not None, **forked}
        if record["status"] == "failed":
            record["stderr_tail"] = _tail(files.stderr)
            record["stdout_tail"] = _tail(files.stdout)
            if record["error"] is None:
                record["error"] = _failure_sentence(status, timed_out, timeout_s, result is not None)
    finally:
        files.remove()
    return record
