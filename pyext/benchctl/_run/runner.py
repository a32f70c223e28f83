"""Run a workload over a settings matrix, each repetition of each cell in a fresh worker.

:func:`run_matrix` validates the whole matrix first (unknown settings, bad
values, an allocator that is not installed: all raise before any worker
starts), then runs it in rounds (:mod:`.rounds`): each round runs its cells
once, interleaved, one fresh worker process each (:mod:`.launch`; forked by
:mod:`.forkserver` for a workload that preloads torch, unless ``fork=False``), and the
results file is rewritten atomically after every worker
(:mod:`benchctl._results.document`). Unless ``control=False``, the baseline
cell also runs as a second arm of an A/A control, interleaved like every
other cell: the spread between the two arms is the run's own measured
process-to-process noise. A worker that crashes, is killed or times out is
recorded as failed and the run goes on. With ``paired=True`` a cell that differs from the baseline only
in settings a running process can switch is timed in workers that start as the baseline's and switch
between both (:mod:`.paired`), with a paired A/A control carried as a third arm by one paired worker a round
(:func:`.rounds.carry_control`). ``resume=True`` continues a file
left by an interrupted run: only the (cell, repetition) pairs without a
successful run are started.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any

from .. import _validate, clock, settings, _workloads as workloads
from .._workloads import described
from .._version import __version__
from .._cpustat import BusySampler, wait_for_quiet
from .._results import contention_gate as gate, document, rules
from .._results.analysis import Judge, analyse
from .._results.findings import Finding
from .._system import metadata
from . import rounds as _rounds
from .forkserver import ForkServerError, ForkServers
from .launch import now, run_worker
from .paired import Pair, carrier_args, pair_for

__all__ = ["MatrixPlan", "plan_matrix", "run_matrix"]


@dataclass(frozen=True)
class MatrixPlan:
    """A matrix checked against its workload: each cell's arguments and worker environment."""

    workload: workloads.Workload
    args: dict[str, Any]           # the fixed arguments, defaults filled in
    matrix: dict[str, list]        # canonical values
    cells: list[dict]
    cell_args: list[dict]
    environments: list[dict[str, str]]
    #: cell index -> how it is timed paired with the baseline (cell 0) in one process (:mod:`.paired`)
    pairs: dict[int, Pair] = field(default_factory=dict)

    @property
    def every_cell_paired(self) -> bool:
        """Every cell but the baseline is timed paired with it: a fresh-process A/A control would judge none."""
        return bool(self.pairs) and len(self.pairs) == len(self.cells) - 1


def plan_matrix(workload: str, args: dict | None, matrix: dict[str, list] | None, paired: bool = False) -> MatrixPlan:
    """Validate everything a run needs before its first worker starts: nothing half-runs on bad input.
    ``paired``: each cell that differs from the first only in settings a running process can switch is
    timed paired with it (:func:`.paired.pair_for`)."""
    wl = described.describe(workload)  # the user's code is imported by the workers only
    given = {k: settings.canonical_value(k, v, wl.params) for k, v in (args or {}).items()}
    for key in given:
        if settings.is_setting(key):
            raise settings.SettingError(f"{key!r} is a setting: put it in the matrix, not in args")
    fixed = wl.resolve_args(given)
    matrix = settings.canonical_matrix(matrix or {}, wl.params)
    _check_phases(wl, matrix)
    settings.check_available(matrix)
    cells = document.matrix_cells(matrix)
    cell_args, environments = [], []
    for cell in cells:
        _, params = settings.split_cell(cell)
        resolved = wl.resolve_args({**fixed, **params})
        wl.check_args(resolved)  # a bad value (order=foo) fails here, not in every worker
        cell_args.append(resolved)
        environments.append(settings.cell_environment(cell, dict(os.environ)))
    pairs = {i: p for i in range(1, len(cells)) if paired and (p := pair_for(cells[0], cells[i])) is not None}
    return MatrixPlan(wl, fixed, matrix, cells, cell_args, environments, pairs)


def _check_phases(wl: workloads.Workload, matrix: dict[str, list]) -> None:
    """``only=PHASE`` names a phase of ``wl``, where it says its phases (else a phase it lacks shows in the
    results as one that never ran)."""
    unknown = [phase for phase in matrix.get("only", []) if phase != "all" and phase not in wl.phases]
    if wl.phases and unknown:
        raise settings.SettingError(f"only={','.join(unknown)}: workload {wl.name!r} has no such phase; its phases: "
                                    f"{', '.join(wl.phases)} (or all)")


