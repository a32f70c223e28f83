"""The questions every reader asks of a results document, answered in one place.

The verdict, the report, ``compare`` and the seed rules all read a document
through these: which phases and cells it has, its baseline cell, the
successful runs of a cell (exact match of the whole cell), their steady-state
samples and per-process values, the notes and readbacks they carry, the A/A
control, and a cached comparison of two cells (:class:`Comparisons`).

The control's second arm (runs with ``"arm": "B"``, the baseline cell run
again): a cell's runs are those without it unless ``arm="B"`` is asked for;
only comparisons between cells (:func:`comparison_values`) count both arms
as the baseline's processes.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import settings as _settings
from .._validate import ArgumentError
from . import processes
from .comparison import Comparison
from .document import CONTROL_ARM, PAIRED_ARM, cell_id, matrix_cells

__all__ = ["phases", "cells", "baseline", "ok_runs", "failed_runs", "steady_start", "steady_ns", "steady_samples",
           "pool_steady", "paired_baseline_series", "steady_runs", "steady_by_run",
           "process_medians", "first_note", "readback_facts", "phase_before",
           "probe_held", "summary_entry", "per_iter_median", "per_iter_mean", "CellPair", "cell_pairs",
           "Control", "control", "comparison_values", "spread", "paired_cell", "paired_medians", "is_paired",
           "paired_control",
           "SHARED_CPUS", "beside_cpus", "shared_cpus", "mostly_shared", "Comparisons"]

#: A worker shared the CPUs when other processes (or other guests, as steal) kept
#: this many CPUs busy on average over its run.
SHARED_CPUS = 0.25


def phases(doc: dict) -> list[str]:
    """Phase names in order of first appearance among successful runs."""
    seen: dict[str, None] = {}
    for run in doc["runs"]:
        if run["status"] == "ok":
            seen.update(dict.fromkeys(run["phases"]))
    return list(seen)


def cells(doc: dict) -> list[dict]:
    """The document's cells in matrix order."""
    return matrix_cells(doc["matrix"])


def baseline(doc: dict, overrides: Any = None) -> dict:
    """The baseline cell: the matrix's first values, overlaid with ``overrides``.

    ``overrides`` may be None, a (partial) cell dict, or text like
    ``"alloc=retain,order=eval_only"`` (values as the report prints them).
    Keys outside the matrix and values outside its lists raise ValueError.
    """
    cell = {k: v[0] for k, v in doc["matrix"].items()}
    if overrides is None:
        return cell
    if isinstance(overrides, str):
        overrides = _parse_cell_text(overrides)
    for key, value in overrides.items():
        if key not in doc["matrix"]:
            raise ArgumentError(f"baseline key {key!r} is not a matrix key ({', '.join(doc['matrix']) or 'none'})")
        values = doc["matrix"][key]
        # Text from the command line matches a value as the report prints it.
        match = [v for v in values if v == value or (isinstance(value, str) and _settings.format_value(v) == value)]
        if not match:
            raise ArgumentError(f"baseline {key}={_settings.format_value(value)} is not among the matrix values "
                             f"{', '.join(_settings.format_value(v) for v in values)}")
        cell[key] = match[0]
    return cell


def _parse_cell_text(text: str) -> dict[str, str]:
    items = {}
    for item in _settings.split_values(text):
        key, sep, value = item.partition("=")
        if not sep:
            raise ArgumentError(f"baseline {text!r}: write NAME=VALUE[,NAME=VALUE...]")
        items[key.strip()] = value
    return items


def _arm(arm: str | None) -> str | None:
    """The arm a run's ``arm`` field names: the control's first arm ``"A"`` is the cell itself (None)."""
    return None if arm == "A" else arm


def ok_runs(doc: dict, cell: dict, arm: str | None = None) -> list[dict]:
    """The successful runs of exactly ``cell`` (every key and value equal); with ``arm="B"``
    those of the control's second arm instead, with ``arm="P"`` those of the paired A/A control."""
    key = cell_id(cell)
    return [r for r in doc["runs"] if r["status"] == "ok" and cell_id(r["cell"]) == key
            and _arm(r.get("arm")) == _arm(arm)]


