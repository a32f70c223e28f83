"""Which workers each round of a matrix runs, and when the rounds stop.

A round runs each of its slots once, in interleaved order: a slot is a cell
of the matrix, or the A/A control's second arm (the baseline cell again).
Repetition ``r`` of a slot is the worker it ran in round ``r``.

* :class:`FixedRounds`: ``--repeat R``: R rounds of every slot.
* :class:`AutoRounds`: ``--repeat auto``: three rounds of every slot (five where
  every cell is paired and the workers are sized to a budget: :func:`first_rounds`), then
  rounds of only the cells whose comparisons are still unresolved (the
  control's two arms with them when its cell, the baseline, is one of them
  for an unpaired cell; the paired A/A control with an open paired cell),
  until every comparison is resolved, a cell has had :data:`AUTO_MAX_PROCESSES`
  processes, or the budget runs out. Where every cell is paired, the baseline
  has no fresh process of its own: each paired worker times it as its arm A,
  which gives its row, its counters and every comparison (a process of its own
  was read by none of them, and under a neighbour cost a paired A/B in 20 s a
  third of its workers).

The paired A/A control is not a worker of its own where a round holds a
paired cell: :func:`carry_control` gives it to that cell's worker as a third
arm (:mod:`.paired`).

A budget (seconds of the whole run) trims each round to the workers that
are expected to fit, from the durations of the workers already run; the
control's two arms are kept together first; and each worker is started only
when it is still expected to fit (:meth:`Budget.fits`), so a run ends within
its budget and one worker. :func:`iterations_for` sizes a worker's iterations
to the budget, from one worker's iteration time.
"""

from __future__ import annotations

import random
import time
import math
from dataclasses import dataclass, replace
from typing import Callable

from .. import _validate
from .._results.document import PAIRED_ARM
from .._workloads.user import MIN_ITERATIONS
from .paired import CARRIER_SCALE

__all__ = ["AUTO", "AUTO_START", "PAIRED_AUTO_START", "AUTO_MAX_PROCESSES", "Slot", "FixedRounds", "AutoRounds",
           "Budget", "check_repeat", "check_first_rounds", "first_rounds", "carry_control", "planned_processes",
           "planned_timed_shares", "iterations_for"]

AUTO = "auto"
#: Processes per cell before the first judgement: the fewest for which a t interval over processes
#: is worth anything (two give one degree of freedom and intervals of ±12 standard deviations).
AUTO_START = 3
#: Processes before the first judgement where every cell is timed paired and the workers are sized to fill a
#: budget (:func:`first_rounds`): a paired ratio's spread between processes shrinks little with a longer worker
#: (sd of the log ratio over 8 processes with 2.9 s and 1.0 s targets, bench/vs_peers_workloads.py: 0.0117 and
#: 0.0084 for 2 threads against 1, 0.0072 and 0.0098 for inference mode, 0.022 and 0.036 for FTZ/DAZ; Intel
#: Xeon, 2 vCPUs, quiet), and t's 97.5% quantile is 4.30 at 2 degrees of freedom and 2.78 at 4: the same time as
#: five shorter workers gives an interval 1.2-2.8x narrower by those figures.
PAIRED_AUTO_START = 5
#: Most processes ``--repeat auto`` gives one cell, whatever the budget.
AUTO_MAX_PROCESSES = 20


@dataclass(frozen=True)
class Slot:
    """What a round can run: cell ``index`` of the matrix, as the control's ``arm`` when not None; a paired cell's
    worker that also times the paired A/A control (:func:`carry_control`) ``carries_control``."""

    index: int
    arm: str | None = None
    carries_control: bool = False


def carry_control(slots: list[Slot], paired: frozenset[int] | set[int]) -> list[Slot]:
    """``slots`` with the paired A/A control's slot given to the first paired cell's worker among them, as its third
    arm: the control then costs no worker start of its own (a start is most of a small workload's worker), and
    is timed in a process that also times a cell. Unchanged where the round has no control slot or no paired
    cell to carry it."""
    control = Slot(0, PAIRED_ARM)
    carrier = next((s for s in slots if s.arm is None and s.index in paired), None)
    if control not in slots or carrier is None:
        return slots
    return [replace(s, carries_control=True) if s == carrier else s for s in slots if s != control]


def check_repeat(repeat) -> int | str:
    """``repeat`` as a positive count or ``"auto"``; anything else is refused."""
    if isinstance(repeat, str):
        if repeat.strip().lower() != AUTO:
            raise _validate.ArgumentError(f"repeat must be a positive integer or 'auto', got {repeat!r}")
        return AUTO
    return _validate.count("repeat", repeat, 1)