def _metadata(repeat: int | str, shuffle_seed: int | None, worker_timeout_s: float | None,
              budget_s: float | None, control: bool, focus: str | None, forked: bool) -> dict:
    return {
        "benchctl_version": __version__,
        "created": now(),
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "command": list(sys.argv),
        "clock": clock.info(),
        "runner": {"repeat": repeat, "shuffle_seed": shuffle_seed, "worker_timeout_s": worker_timeout_s,
                   "budget_s": budget_s, "control": control, "focus": focus, "forked": forked,
                   "gate": gate.described()},
        "system": metadata.collect(),
    }


def _check_resumable(doc: dict, plan: MatrixPlan, path: str) -> None:
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
    """The results document of a run, its file, and which (cell, arm, repetition) workers are done."""

    def __init__(self, doc: dict, path: str | None) -> None:
        self.doc, self.path = doc, path
        self._index = {self._key(r["cell"], r.get("arm"), r["repetition"]): i for i, r in enumerate(doc["runs"])}

    @staticmethod
    def _key(cell: dict, arm: str | None, repetition: int) -> tuple:
        return document.cell_id(cell), arm, repetition

    def done(self, cell: dict, arm: str | None, repetition: int) -> bool:
        i = self._index.get(self._key(cell, arm, repetition))
        return i is not None and self.doc["runs"][i]["status"] == "ok"

    def mean_duration(self, cell: dict | None, arm: str | None) -> float | None:
        """Mean wall seconds of the workers of ``cell`` (any arm; the control's arms cost the same), or of every
        worker with ``cell`` None; a fork server's start counts to the worker it was started for."""
        key = None if cell is None else document.cell_id(cell)
        spent = [r["duration_s"] + r.get("fork_server_start_s", 0.0) for r in self.doc["runs"]
                 if (key is None or document.cell_id(r["cell"]) == key) and "duration_s" in r]
        return sum(spent) / len(spent) if spent else None

    def save(self) -> None:
        if self.path is not None:
            document.save(self.doc, self.path)

    def set_aside(self, record: dict) -> None:
        """Keep a worker the contention gate set aside, out of the runs every comparison reads; saved at once."""
        self.doc.setdefault(gate.KEY, []).append(record)
        self.save()

    def add(self, *records: dict) -> None:
        """Keep one finished worker's records (a failed attempt is replaced by its rerun), saved at once."""
        for record in records:
            key = self._key(record["cell"], record.get("arm"), record["repetition"])
            if key in self._index:
                self.doc["runs"][self._index[key]] = record
            else:
                self._index[key] = len(self.doc["runs"])
                self.doc["runs"].append(record)
        self.save()  # before the (slow) analysis: Ctrl-C there loses nothing
        analyse(self.doc, with_verdict=False)  # the verdict compares all cells: at the end of a round
        self.save()


def _open_log(plan: MatrixPlan, repeat: int | str, json_path: str | None, resume: bool,
              shuffle_seed: int | None, worker_timeout_s: float | None, budget_s: float | None,
              control: bool, focus: str | None, forked: bool) -> tuple[_Log, int | str, int | None]:
    """The run's log (new, or the file to resume), with the repeat and shuffle seed it keeps."""
    if not resume:
        doc = document.new_document(plan.workload.name, plan.args, plan.matrix, repeat,
                                    _metadata(repeat, shuffle_seed, worker_timeout_s, budget_s, control, focus, forked),
                                    control_cell=plan.cells[0] if control else None)
        return _Log(doc, json_path), repeat, shuffle_seed
    if json_path is None:
        raise _validate.ArgumentError("resume needs json_path: the file to continue")
    doc = document.load(json_path)
    _check_resumable(doc, plan, json_path)
    shuffle_seed = _resumed_shuffle_seed(doc, shuffle_seed, json_path)
    stored = doc.get("repeat", 1)
    if stored == _rounds.AUTO or repeat == _rounds.AUTO:
        repeat = _rounds.AUTO  # an auto file goes on deciding; asking for auto turns a fixed one into it
    else:
        # The file's repetitions are owed even when the caller asks for fewer (CLI default 1).
        repeat = max(stored, repeat)
    doc["repeat"] = repeat
    doc.setdefault("rounds", [])
    doc["metadata"].setdefault("resumed", []).append(now())
    return _Log(doc, json_path), repeat, shuffle_seed