def failed_runs(doc: dict) -> list[dict]:
    return [r for r in doc["runs"] if r["status"] == "failed"]


def steady_start(data: dict) -> int:
    """Where a phase's steady iterations start in one run's ``data``: after its recorded warm-up."""
    return data.get("warmup") or 0


def steady_ns(data: dict) -> np.ndarray:
    """One process's steady-state ns in a phase's ``data``: its iterations after its recorded warm-up."""
    return np.asarray(data["ns"][steady_start(data):], dtype=np.float64)


def steady_samples(doc: dict, phase: str, cell: dict, arm: str | None = None) -> tuple[np.ndarray, dict[str, list]]:
    """Pooled steady-state ns and per-iteration counters of ``cell`` in ``phase``."""
    return pool_steady([r["phases"][phase] for r in ok_runs(doc, cell, arm) if phase in r["phases"]])


def pool_steady(series: list[dict]) -> tuple[np.ndarray, dict[str, list]]:
    """Pooled steady-state ns and per-iteration counters of ``series`` (each one process's phase data)."""
    ns: list[float] = []
    counters: dict[str, list] = {}
    events = set().union(*(data.get("counters", {}) for data in series)) if series else set()
    for data in series:
        start = steady_start(data)
        steady = data["ns"][start:]
        ns += steady
        for event in events:
            values = data.get("counters", {}).get(event)
            # A repetition without this event contributes "unknown", not zeros.
            counters.setdefault(event, []).extend(values[start:] if values else [None] * len(steady))
    return np.asarray(ns, dtype=np.float64), counters


def steady_runs(doc: dict, phase: str, cell: dict, arm: str | None = None) -> list[tuple[dict, np.ndarray]]:
    """(run, its steady-state ns) for each ok run (fresh process) of ``cell`` with steady iterations in ``phase``."""
    out = []
    for run in ok_runs(doc, cell, arm):
        data = run["phases"].get(phase)
        if data:
            steady = steady_ns(data)
            if len(steady):
                out.append((run, steady))
    return out


def paired_baseline_series(doc: dict, phase: str) -> list[dict]:
    """Arm A's iterations in ``phase`` (a phase's ns, counters and warm-up) of each successful process of a paired
    cell: the baseline's settings timed in those processes, each process once (a paired control a cell's worker
    carried holds the same arm A)."""
    spec = doc.get("paired")
    if not spec:
        return []
    cells = {cell_id(c) for c in spec["cells"]}
    out = []
    for run in doc["runs"]:
        if run["status"] == "ok" and run.get("arm") is None and cell_id(run["cell"]) in cells:
            data = ((run.get("pair") or {}).get("phases") or {}).get(phase)
            if data and data.get("ns"):
                out.append(data)
    return out


def baseline_series(doc: dict, phase: str, baseline: dict) -> list[dict]:
    """The unchanged workload's ``phase`` data (ns, counters, warm-up), one per process: its own fresh processes, and
    arm A of the paired ones (:func:`paired_baseline_series`)."""
    own = [run["phases"][phase] for run in ok_runs(doc, baseline) if "pair" not in run and phase in run["phases"]]
    return own + paired_baseline_series(doc, phase)


def steady_by_run(doc: dict, phase: str, cell: dict, arm: str | None = None) -> list[np.ndarray]:
    """Steady-state ns of ``cell`` in ``phase``, one array per ok run (fresh process)."""
    return [ns for _, ns in steady_runs(doc, phase, cell, arm)]


def process_medians(doc: dict, phase: str, cell: dict, arm: str | None = None) -> list[float]:
    """One value per successful process of ``cell`` in ``phase``: the median of its steady iterations."""
    return [float(np.median(x)) for x in steady_by_run(doc, phase, cell, arm)]


