"""A process far slower than the other processes of its cell that nothing counted explains.

On a shared or virtual machine a whole fresh process sometimes runs every iteration about 1.3-1.5×
slower than its siblings while doing the same work: no more context switches than they count
(:func:`~.counter_evidence.differ`), no more page faults than could cost a share of the
difference, both threads busy (in the eval phase of twenty resnet_order runs on the development
VM, an AMD EPYC guest: one in eval_only/alloc=retain in 5 runs, in train_then_eval/alloc=retain
in 1, in eval_only/default and its A/A arm in none). Whether the machine or a state the cell's
memory lands in does it, no counter here tells; either way one such process widens its cell's
interval enough to leave a comparison open. The report names it under its cell, and the answer
beside the open finding it widens, so that the open line reads as what it is. The comparisons keep
it: setting a process aside would make the intervals depend on a judgement made after seeing the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import settings as _settings
from . import counter_evidence, queries, wording
from .comparison import FLOOR
from .document import cell_id

__all__ = ["OUTLIER_SDS", "MIN_OTHERS", "EXPLAINING_COUNTERS", "EXPLAINED_SHARE", "OutlyingProcess",
           "outlying_process", "widening"]

#: A process is outlying when it is slower than the median of its cell's other processes by more than this
#: many of their standard deviations (log values, taken as at least the 5% floor's: 4 x 4.9% = 1.22x at least).
OUTLIER_SDS = 4.0
#: Other processes a cell needs before one of its processes is called outlying: fewer say nothing of the spread.
MIN_OTHERS = 3
#: Counters that would explain a slower process (more page faults, more context switches: preempted or
#: waiting), with the field :mod:`.counter_evidence` judges them by.
EXPLAINING_COUNTERS = {"minor_faults": counter_evidence.MINOR_FAULTS,
                       "context_switches": counter_evidence.CONTEXT_SWITCHES}
#: Extra page faults explain the slowness when, at :data:`~.counter_evidence.FAULT_COST_MAX_US` a fault,
#: they could cost at least this share of the extra time per iteration.
EXPLAINED_SHARE = 0.5
_COUNTER_WORDS = {"minor_faults": "page faults", "context_switches": "context switches"}


@dataclass(frozen=True)
class OutlyingProcess:
    """The slowest process of a cell, outlying as the module says."""

    cell: dict
    repetition: int
    ratio: float  # its median over the median of the others' medians
    others: int
    #: (counter, its per-iteration median, the others' median of theirs), for the counters both sides have.
    counters: tuple[tuple[str, float, float], ...]

    def describe(self) -> str:
        counted = ": no counter was read that could explain it"
        if self.counters:
            names = " and ".join(_COUNTER_WORDS[c] for c, _, _ in self.counters)
            own = " and ".join(wording.count(v) for _, v, _ in self.counters)
            theirs = " and ".join(wording.count(v) for _, _, v in self.counters)
            counted = f", with {own} {names} per iteration against their {theirs}: nothing counted explains it"
        return (f"{self._slower()}{counted}, as when the machine itself slows a process; it widens this cell's "
                "interval, and the comparisons keep it")

    def _slower(self) -> str:
        return (f"the process of round {self.repetition + 1} ran {wording.factor(self.ratio)}× slower than the "
                f"cell's other {self.others}")

    def open_text(self) -> str:
        """What an open finding whose interval this process widens says of it, after its own words."""
        return (f"; in {_settings.cell_label(self.cell)} {self._slower()}, nothing counted explaining it "
                "(the note under the table)")


def _steady_median(run: dict, phase: str, event: str) -> float | None:
    """The median over ``run``'s steady iterations of counter ``event`` (None where it was not read)."""
    data = run["phases"][phase]
    steady = [v for v in (data.get("counters", {}).get(event) or [])[queries.steady_start(data):] if v is not None]
    return float(np.median(steady)) if steady else None


def _explains(field: str, own: float, theirs: float, extra_ms: float) -> bool:
    """Whether counting ``own`` events per iteration against the others' ``theirs`` could explain a process
    ``extra_ms`` slower per iteration: more by :func:`~.counter_evidence.differ`'s test, and for page faults
    also enough of them to cost :data:`EXPLAINED_SHARE` of that time (1,715 faults against 147 cost 5 ms
    at most, not the 500 ms a process was slower by)."""
    if own <= theirs or not counter_evidence.differ(field, own, theirs):
        return False
    if field == counter_evidence.MINOR_FAULTS:
        return (own - theirs) * counter_evidence.FAULT_COST_MAX_US / 1e3 >= EXPLAINED_SHARE * extra_ms
    return True


def outlying_process(doc: dict, phase: str, cell: dict, arm: str | None = None) -> OutlyingProcess | None:
    """The slowest process of ``cell`` (its control ``arm``) in ``phase`` when it is outlying, else None:
    at least :data:`MIN_OTHERS` other processes, slower than their median by more than :data:`OUTLIER_SDS`
    of their spread, and none of :data:`EXPLAINING_COUNTERS` explaining it (:func:`_explains`)."""
    per_process = [(run, float(np.median(ns))) for run, ns in queries.steady_runs(doc, phase, cell, arm)]
    runs, medians = [run for run, m in per_process if m > 0], [m for _, m in per_process if m > 0]
    if len(runs) < MIN_OTHERS + 1:
        return None
    logs = np.log(medians)
    slowest = int(np.argmax(logs))
    others = np.delete(logs, slowest)
    spread = max(float(others.std(ddof=1)), math.log1p(FLOOR))
    lead = float(logs[slowest] - np.median(others))
    if lead <= OUTLIER_SDS * spread:
        return None
    counted = []
    extra_ms = (medians[slowest] - math.exp(float(np.median(others)))) / 1e6
    for event, field in EXPLAINING_COUNTERS.items():
        per_run = [_steady_median(r, phase, event) for r in runs]
        own, rest = per_run[slowest], [v for i, v in enumerate(per_run) if i != slowest and v is not None]
        if own is None or not rest:
            continue
        theirs = float(np.median(rest))
        if _explains(field, own, theirs, extra_ms):
            return None  # it did more of what slows a process down: its own work explains it
        counted.append((event, own, theirs))
    return OutlyingProcess(cell=cell, repetition=int(runs[slowest].get("repetition", slowest)), ratio=math.exp(lead),
                           others=len(runs) - 1, counters=tuple(counted))


def widening(doc: dict, finding) -> list[OutlyingProcess]:
    """The outlying processes in the cells an open ``finding`` (:class:`~.findings.Finding`) would need more
    processes of: those that widen its interval ([] for a finding that is not open)."""
    if not finding.is_open or finding.phase is None:
        return []
    cells = {cell_id(c): c for c in finding.cells()}
    return [o for o in (outlying_process(doc, finding.phase, c) for c in cells.values()) if o is not None]