def first_rounds(every_cell_paired: bool, sized_to_budget: bool) -> int:
    """The rounds of every slot before ``--repeat auto`` first judges: :data:`PAIRED_AUTO_START` where every cell is
    timed paired and the workers are sized so that these rounds fill a budget (the same time in more, shorter
    workers), :data:`AUTO_START` otherwise (where the workload's iteration count, not a budget, sizes the workers,
    two more would each cost a start and their iterations; unpaired cells keep three: only paired ratios were
    measured so)."""
    return PAIRED_AUTO_START if every_cell_paired and sized_to_budget else AUTO_START


def check_first_rounds(first: int, name: str = "first_rounds") -> int:
    """``first`` as the rounds before ``--repeat auto`` first judges: at least :data:`AUTO_START`, at most
    :data:`AUTO_MAX_PROCESSES` (``name``: what the refusal calls it)."""
    first = _validate.count(name, first, AUTO_START)
    if first > AUTO_MAX_PROCESSES:
        raise _validate.ArgumentError(f"{name} must be at most {AUTO_MAX_PROCESSES}, got {first}")
    return first


def _order(slots: list[Slot], round_index: int, shuffle_seed: int | None) -> list[Slot]:
    """The round's slots in matrix order, or shuffled reproducibly per round with a seed."""
    if shuffle_seed is None:
        return list(slots)
    out = list(slots)
    random.Random(f"{shuffle_seed}:{round_index}").shuffle(out)
    return out


class FixedRounds:
    """``repeat`` rounds of every slot."""

    def __init__(self, slots: list[Slot], repeat: int, shuffle_seed: int | None = None,
                 paired: frozenset[int] = frozenset()) -> None:
        self.slots, self.repeat, self.shuffle_seed, self.paired = slots, repeat, shuffle_seed, paired
        self.stopped = None

    def planned(self) -> int:
        return len(carry_control(self.slots, self.paired)) * self.repeat

    def extra(self, round_index: int) -> bool:
        """Whether this round's workers come on top of :meth:`planned`."""
        return False

    def next_round(self, round_index: int, unresolved: Callable[[], set[int]]) -> list[Slot]:
        if round_index >= self.repeat:
            self.stopped = f"{self.repeat} processes per cell, as asked"
            return []
        return _order(self.slots, round_index, self.shuffle_seed)


class AutoRounds:
    """Rounds until every comparison is resolved (see the module doc)."""

    def __init__(self, slots: list[Slot], control_slots: list[Slot], shuffle_seed: int | None = None,
                 paired: frozenset[int] = frozenset(), paired_control: tuple[Slot, ...] = (),
                 first: int = AUTO_START) -> None:
        self.slots, self.control_slots, self.shuffle_seed = slots, control_slots, shuffle_seed
        self.paired, self.paired_control, self.first = paired, paired_control, check_first_rounds(first)
        self.stopped = None

    @property
    def every_cell_paired(self) -> bool:
        """Whether every cell but the baseline is paired and no fresh-process control runs."""
        return (bool(self.paired) and not self.control_slots
                and all(s.index == 0 or s.index in self.paired for s in self.slots))

    def planned(self) -> int:
        per_round = len(carry_control(self.slots, self.paired))
        return (per_round - (1 if self.every_cell_paired else 0)) * self.first  # the baseline's own: see next_round

    def extra(self, round_index: int) -> bool:
        return round_index >= self.first

    def next_round(self, round_index: int, unresolved: Callable[[], set[int]]) -> list[Slot]:
        """Slots of round ``round_index``; ``unresolved()`` gives the cell indices still unsettled."""
        if round_index < self.first:
            # Every cell paired: each paired worker times the baseline as its arm A, for its row and counters.
            slots = [s for s in self.slots if not (self.every_cell_paired and s == Slot(0))]
            return _order(slots, round_index, self.shuffle_seed)
        if round_index >= AUTO_MAX_PROCESSES:
            self.stopped = f"{AUTO_MAX_PROCESSES} processes per cell, the most --repeat auto runs"
            return []
        open_cells = unresolved()
        if not open_cells:
            self.stopped = "every comparison resolved"
            return []
        # The baseline cell runs as the control's two arms (both, or the control is left unpaired). A
        # baseline already settled gets none: run 1 of resnet_order on 2026-12-03 spent its fourth round's
        # budget on the two arms (19 s) and had none left for the open cell (train_then_eval, 19 s).
        # A paired cell's comparison needs only its own processes and the paired A/A control's: the
        # baseline's fresh processes run for it only where an unpaired cell (or the baseline alone) is open.
        paired_open = {i for i in open_cells if i in self.paired}
        unpaired_open = {i for i in open_cells if i not in self.paired and i != 0}
        baseline = 0 in open_cells and bool(unpaired_open or not paired_open)
        special = set(self.control_slots) | set(self.paired_control)
        chosen = [s for s in self.slots if s not in special
                  and (s.index in unpaired_open | paired_open or (s.index == 0 and baseline))]
        if baseline:
            chosen += self.control_slots
        if paired_open:
            chosen += self.paired_control
        return _order(chosen, round_index, self.shuffle_seed)