def paired_cell(doc: dict, a: dict, b: dict) -> tuple[dict, bool] | None:
    """(the paired cell, whether it is ``a``) where one of ``a`` and ``b`` is the document's paired baseline and
    the other a cell it timed paired with it (:mod:`benchctl._run.paired`); None otherwise."""
    spec = doc.get("paired")
    if not spec:
        return None
    base, cells_paired = cell_id(spec["baseline"]), {cell_id(c) for c in spec["cells"]}
    if cell_id(b) == base and cell_id(a) in cells_paired:
        return a, True
    if cell_id(a) == base and cell_id(b) in cells_paired:
        return b, False
    return None


def _runs_of_blocks(schedule: str, a_ns: list, b_ns: list, a_from: int, b_from: int,
                    b_letter: str = "B") -> list[tuple[str, float]]:
    """(arm, median ns) of each run of one arm's kept iterations in ``schedule`` order (a run ends where the
    other arm's iterations, a third arm's, or the iterations left out after a switch, begin); each arm's warm-up
    (its first ``a_from`` / ``b_from`` kept iterations) left out. ``b_letter``: the schedule's letter of the arm
    compared with A (``C``: the paired A/A control a cell's worker carried)."""
    runs: list[tuple[str, list]] = []
    seen = {"A": 0, b_letter: 0}
    source, start = {"A": a_ns, b_letter: b_ns}, {"A": a_from, b_letter: b_from}
    previous = ""
    for letter in schedule:
        if letter not in source:
            previous = letter
            continue
        i = seen[letter]
        seen[letter] += 1
        if i < start[letter] or i >= len(source[letter]):
            previous = ""
            continue
        if letter != previous or not runs:
            runs.append((letter, []))
        runs[-1][1].append(source[letter][i])
        previous = letter
    # statistics.median, not numpy's: the same value, at ~1 us a run of a few iterations where numpy's took ~20 us,
    # and a worker of a microsecond call holds ~10^4 runs (judged after every worker: 0.8 s of a 20 s budget).
    return [(arm, float(statistics.median(values))) for arm, values in runs]


def _paired_ratio(run: dict, phase: str) -> tuple[float, float] | None:
    """(arm A's steady median, arm B's as the process's paired ratio puts it) of one paired run, or None: the
    ratio is the median, over each two neighbouring runs of blocks of the two arms, of B's median over A's
    (:mod:`benchctl._run.paired`); a file without a schedule gives the ratio of the arms' medians."""
    b, pair = run["phases"].get(phase), run.get("pair") or {}
    a = (pair.get("phases") or {}).get(phase)
    if not a or not b:
        return None
    a_from, b_from = steady_start(a), steady_start(b)
    a_ns, b_ns = a["ns"][a_from:], b["ns"][b_from:]
    if not a_ns or not b_ns:
        return None
    a_median = float(np.median(a_ns))
    runs = _runs_of_blocks((pair.get("schedule") or {}).get(phase, ""), a["ns"], b["ns"], a_from, b_from,
                           pair.get("letter", "B"))
    logs = []
    for (arm, first), (other, second) in zip(runs, runs[1:]):
        if arm == other:  # two runs of one arm parted by a third arm's blocks (or by a warm-up left out)
            continue
        of_a, of_b = (first, second) if arm == "A" else (second, first)
        if of_a > 0 and of_b > 0:
            logs.append(math.log(of_b / of_a))
    ratio = math.exp(float(np.median(logs))) if logs else float(np.median(b_ns)) / a_median
    return a_median, a_median * ratio


def paired_medians(doc: dict, phase: str, cell: dict, arm: str | None = None) -> tuple[list[float], list[float]]:
    """(arm A's, arm B's) values, one each per successful paired process of ``cell`` (with ``arm="P"``: of the
    paired A/A control) in ``phase``, both taken inside that process (arm B is the cell, arm A the baseline):
    arm A's steady median, and arm B's as that times the process's paired ratio (:func:`_paired_ratio`). A
    process with no steady iteration in an arm gives neither."""
    a_out, b_out = [], []
    for run in ok_runs(doc, cell, arm):
        got = _paired_ratio(run, phase)
        if got is not None:
            a_out.append(got[0])
            b_out.append(got[1])
    return a_out, b_out