def _first_rounds(doc: dict, requested: int | None, path: str | None) -> int:
    """The rounds before ``--repeat auto`` first judges, kept in ``doc``: a resumed file's own (another asked for is
    refused), or ``requested`` (three where None) in a new one."""
    runner_meta = doc["metadata"].setdefault("runner", {})
    stored = runner_meta.get("first_rounds")
    if stored is None and doc["metadata"].get("resumed"):
        stored = _rounds.AUTO_START  # a file from before the choice: it began with three
    if requested is not None:
        requested = _rounds.check_first_rounds(requested)
    if stored is not None and requested is not None and requested != stored:
        raise document.ResultsError(f"{path}: cannot resume with {requested} first rounds: the file was started "
                                    f"with {stored}; resume without asking (the file's are kept)")
    first = stored if stored is not None else requested if requested is not None else _rounds.AUTO_START
    runner_meta["first_rounds"] = first
    return first


def _slots(plan: MatrixPlan, doc: dict) -> tuple[list[_rounds.Slot], list[_rounds.Slot]]:
    """(every slot of a round, the control's two slots) for ``doc``'s control, if it has one; with paired
    cells, the paired A/A control's slot last."""
    paired_control = [_rounds.Slot(0, document.PAIRED_ARM)] if plan.pairs else []
    if not doc.get("control"):
        return [_rounds.Slot(i) for i in range(len(plan.cells))] + paired_control, []
    control = [_rounds.Slot(0, "A"), _rounds.Slot(0, document.CONTROL_ARM)]
    return ([control[0]] + [_rounds.Slot(i) for i in range(1, len(plan.cells))] + [control[1]] + paired_control,
            control)


def _paired_plan(plan: MatrixPlan, doc: dict, resume: bool) -> MatrixPlan:
    """``plan`` with the pairs ``doc`` keeps: a new document records the plan's; a resumed one keeps its own
    (a cell run unpaired goes on unpaired), so one cell's processes are never of both kinds."""
    if not resume:
        if plan.pairs:
            doc["paired"] = {"baseline": plan.cells[0], "cells": [plan.cells[i] for i in sorted(plan.pairs)]}
        return plan
    kept = {document.cell_id(c) for c in (doc.get("paired") or {}).get("cells", [])}
    # Rebuilt from the file whatever this call asks (--unpaired included): its cells stay as they began.
    return replace(plan, pairs={i: p for i in range(1, len(plan.cells)) if document.cell_id(plan.cells[i]) in kept
                                and (p := pair_for(plan.cells[0], plan.cells[i])) is not None})


def _unresolved(plan: MatrixPlan, doc: dict, focus: str | None, judge: Judge | None) -> set[int]:
    """Indices of the cells whose comparisons the verdict leaves unresolved, judged now."""
    analyse(doc, focus, judge=judge)
    ids = {document.cell_id(c) for c in rules.open_cells(Finding.from_json(f) for f in doc["verdict"])}
    return {i for i, cell in enumerate(plan.cells) if document.cell_id(cell) in ids}


def _with_carried_control(record: dict, baseline: dict) -> list[dict]:
    """A worker's records: its own, and where it carried the paired A/A control (:func:`.rounds.carry_control`),
    the control's run of the same round from the same process: arm C's phases, ``pair`` record and readback,
    the process's other fields shared, no duration of its own (the budget counts the worker once), and
    ``carried_by`` naming the cell whose worker timed it (whose record keeps the ``carrier_args`` it ran with:
    :func:`.paired.carrier_args`)."""
    control = record.pop("control", None)
    if control is None:
        return [record]
    shared = {k: v for k, v in record.items()
              if k not in ("cell", "phases", "pair", "readback", "duration_s", "carrier_args")}
    return [record, {**shared, "cell": baseline, "arm": document.PAIRED_ARM, "phases": control["phases"],
                     "pair": control["pair"], "readback": control["readback"], "carried_by": record["cell"]}]


def _progress_bar(total: int, done: int, enabled: bool):
    from tqdm import tqdm

    # Progress is for a person watching: stderr only, and never into a log or pipe.
    return tqdm(total=total, initial=done, unit="worker", file=sys.stderr, dynamic_ncols=True,
                disable=not (enabled and sys.stderr.isatty()))