class Budget:
    """Seconds a run may take; trims a round to the workers expected to fit."""

    def __init__(self, seconds: float | None, started: float | None = None) -> None:
        self.seconds = None if seconds is None else _validate.seconds("budget_s", seconds)
        self.started = time.monotonic() if started is None else started
        self.exhausted = False

    def left(self) -> float | None:
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.started)

    def trim(self, slots: list[Slot], expected_s: Callable[[Slot], float | None],
             together: list[Slot] = ()) -> list[Slot]:
        """The slots whose expected durations fit what is left, in their round order (all without a budget).

        ``together`` (the control's two arms) go first when all of them fit, and
        none of them runs otherwise: both measure the run's noise, which every
        comparison is judged against; a round cut short that ran arm A alone left
        the control 3 and 2 processes.
        Then each other slot in round order that still fits. A slot with no
        estimate yet (never run) is let through: the first workers are what
        gives the estimates.
        """
        left = self.left()
        if left is None:
            return slots
        costs = {slot: expected_s(slot) or 0.0 for slot in slots}
        kept: set[Slot] = set()
        # Both arms owed this round: both run or neither (one alone would leave the control unpaired);
        # an arm whose partner already ran this round (a resumed run) is a slot like any other.
        paired = set(together) if len(together) > 1 and all(s in costs for s in together) else set()
        if paired and sum(costs[s] for s in paired) <= left:
            kept.update(paired)
            left -= sum(costs[s] for s in paired)
        elif paired:
            self.exhausted = True
        for slot in slots:
            if slot in kept or slot in paired:
                continue
            if costs[slot] > left:
                self.exhausted = True
                continue
            kept.add(slot)
            left -= costs[slot]
        return [slot for slot in slots if slot in kept]

    def fits(self, expected_s: float | None) -> bool:
        """Whether a worker expected to take ``expected_s`` (None: not known yet) still fits what is left;
        one that does not marks the budget exhausted."""
        left = self.left()
        if left is None or expected_s is None or expected_s <= left:
            return True
        self.exhausted = True
        return False


def planned_processes(cells: int, repeat: int | str, control: bool, paired: int = 0, first: int = AUTO_START) -> int:
    """The workers of a run's first rounds: every one of ``cells`` (the baseline's included; and the control's
    second arm) ``repeat`` times, or ``first`` times under ``--repeat auto`` (later rounds fit what the
    budget leaves). The paired A/A control of ``paired`` cells is carried in their workers; where they are every
    cell but the baseline, ``--repeat auto`` runs no process of the baseline's own (:class:`AutoRounds`)."""
    per_slot = first if repeat == AUTO else int(repeat)
    if repeat == AUTO and paired and paired == cells - 1 and not control:
        return paired * per_slot
    return (cells + (1 if control else 0)) * per_slot


def planned_timed_shares(cells: int, repeat: int | str, control: bool, paired: int = 0,
                         first: int = AUTO_START) -> float:
    """The timed work of :func:`planned_processes`' workers, in workers' worth: where a cell is paired, each
    round's worker that carries the paired A/A control times :data:`~.paired.CARRIER_SCALE` as much."""
    workers = planned_processes(cells, repeat, control, paired, first)
    if not paired:
        return float(workers)
    return workers + (CARRIER_SCALE - 1.0) * (first if repeat == AUTO else int(repeat))


def iterations_for(seconds: float, processes: int, iteration_s: float, start_s: float, most: int,
                   shares: float | None = None) -> int:
    """Timed iterations per worker so that ``processes`` workers fit in ``seconds``, each ``start_s`` to start
    and finish plus its iterations of ``iteration_s`` (``shares``: their timed work in workers' worth, where
    some time more than others: :func:`planned_timed_shares`): at most ``most``, and never under
    :data:`~benchctl._workloads.user.MIN_ITERATIONS` (the budget then runs fewer workers, not shorter ones)."""
    if processes < 1 or iteration_s <= 0:
        return most
    per_worker = (seconds - processes * max(start_s, 0.0)) / (shares or processes)
    return max(MIN_ITERATIONS, min(most, math.floor(per_worker / iteration_s)))