def is_paired(doc: dict, cell: dict) -> bool:
    """Whether ``cell``'s processes were timed paired with the baseline (:mod:`benchctl._run.paired`)."""
    spec = doc.get("paired")
    return bool(spec) and cell_id(cell) in {cell_id(c) for c in spec["cells"]}


def paired_control(doc: dict, phase: str) -> Control | None:
    """The paired A/A control of ``phase``: the paired schedule with nothing switched, its per-process ratios
    against 1, and the band paired comparisons are judged against; None without its processes."""
    spec = doc.get("paired")
    base, same = paired_medians(doc, phase, spec["baseline"], PAIRED_ARM) if spec else ([], [])
    if not base:
        return None
    cmp = processes.compare_paired(same, base)
    band = processes.band_from_paired_control(cmp)
    return Control(spec["baseline"], cmp, band, None, unreliable=cmp.beyond_band)


def beside_cpus(run: dict) -> float:
    """CPUs that other processes and steal kept busy beside this worker, on average (0 when not recorded)."""
    beside = run.get("beside") or {}
    return (beside.get("other_cpus") or 0.0) + (beside.get("steal_cpus") or 0.0)


def shared_cpus(run: dict) -> bool:
    """Whether this worker shared the CPUs with other work (:data:`SHARED_CPUS` or more kept busy beside it)."""
    return beside_cpus(run) >= SHARED_CPUS


def mostly_shared(runs: list[dict]) -> bool:
    """Whether at least half of these workers (and at least one) shared the CPUs with other work."""
    return bool(runs) and sum(map(shared_cpus, runs)) * 2 >= len(runs)


def first_note(doc: dict, cell: dict, key: str) -> Any:
    """The note ``key`` of the first successful run of ``cell`` that has it, else None."""
    for run in ok_runs(doc, cell):
        if key in run.get("notes", {}):
            return run["notes"][key]
    return None


def readback_facts(doc: dict, cell: dict, name: str) -> dict | None:
    """The observed state of setting ``name`` in ``cell``'s successful runs, condensed by the setting.

    The same facts in every run give those facts; differing ones give
    ``{"varies": [...]}``; no readback gives None.
    """
    setting = _settings.SETTINGS[name]
    facts = [setting.facts(observed) for run in ok_runs(doc, cell)
             if (observed := (run.get("readback", {}).get(name) or {}).get("observed")) is not None]
    if not facts:
        return None
    return facts[0] if all(f == facts[0] for f in facts) else {"varies": facts}


def phase_before(run: dict, phase: str) -> str | None:
    """The phase that ran before ``phase`` began in this run (phases are kept in the order they first ran)."""
    names = list(run["phases"])
    at = names.index(phase) if phase in names else 0
    return names[at - 1] if at > 0 else None


def probe_held(doc: dict, cell: dict, name: str) -> tuple[bool, Any]:
    """(whether setting ``name`` held through the timed iterations of every successful run of ``cell``,
    the value the workload's code set where it did not). A setting without an in-run check holds."""
    for run in ok_runs(doc, cell):
        during = (run.get("readback", {}).get(name) or {}).get("during")
        if during is not None and not during["held"]:
            return False, during["seen"]
    return True, None


def summary_entry(doc: dict, phase: str, cell: dict, arm: str | None = None) -> dict | None:
    """The ``summary`` entry of ``cell`` in ``phase`` (of the control's arm B with ``arm="B"``), or None."""
    key = cell_id(cell)
    for entry in doc["summary"]:
        if entry["phase"] == phase and cell_id(entry["cell"]) == key and entry.get("arm") == arm:
            return entry
    return None


