"""Run a workload over a settings matrix, each repetition of each cell in a fresh worker.

:func:`run_matrix` validates the whole matrix first (unknown settings, bad
values, an allocator that is not installed: all raise before any worker
starts), then runs the cells in interleaved order (:mod:`benchctl.schedule`),
one ``python -m benchctl.worker`` process each, and rewrites the results file
atomically after every worker (:mod:`benchctl.results`). A worker that
crashes, is killed or times out is recorded as failed with its exit status and
the tail of its stderr, and the run goes on. ``resume=True`` continues a file
left by an interrupted run: only the (cell, repetition) pairs without a
successful run are started.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from . import results, schedule, settings, workloads
from . import summary as _summary

STDERR_TAIL_CHARS = 4000


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _metadata(repeat: int, shuffle_seed: int | None, worker_timeout_s: float | None) -> dict:
    from . import __version__, clock

    meta: dict[str, Any] = {
        "benchctl_version": __version__,
        "created": _now(),
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "command": list(sys.argv),
        "clock": clock.info(),
        "runner": {"repeat": repeat, "shuffle_seed": shuffle_seed, "worker_timeout_s": worker_timeout_s},
    }
    try:
        from . import metadata
    except ImportError as e:
        meta["system"] = {"error": f"benchctl.metadata is not available: {e}"}
    else:
        meta["system"] = metadata.collect()
    return meta


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


def _phase_records(phases: dict) -> dict:
    for data in phases.values():
        data["warmup"] = _summary.detect_warmup(data["ns"])
    return phases


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group: its children (DataLoader workers) too."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is already gone
        pass


def run_worker(workload: str, args: dict, cell: dict, env: dict[str, str], workdir: str,
               timeout_s: float | None = None) -> dict:
    """Run one cell in a fresh worker process; return its run record (status ok or failed)."""
    cell_settings, _ = settings.split_cell(cell)
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    job_path = os.path.join(workdir, f"job-{tag}.json")
    result_path = os.path.join(workdir, f"result-{tag}.json")
    stderr_path = os.path.join(workdir, f"stderr-{tag}.txt")
    stdout_path = os.path.join(workdir, f"stdout-{tag}.txt")
    job = {"protocol": 1, "workload": workload, "args": args, "settings": cell_settings,
           "result_path": result_path, "runner_pid": os.getpid()}
    with open(job_path, "w") as f:
        json.dump(job, f)
    record: dict[str, Any] = {"started_at": _now()}
    started = time.perf_counter()
    timed_out = False
    # Output goes to files, not pipes: a chatty worker can never block on a full pipe.
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        # Its own session (and process group, id = its pid): the worker and everything it
        # starts can be killed as one, and a terminal's Ctrl-C reaches the runner only.
        proc = subprocess.Popen([sys.executable, "-m", "benchctl.worker", job_path], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        try:
            status = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            status = proc.wait()
        except BaseException:  # Ctrl-C of the runner: no orphan worker left behind
            _kill_group(proc)
            proc.wait()
            raise
        _kill_group(proc)  # children the worker left running would disturb the next cell
    record["duration_s"] = time.perf_counter() - started
    try:
        with open(result_path) as f:
            worker_result = json.load(f)
    except (OSError, ValueError):  # killed before writing: the exit status tells the story
        worker_result = None
    record.update(
        status="ok" if status == 0 and worker_result and worker_result.get("status") == "ok" else "failed",
        exit_status=status,
        signal=_signal_name(status),
        phases=_phase_records((worker_result or {}).get("phases", {})),
        readback=(worker_result or {}).get("readback", {}),
        notes=(worker_result or {}).get("notes", {}),
        counters_info=(worker_result or {}).get("counters_info"),
        worker=(worker_result or {}).get("worker", {"pid": proc.pid}),
        error=(worker_result or {}).get("error"),
        stderr_tail=None,
        stdout_tail=None,
    )
    if record["status"] == "failed":
        record["stderr_tail"] = _tail(stderr_path)
        record["stdout_tail"] = _tail(stdout_path)
        if record["error"] is None:
            if timed_out:
                record["error"] = f"worker exceeded the {timeout_s} s timeout and was killed"
            elif record["signal"]:
                record["error"] = f"worker killed by {record['signal']}"
            elif worker_result is None:
                record["error"] = f"worker exited with status {status} without writing a result"
            else:
                record["error"] = f"worker exited with status {status}"
    for path in (job_path, result_path, stderr_path, stdout_path):
        try:
            os.unlink(path)
        except OSError:
            pass
    return record


def _check_resumable(doc: dict, workload: str, args: dict, matrix: dict, path: str) -> None:
    differs = [name for name, old, new in (("workload", doc["workload"], workload), ("args", doc["args"], args),
                                            ("matrix", doc["matrix"], matrix)) if old != new]
    if differs:
        raise results.ResultsError(
            f"{path}: cannot resume: its {', '.join(differs)} differ from this run's "
            f"(file: workload={doc['workload']!r} args={doc['args']} matrix={doc['matrix']}); "
            f"resume with the same workload, arguments and matrix, or write a new file"
        )


def _resumed_shuffle_seed(doc: dict, requested: int | None, path: str) -> int | None:
    """The seed the file was started with: a resumed run keeps its original order."""
    stored = doc["metadata"].get("runner", {}).get("shuffle_seed")
    if requested is not None and requested != stored:
        raise results.ResultsError(
            f"{path}: cannot resume with shuffle seed {requested}: the file was started with {stored}; "
            f"resume without a seed (the file's is reused)"
        )
    return stored


def analyse(doc: dict, focus: str | None = None, with_verdict: bool = True) -> dict:
    """Fill ``doc['summary']`` (and ``doc['verdict']``) from its runs, in place; returns doc.

    Both need :mod:`benchctl.stats`. When the analysis cannot be done (stats
    missing, samples it rejects) the measurements still stand: summary and
    verdict stay empty and ``metadata['analysis_error']`` says why.
    """
    try:
        doc["summary"] = _summary.summarize(doc)
        if with_verdict:
            from . import verdict

            doc["verdict"] = verdict.findings(doc, focus=focus)
    except ImportError as e:
        doc["summary"], doc["verdict"] = [], []
        doc["metadata"]["analysis_error"] = f"summary and verdict need benchctl.stats: {e}"
    except ValueError as e:
        doc["summary"], doc["verdict"] = [], []
        doc["metadata"]["analysis_error"] = f"summary or verdict failed: {e}"
    else:
        doc["metadata"].pop("analysis_error", None)
    return doc


def _progress_bar(total: int, done: int, enabled: bool):
    from tqdm import tqdm

    # Progress is for a person watching: stderr only, and never into a log or pipe.
    return tqdm(total=total, initial=done, unit="cell", file=sys.stderr, dynamic_ncols=True,
                disable=not (enabled and sys.stderr.isatty()))


def run_matrix(workload: str, args: dict | None = None, matrix: dict[str, list] | None = None, repeat: int = 1,
               json_path: str | None = None, resume: bool = False, shuffle_seed: int | None = None,
               progress: bool = True, worker_timeout_s: float | None = None,
               focus: str | None = None) -> dict:
    """Run ``workload`` for every cell of ``matrix``, ``repeat`` times each; return the results document.

    ``matrix`` maps setting names (``ftz``, ``threads``, ``pin``, ``alloc``,
    ``env``) or workload parameter names to lists of values; a parameter in
    the matrix overrides ``args`` per cell. With ``json_path`` the document is
    written atomically after every finished worker. ``focus`` names the matrix
    key whose contrast the verdict explains (see :func:`benchctl.verdict.findings`).
    """
    wl = workloads.get(workload)
    given_args = {k: settings.canonical_value(k, v, wl.params) for k, v in (args or {}).items()}
    for key in given_args:
        if settings.is_setting(key):
            raise settings.SettingError(f"{key!r} is a setting: put it in the matrix, not in args")
    fixed_args = wl.resolve_args(given_args)
    matrix = settings.canonical_matrix(matrix or {}, wl.params)
    if focus is not None and focus not in matrix:
        raise ValueError(f"focus {focus!r} is not a matrix key ({', '.join(matrix) or 'empty matrix'})")
    settings.check_available(matrix)
    cells = schedule.expand(matrix)
    # Everything is checked before the first worker starts: nothing half-run on bad input.
    plans = []
    for cell in cells:
        _, params = settings.split_cell(cell)
        cell_args = wl.resolve_args({**fixed_args, **params})
        wl.check_args(cell_args)  # a bad value (order=foo) fails here, not in every worker
        plans.append((cell_args, settings.cell_environment(cell, dict(os.environ))))
    schedule.interleaved(len(cells), repeat, shuffle_seed)  # validates repeat before any file is read
    if worker_timeout_s is not None and not (isinstance(worker_timeout_s, (int, float)) and worker_timeout_s > 0):
        raise ValueError(f"worker_timeout_s must be a positive number of seconds, got {worker_timeout_s!r}")

    if resume:
        if json_path is None:
            raise ValueError("resume needs json_path: the file to continue")
        doc = results.load(json_path)
        _check_resumable(doc, workload, fixed_args, matrix, json_path)
        shuffle_seed = _resumed_shuffle_seed(doc, shuffle_seed, json_path)
        # The file's repetitions are owed even when the caller asks for fewer (CLI default 1).
        repeat = max(doc.get("repeat", 1), repeat)
        doc["repeat"] = repeat
        doc["metadata"].setdefault("resumed", []).append(_now())
    else:
        doc = results.new_document(workload, fixed_args, matrix, repeat,
                                   _metadata(repeat, shuffle_seed, worker_timeout_s))
    order = schedule.interleaved(len(cells), repeat, shuffle_seed)
    index = {(results.cell_id(r["cell"]), r["repetition"]): i for i, r in enumerate(doc["runs"])}
    done = {key for key, i in index.items() if doc["runs"][i]["status"] == "ok"}
    todo = [(c, r) for c, r in order if (results.cell_id(cells[c]), r) not in done]
    if json_path is not None:
        results.save(doc, json_path)  # a bad path fails now, not after the first cell

    with tempfile.TemporaryDirectory(prefix="benchctl-run-") as workdir, \
            _progress_bar(len(order), len(order) - len(todo), progress) as bar:
        for c, repetition in todo:
            cell = cells[c]
            bar.set_postfix_str(f"{settings.cell_label(cell)} #{repetition + 1}", refresh=True)
            cell_args, env = plans[c]
            record = run_worker(workload, cell_args, cell, env, workdir, worker_timeout_s)
            record = {"cell": cell, "repetition": repetition, **record}
            key = (results.cell_id(cell), repetition)
            if key in index:
                doc["runs"][index[key]] = record  # a failed attempt is replaced by its rerun
            else:
                index[key] = len(doc["runs"])
                doc["runs"].append(record)
            if json_path is not None:
                results.save(doc, json_path)  # before the (slow) analysis: Ctrl-C there loses nothing
            analyse(doc, with_verdict=False)  # the verdict compares all cells: once, at the end
            if json_path is not None:
                results.save(doc, json_path)
            bar.update(1)
    analyse(doc, focus)
    if json_path is not None:
        results.save(doc, json_path)
    return doc


def failed_runs(doc: dict) -> list[dict]:
    return [r for r in doc["runs"] if r["status"] == "failed"]