class _Run:
    """One call of :func:`run_matrix`: its plan, log, rounds, budget and progress bar."""

    def __init__(self, plan: MatrixPlan, log: _Log, policy, budget: _rounds.Budget, control_slots: list,
                 focus: str | None, judge: Judge | None, worker_timeout_s: float | None, probe: bool,
                 servers: ForkServers | None, probe_limit_s: float | None = None) -> None:
        self.plan, self.log, self.policy, self.budget, self.focus = plan, log, policy, budget, focus
        self.servers = servers
        self.judge = judge
        self.control_slots = control_slots
        self.worker_timeout_s, self.probe, self.probe_limit_s = worker_timeout_s, probe, probe_limit_s
        self.open_cells: set[int] | None = None
        self._since_last: BusySampler | None = None
        # The loads the gate's usual load is the median of (a resumed file's too), and the worker set aside last, not
        # yet known to be a burst or the machine's state: the next gated worker tells which.
        def unpaired(records: list[dict]) -> list[dict]:
            return [r for r in records if r.get("pair") is None and r.get("arm") != document.PAIRED_ARM]

        self._usual_loads = gate.loads_of_the_usual(unpaired(log.doc.get("runs", [])),
                                                    unpaired(gate.set_aside(log.doc)))
        self._undecided: dict | None = None

    def _expected(self, slot: _rounds.Slot) -> float | None:
        """The slot's cell's mean worker duration; before its first worker, that of any worker so far."""
        own = self.log.mean_duration(self.plan.cells[slot.index], slot.arm)
        return own if own is not None else self.log.mean_duration(None, None)

    def _judge(self) -> set[int]:
        self.open_cells = _unresolved(self.plan, self.log.doc, self.focus, self.judge)
        return self.open_cells

    def _round(self, index: int) -> list[_rounds.Slot]:
        """The workers round ``index`` still owes, trimmed to the budget; [] once the rounds stop."""
        slots = self.policy.next_round(index, self._judge)
        owed = _rounds.carry_control([s for s in slots if not self.log.done(self.plan.cells[s.index], s.arm, index)],
                                     self.plan.pairs)
        fitting = self.budget.trim(owed, self._expected, together=self.control_slots)
        if owed and not fitting:
            self.policy.stopped = f"the {self.budget.seconds:.0f} s budget ran out"
        return fitting if slots else []

    def _server(self, env: dict[str, str]):
        """The fork server for a worker with ``env``, or None where workers start their own interpreter."""
        if self.servers is None or not self.plan.workload.preload:
            return None
        try:
            return self.servers.get(self.plan.workload.preload, env)
        except ForkServerError as e:  # the run goes on, each worker starting its own interpreter
            self.servers = None
            self.log.doc["metadata"]["runner"]["fork_server_error"] = str(e)
            return None

    def _describe(self, bar, index: int) -> None:
        open_text = "" if self.open_cells is None else f", {len(self.open_cells)} cells unresolved"
        bar.set_description(f"round {index + 1}{open_text}")

    def _gated_worker(self, slot: _rounds.Slot, index: int, workdir: str) -> None:
        """Run ``slot``'s worker of round ``index`` through the contention gate (:mod:`.._results.contention_gate`):
        wait a bounded time for a quiet moment first; a worker set aside is kept in the document's set-aside list
        and its slot runs again, at most ``RETRIES`` times and while the budget still fits one. A probe worker
        and a paired one whose arms use the same CPUs run as they come."""
        cell, env = self.plan.cells[slot.index], self.plan.environments[slot.index]
        # A paired worker (a paired cell, or the paired A/A control) starts as the baseline's would.
        pair = Pair() if slot.arm == document.PAIRED_ARM else self.plan.pairs.get(slot.index)
        start = {} if pair is None else {"pair": pair, "starts_as": self.plan.cells[0],
                                         "carry_control": slot.carries_control, "rotation": index}
        if pair is not None:
            env = self.plan.environments[0]
        runner = self.log.doc["metadata"]["runner"]
        # A probe worker gathers evidence (what the code does, its ops, its counters), compared with no other
        # cell: it is not the gate's, and explain needs it whatever the load. Nor is a paired worker whose arms
        # use the same CPUs: its ratio is taken inside it, between blocks of 4 ms, which a neighbour's load falls
        # on alike; one that switches the thread count is (Pair.gated).
        gated = not self.probe and (pair is None or pair.gated)
        attempts = 1 + gate.RETRIES if gated else 1
        for attempt in range(attempts):
            if attempt and not self.budget.fits(self._expected(slot)):
                return
            left = self.budget.left()
            most = gate.QUIET_WAIT_S if left is None else max(0.0, min(gate.QUIET_WAIT_S, left / 10))
            if gated:  # a steady load is the machine's state: waiting for less than it would not end
                runner["quiet_wait_s"] = runner.get("quiet_wait_s", 0.0) + wait_for_quiet(
                    gate.usual_load(self._usual_loads) + gate.GATE_CPUS, most, gate.QUIET_SAMPLE_S,
                    since=self._since_last)
            args = self.plan.cell_args[slot.index]
            carrier = {"carrier_args": carrier_args(args)} if slot.carries_control else {}
            record = {"cell": cell, "repetition": index, **({"arm": slot.arm} if slot.arm else {}), **carrier,
                      **run_worker(self.plan.workload.name, carrier.get("carrier_args", args), cell, env, workdir,
                                   self.worker_timeout_s, self.probe, self._server(env),
                                   probe_limit_s=self.probe_limit_s, **start)}
            self._since_last = BusySampler()  # the load between workers: the next one's first look
            why = gate.reason(record, self._usual_loads) if gated else None
            load = gate.Beside.of(record).other_cpus
            if why is None:
                if gated and record.get("status") == "ok" and load is not None:
                    self._usual_loads.append(load)
                    self._undecided = None  # the load beside the worker set aside before this one was a burst
                self.log.add(*_with_carried_control(record, self.plan.cells[0]))
                return
            aside = {**record, gate.KEY: why}
            if self._undecided is None:
                self._undecided = aside
            else:  # beside two gated workers in a row: the machine's state (both marked, saved with this one)
                for persisted in (self._undecided, aside):
                    persisted[gate.PERSISTED] = True
                    self._usual_loads.append(gate.Beside.of(persisted).other_cpus)
                self._undecided = None
            self.log.set_aside(aside)

    def execute(self, workdir: str, bar) -> None:
        index = 0
        while self.policy.stopped is None:
            slots = self._round(index)
            if self.policy.stopped is not None:
                break
            if self.policy.extra(index):
                bar.total += len(slots)
            self._describe(bar, index)
            ran, control_runs = 0, None
            for slot in slots:
                # The round's first workers had no estimate, so each is checked as it comes; but the
                # control's second arm follows its first: one arm alone leaves the A/A control unpaired
                # (the budget is then kept within one worker).
                if slot in self.control_slots and control_runs is not None:
                    if not control_runs:
                        continue
                elif not self.budget.fits(self._expected(slot)):
                    control_runs = False if slot in self.control_slots else control_runs
                    continue
                control_runs = True if slot in self.control_slots else control_runs
                ran += 1
                cell = self.plan.cells[slot.index]
                arm_text = {document.CONTROL_ARM: " [A/A arm B]", document.PAIRED_ARM: " [paired A/A]"}.get(
                    slot.arm, (" (paired, with the paired A/A)" if slot.carries_control
                               else " (paired)" if slot.index in self.plan.pairs else ""))
                bar.set_postfix_str(f"{settings.cell_label(cell)}{arm_text}", refresh=True)
                self._gated_worker(slot, index, workdir)
                bar.update(1)
            if self.servers is not None:
                # A new server per round: its children share its address layout (see .forkserver).
                self.servers.close()
            if ran:
                self.log.doc["rounds"].append({"round": index, "workers": ran, "ended": now()})
            if self.budget.exhausted and self.policy.stopped is None:
                self.policy.stopped = f"the {self.budget.seconds:.0f} s budget ran out"
            index += 1
        self.log.doc["stopped"] = self.policy.stopped