@dataclass(frozen=True)
class CellPair:
    """One (phase, cell) two documents both measured: each one's median, and b against a over processes
    (``comparison``; None when it was refused, ``refused`` saying why)."""

    phase: str
    cell: dict
    median_ms_a: float
    median_ms_b: float
    comparison: Comparison | None
    refused: str | None = None

    def to_json(self) -> dict:
        return {"phase": self.phase, "cell": self.cell, "median_ms_a": self.median_ms_a,
                "median_ms_b": self.median_ms_b,
                "comparison": None if self.comparison is None else self.comparison.to_json(), "refused": self.refused}


def cell_pairs(a: dict, b: dict) -> list[CellPair]:
    """Each (phase, cell) of ``a`` that ``b`` has too (the A/A control's second arm left out), in ``a``'s order,
    with b against a over processes."""
    pairs = []
    for entry_a in a["summary"]:
        entry_b = (None if entry_a.get("arm") == CONTROL_ARM
                   else summary_entry(b, entry_a["phase"], entry_a["cell"]))
        if entry_b is None:
            continue
        phase, cell = entry_a["phase"], entry_a["cell"]
        try:
            # Two files have no shared control: judged against the floor alone.
            cmp, refused = processes.compare(process_medians(b, phase, cell), process_medians(a, phase, cell)), None
        except ValueError as e:
            cmp, refused = None, str(e)
        pairs.append(CellPair(phase, cell, entry_a["median_ms"], entry_b["median_ms"], cmp, refused))
    return pairs


def per_iter_median(values: list | None) -> float | None:
    """Median of per-iteration counter deltas; None if any iteration could not be counted."""
    if not values or any(v is None for v in values):
        return None
    return float(np.median(np.asarray(values, dtype=np.float64)))


def per_iter_mean(values: list | None) -> float | None:
    """Mean of per-iteration counter deltas; None if any iteration could not be counted."""
    if not values or any(v is None for v in values):
        return None
    return float(np.mean(np.asarray(values, dtype=np.float64)))


@dataclass(frozen=True)
class Control:
    """The A/A control of one phase: the baseline cell's arm B against its arm A.

    ``comparison`` is :func:`benchctl._results.processes.compare` of the two arms' processes,
    ``band`` the no-effect band this run supports
    (:func:`~benchctl._results.processes.band_from_control`), ``resolves`` about the smallest
    difference it resolves (:func:`~benchctl._results.processes.resolvable`), ``unreliable``
    whether the two identical arms differ by more than the 5% floor.
    """

    cell: dict
    comparison: Comparison
    band: float
    resolves: float | None
    unreliable: bool


def control(doc: dict, phase: str) -> Control | None:
    """The A/A control of ``phase``; None when the document has no control (``--no-control``, or a
    schema-1 file) or a side has no successful process."""
    spec = doc.get("control")
    if not spec:
        return None
    cell = spec["cell"]
    arm_a, arm_b = process_medians(doc, phase, cell), process_medians(doc, phase, cell, CONTROL_ARM)
    if not arm_a or not arm_b:
        return None
    cmp = processes.compare(arm_b, arm_a, same_cell=True)
    band = processes.band_from_control(cmp)
    return Control(cell, cmp, band, processes.resolvable(cmp, band), unreliable=cmp.beyond_band)


def comparison_values(doc: dict, phase: str, cell: dict) -> list[float]:
    """The per-process values ``cell`` brings to a comparison with another cell: its processes,
    and for the control's cell those of both arms (one cell, run in the same rounds: arm B's
    processes are as much the baseline's as arm A's, and the baseline is in most comparisons)."""
    values = process_medians(doc, phase, cell)
    spec = doc.get("control")
    if spec and cell_id(spec["cell"]) == cell_id(cell):
        values += process_medians(doc, phase, cell, CONTROL_ARM)
    return values


