"""Run a workload over a settings matrix, each repetition of each cell in a fresh worker.

:func:`run_matrix` validates the whole matrix first (unknown settings, bad
values, an allocator that is not installed: all raise before any worker
starts), then runs the cells in interleaved order (:mod:`.schedule`), one
worker process each (:mod:`.process`), and rewrites the results file
atomically after every worker (:mod:`benchctl.results.document`). A worker
that crashes, is killed or times out is recorded as failed and the run goes
on. ``resume=True`` continues a file left by an interrupted run: only the
(cell, repetition) pairs without a successful run are started.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from .. import _validate, clock, settings, workloads
from .._version import __version__
from ..results import document
from ..results.analysis import analyse
from ..system import metadata
from . import schedule
from .process import now, run_worker

__all__ = ["run_matrix"]


@dataclass(frozen=True)
class _MatrixPlan:
    """A matrix checked against its workload: each cell's arguments and worker environment."""

    workload: workloads.Workload
    args: dict[str, Any]           # the fixed arguments, defaults filled in
    matrix: dict[str, list]        # canonical values
    cells: list[dict]
    cell_args: list[dict]
    environments: list[dict[str, str]]


def _plan_matrix(workload: str, args: dict | None, matrix: dict[str, list] | None) -> _MatrixPlan:
    """Validate everything a run needs before its first worker starts: nothing half-runs on bad input."""
    wl = workloads.get(workload)
    given = {k: settings.canonical_value(k, v, wl.params) for k, v in (args or {}).items()}
    for key in given:
        if settings.is_setting(key):
            raise settings.SettingError(f"{key!r} is a setting: put it in the matrix, not in args")
    fixed = wl.resolve_args(given)
    matrix = settings.canonical_matrix(matrix or {}, wl.params)
    settings.check_available(matrix)
    cells = document.matrix_cells(matrix)
    cell_args, environments = [], []
    for cell in cells:
        _, params = settings.split_cell(cell)
        resolved = wl.resolve_args({**fixed, **params})
        wl.check_args(resolved)  # a bad value (order=foo) fails here, not in every worker
        cell_args.append(resolved)
        environments.append(settings.cell_environment(cell, dict(os.environ)))
    return _MatrixPlan(wl, fixed, matrix, cells, cell_args, environments)


def _metadata(repeat: int, shuffle_seed: int | None, worker_timeout_s: float | None) -> dict:
    return {
        "benchctl_version": __version__,
        "created": now(),
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "command": list(sys.argv),
        "clock": clock.info(),
        "runner": {"repeat": repeat, "shuffle_seed": shuffle_seed, "worker_timeout_s": worker_timeout_s},
        "system": metadata.collect(),
    }


def _check_resumable(doc: dict, plan: _MatrixPlan, path: str) -> None:
    differs = [name for name, old, new in (("workload", doc["workload"], plan.workload.name),
                                            ("args", doc["args"], plan.args), ("matrix", doc["matrix"], plan.matrix))
               if old != new]
    if differs:
        raise document.ResultsError(
            f"{path}: cannot resume: its {', '.join(differs)} differ from this run's "
            f"(file: workload={doc['workload']!r} args={doc['args']} matrix={doc['matrix']}); "
            f"resume with the same workload, arguments and matrix, or write a new file"
        )


def _resumed_shuffle_seed(doc: dict, requested: int | None, path: str) -> int | None:
    """The seed the file was started with: a resumed run keeps its original order."""
    stored = doc["metadata"].get("runner", {}).get("shuffle_seed")
    if requested is not None and requested != stored:
        raise document.ResultsError(
            f"{path}: cannot resume with shuffle seed {requested}: the file was started with {stored}; "
            f"resume without a seed (the file's is reused)"
        )
    return stored


class _Log:
    """The results document of a run, its file, and which (cell, repetition) pairs are done."""

    def __init__(self, doc: dict, path: str | None) -> None:
        self.doc, self.path = doc, path
        self._index = {(document.cell_id(r["cell"]), r["repetition"]): i for i, r in enumerate(doc["runs"])}

    def done(self, cell: dict, repetition: int) -> bool:
        i = self._index.get((document.cell_id(cell), repetition))
        return i is not None and self.doc["runs"][i]["status"] == "ok"

    def save(self) -> None:
        if self.path is not None:
            document.save(self.doc, self.path)

    def add(self, record: dict) -> None:
        """Keep one finished worker's record (a failed attempt is replaced by its rerun), saved at once."""
        key = (document.cell_id(record["cell"]), record["repetition"])
        if key in self._index:
            self.doc["runs"][self._index[key]] = record
        else:
            self._index[key] = len(self.doc["runs"])
            self.doc["runs"].append(record)
        self.save()  # before the (slow) analysis: Ctrl-C there loses nothing
        analyse(self.doc, with_verdict=False)  # the verdict compares all cells: once, at the end
        self.save()


def _open_log(plan: _MatrixPlan, repeat: int, json_path: str | None, resume: bool, shuffle_seed: int | None,
              worker_timeout_s: float | None) -> tuple[_Log, int, int | None]:
    """The run's log (new, or the file to resume), with the repeat count and shuffle seed it keeps."""
    if not resume:
        doc = document.new_document(plan.workload.name, plan.args, plan.matrix, repeat,
                                    _metadata(repeat, shuffle_seed, worker_timeout_s))
        return _Log(doc, json_path), repeat, shuffle_seed
    if json_path is None:
        raise _validate.ArgumentError("resume needs json_path: the file to continue")
    doc = document.load(json_path)
    _check_resumable(doc, plan, json_path)
    shuffle_seed = _resumed_shuffle_seed(doc, shuffle_seed, json_path)
    # The file's repetitions are owed even when the caller asks for fewer (CLI default 1).
    repeat = max(doc.get("repeat", 1), repeat)
    doc["repeat"] = repeat
    doc["metadata"].setdefault("resumed", []).append(now())
    return _Log(doc, json_path), repeat, shuffle_seed


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
    key whose contrast the verdict explains (see :func:`benchctl.results.verdict.findings`).
    """
    plan = _plan_matrix(workload, args, matrix)
    if focus is not None and focus not in plan.matrix:
        raise _validate.ArgumentError(f"focus {focus!r} is not a matrix key "
                                      f"({', '.join(plan.matrix) or 'empty matrix'})")
    schedule.interleaved(len(plan.cells), repeat, shuffle_seed)  # validates repeat before any file is read
    if worker_timeout_s is not None:
        worker_timeout_s = _validate.seconds("worker_timeout_s", worker_timeout_s)
    log, repeat, shuffle_seed = _open_log(plan, repeat, json_path, resume, shuffle_seed, worker_timeout_s)
    order = schedule.interleaved(len(plan.cells), repeat, shuffle_seed)
    todo = [(c, r) for c, r in order if not log.done(plan.cells[c], r)]
    log.save()  # a bad path fails now, not after the first cell

    with tempfile.TemporaryDirectory(prefix="benchctl-run-") as workdir, \
            _progress_bar(len(order), len(order) - len(todo), progress) as bar:
        for c, repetition in todo:
            cell = plan.cells[c]
            bar.set_postfix_str(f"{settings.cell_label(cell)} #{repetition + 1}", refresh=True)
            record = run_worker(plan.workload.name, plan.cell_args[c], cell, plan.environments[c], workdir,
                                worker_timeout_s)
            log.add({"cell": cell, "repetition": repetition, **record})
            bar.update(1)
    analyse(log.doc, focus)
    log.save()
    return log.doc