def run_matrix(workload: str, args: dict | None = None, matrix: dict[str, list] | None = None,
               repeat: int | str = 1, json_path: str | None = None, resume: bool = False,
               shuffle_seed: int | None = None, progress: bool = True, worker_timeout_s: float | None = None,
               focus: str | None = None, control: bool = True, budget_s: float | None = None,
               probe: bool = False, judge: Judge | None = None, fork: bool = True, paired: bool = False,
               first_rounds: int | None = None, probe_limit_s: float | None = None) -> dict:
    """Run ``workload`` for every cell of ``matrix``; return the results document.

    ``matrix`` maps setting names (``ftz``, ``threads``, ``pin``, ``alloc``,
    ``env``, ``busy``, ``only``, ``with``) or workload parameter names to lists of values; a parameter in
    the matrix overrides ``args`` per cell. ``repeat``: fresh processes per
    cell, or ``"auto"``: three, then more only for the cells whose
    comparisons stay unresolved (:mod:`.rounds`). ``control``: also run the
    baseline cell as the second arm of an A/A control. ``budget_s``: start no
    worker that is not expected to finish within this many seconds of the
    call. With ``json_path`` the document is written atomically after every
    finished worker. ``focus`` names the matrix key whose contrast the
    verdict explains (see :func:`benchctl._results.verdict.findings`).
    ``probe``: each worker tells the workload it is probed, for ``benchctl
    explain`` (see :mod:`benchctl._workloads.user`); ``probe_limit_s``: a probe worker whose timed calls took
    this long stops there (:class:`~benchctl._run.recorder.Recorder`). ``judge``: the rules that
    decide which comparisons are open (and fill the verdict), when a study
    has its own (default: the generic verdict with ``focus``). ``fork``: fork
    the workers of a workload that declares modules to preload from a server
    per environment, new every round (:mod:`.forkserver`); False starts every
    worker's interpreter afresh. ``paired``: time each cell that differs from the first only in settings a
    running process can switch paired with it, both in one worker in balanced blocks (:mod:`.paired`),
    with a paired A/A control as a third arm of one paired worker a round (under ``"auto"``, where every cell
    is paired, the baseline runs in no process of its own: arm A of the paired processes is its row); the other
    cells as before. ``first_rounds``: under ``"auto"``, the rounds of every cell before the first judgement
    (:func:`benchctl._run.rounds.first_rounds`; None: a resumed file's, or three).
    """
    plan = plan_matrix(workload, args, matrix, _validate.flag("paired", paired))
    if focus is not None and focus not in plan.matrix:
        raise _validate.ArgumentError(f"focus {focus!r} is not a matrix key "
                                      f"({', '.join(plan.matrix) or 'empty matrix'})")
    repeat = _rounds.check_repeat(repeat)
    if worker_timeout_s is not None:
        worker_timeout_s = _validate.seconds("worker_timeout_s", worker_timeout_s)
    if probe_limit_s is not None:
        probe_limit_s = _validate.seconds("probe_limit_s", probe_limit_s)
    budget = _rounds.Budget(budget_s)
    control = _validate.flag("control", control)
    if plan.every_cell_paired and not resume:
        # Every cell is compared with the baseline inside its processes, against the paired A/A control: the
        # baseline's second arm of fresh processes would judge nothing (it is run again where any cell is not).
        control = False
    fork = _validate.flag("fork", fork)
    log, repeat, shuffle_seed = _open_log(plan, repeat, json_path, resume, shuffle_seed, worker_timeout_s,
                                          budget.seconds, control, focus, fork and bool(plan.workload.preload))
    first_rounds = _first_rounds(log.doc, first_rounds, json_path)
    plan = _paired_plan(plan, log.doc, resume)
    slots, control_slots = _slots(plan, log.doc)
    policy = (_rounds.AutoRounds(slots, control_slots, shuffle_seed, paired=frozenset(plan.pairs),
                                 paired_control=tuple(s for s in slots if s.arm == document.PAIRED_ARM),
                                 first=first_rounds)
              if repeat == _rounds.AUTO
              else _rounds.FixedRounds(slots, repeat, shuffle_seed, paired=frozenset(plan.pairs)))
    log.save()  # a bad path fails now, not after the first cell
    done = sum(r["status"] == "ok" and "carried_by" not in r for r in log.doc["runs"])  # workers, not runs
    with tempfile.TemporaryDirectory(prefix="benchctl-run-") as workdir, ForkServers(workdir) as servers, \
            _progress_bar(max(policy.planned(), done), done, progress) as bar:
        _Run(plan, log, policy, budget, control_slots, focus, judge, worker_timeout_s, probe,
             servers if fork else None, probe_limit_s).execute(workdir, bar)
    analyse(log.doc, focus, judge=judge)
    log.save()
    return log.doc