def spread(doc: dict, phase: str) -> processes.PooledSpread | None:
    """The process variance of ``phase`` pooled over its cells, each control arm a cell of its own
    (:func:`benchctl._results.processes.pooled_spread`); None when no cell has two processes in it."""
    groups = [process_medians(doc, phase, cell) for cell in cells(doc)]
    spec = doc.get("control")
    if spec:
        groups.append(process_medians(doc, phase, spec["cell"], CONTROL_ARM))
    return processes.pooled_spread(groups)


class Comparisons:
    """Comparisons of two cells of one document with the process as the unit, computed once.

    ``compare(phase, a, b)`` is :func:`benchctl._results.processes.compare` of
    the cells' per-process values, with the phase's pooled process variance
    where the cells share one (:func:`spread`), judged against the phase's no-effect band
    (the 5% floor, widened by the A/A control) and marked ``unreliable`` when
    the phase's control arms differ (an effect is then not called). None when
    either cell has no successful process in ``phase``, or when the comparison
    was refused (medians of 0 ns, say): :attr:`refused` keeps those with the
    reason, so they are said, not dropped. A cell timed paired with the baseline (:func:`paired_cell`) is
    compared with it from its per-process paired ratios instead
    (:func:`benchctl._results.processes.compare_paired`), its spread at least the paired A/A control's, against
    that control's band.
    """

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        self._cache: dict[tuple[str, str, str], Comparison | None] = {}
        self._controls: dict[str, Control | None] = {}
        self._spreads: dict[str, processes.PooledSpread | None] = {}
        self._paired_controls: dict[str, Control | None] = {}
        #: (phase, a id, b id) -> (a, b, reason) for each pair the comparison refused.
        self.refused: dict[tuple[str, str, str], tuple[dict, dict, str]] = {}

    def control(self, phase: str) -> Control | None:
        if phase not in self._controls:
            self._controls[phase] = control(self.doc, phase)
        return self._controls[phase]

    def spread(self, phase: str) -> processes.PooledSpread | None:
        if phase not in self._spreads:
            self._spreads[phase] = spread(self.doc, phase)
        return self._spreads[phase]

    def band(self, phase: str) -> float:
        ctl = self.control(phase)
        return ctl.band if ctl else processes.FLOOR

    def compare(self, phase: str, a: dict, b: dict) -> Comparison | None:
        key = (phase, cell_id(a), cell_id(b))
        if key not in self._cache:
            self._cache[key] = self._compute(key, phase, a, b)
        return self._cache[key]

    def paired_control(self, phase: str) -> Control | None:
        if phase not in self._paired_controls:
            self._paired_controls[phase] = paired_control(self.doc, phase)
        return self._paired_controls[phase]

    def _paired(self, key: tuple, phase: str, cell: dict, is_a: bool) -> Comparison | None:
        """The paired cell against the baseline (or the reverse), judged against the paired A/A control's band."""
        base, paired = paired_medians(self.doc, phase, cell)
        if not base:
            return None
        ctl = self.paired_control(phase)
        try:
            cmp = processes.compare_paired(*((paired, base) if is_a else (base, paired)),
                                           control=ctl.comparison if ctl else None)
        except ValueError as e:
            self.refused[key] = (cell, self.doc["paired"]["baseline"], str(e))
            return None
        return cmp.judged(ctl.band if ctl else processes.FLOOR, unreliable=bool(ctl and ctl.unreliable))

    def _compute(self, key: tuple, phase: str, a: dict, b: dict) -> Comparison | None:
        pair = paired_cell(self.doc, a, b)
        if pair is not None:
            return self._paired(key, phase, *pair)
        a_values, b_values = comparison_values(self.doc, phase, a), comparison_values(self.doc, phase, b)
        if not a_values or not b_values:
            return None
        try:
            cmp = processes.compare(a_values, b_values, pooled=self.spread(phase))
        except ValueError as e:
            self.refused[key] = (a, b, str(e))
            return None
        ctl = self.control(phase)
        return cmp.judged(self.band(phase), unreliable=bool(ctl and ctl.unreliable))
