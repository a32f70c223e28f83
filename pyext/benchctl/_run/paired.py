"""Paired cells: a cell and the baseline timed in one process, switched between in balanced blocks.

A per-process median inherits the machine's state while that process ran (a neighbour's burst, a
VM whose speed moves between two levels); a ratio taken inside one process, of iterations run
alternately under both settings, cancels it. Where a cell differs from the baseline cell only in
settings that can be switched in a running process (:attr:`benchctl._setting.Setting.in_process`) and
whose effect does not outlast the switch (:attr:`~benchctl._setting.Setting.carries_over`),
:func:`pair_for` gives the :class:`Pair`: the worker starts as the baseline cell's would (its
environment, its settings applied), and :class:`PairedRecorder` switches the pair's settings
between the baseline's values (arm A) and the cell's (arm B) between timed iterations, in blocks
ordered A B B A (each arm as often first and last, so that a drift over the run falls on both), the
arms' letters rotated by the worker's repetition (B A A B in every other process: the first block
after a process's start runs slow more often than later ones, and the arm it falls on then differs
between processes, where the processes' interval sees it, instead of biasing every one alike):

* after each switch the iterations of :data:`SETTLE_S` (at least one, at most
  :data:`SETTLE_ITERATIONS`) are left out: the first ops after an FTZ broadcast or a new thread team
  run slow for a few calls;
* a block holds the steady iterations of :data:`BLOCK_S` (at least one, at most
  :data:`BLOCK_ITERATIONS`), so a long iteration alternates every iteration, each arm gets the same
  time, and a worker of a few dozen iterations of microseconds still holds blocks of both arms;
* every switch is read back (each setting's ``during``, where it has one) and timed, and each
  arm's settings are checked where each window of its iterations closes, as an unpaired worker's are
  (:class:`~benchctl._run.recorder.IterationWindow`: a window holds one run of an arm, never a switch).

The worker's result keeps arm B's iterations as the cell's phases (what every reader of a run reads)
and arm A's, the settling iterations and the schedule under ``pair``; the process gives one
paired ratio per phase (:func:`benchctl._results.queries.paired_medians`): the median, over each two
neighbouring runs of blocks (A then B, B then A), of their medians' ratio, so a burst of other load
that falls on a few blocks moves few of the ratios; the process stays the unit of the interval.

The paired A/A control is a third arm, C, of one paired cell's worker each round
(``carry_control``): arm A's values switched to again, the same switch and settling as arm B, in
blocks ordered :data:`PATTERN_WITH_CONTROL` (rotated by repetition as above; each arm's mean
position in a cycle of six blocks the same); that worker runs half as many iterations again
(:func:`carrier_args`). Its ratio C/A is taken as B/A is, from the same process, and
kept as the control's run (:meth:`PairedRecorder.split_control`): a control of its own processes
cost a round of worker starts for no more than this gives (explain's small plants: most of a
worker is its interpreter's start and torch's import). A worker given an empty pair (a
resumed file's control round) runs arms A and B with nothing switched, as before.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any


from .. import counters as _counters
from .. import settings
from .recorder import CountedRecorder, SettingWatch

__all__ = ["SETTLE_S", "BLOCK_S", "SETTLE_ITERATIONS", "BLOCK_ITERATIONS", "PATTERN", "PATTERN_WITH_CONTROL",
           "CONTROL_LETTER", "CARRIER_SCALE", "Pair", "pair_for", "rotated", "carrier_args", "PairedRecorder"]

#: Seconds of iterations left out after each switch (at least one iteration).
SETTLE_S = 0.001
#: Seconds of steady iterations a block aims at (at least one iteration). Short, so that a process holds many
#: blocks of each arm: with 25 ms blocks a worker of 30 iterations of 2 ms ran one A block then one B block
#: (a step in time, not an alternation), and a neighbour's burst that began between them fell on one arm only.
BLOCK_S = 0.004
#: At most this many iterations are left out after a switch, and a block holds at most this many steady ones:
#: with time alone, a worker of 30 iterations of 8 us (tests/planted/lazy_init.py) ran arm A only.
SETTLE_ITERATIONS = 2
BLOCK_ITERATIONS = 4
#: The arms of successive blocks, repeated: each arm as often before as after the other.
PATTERN = "ABBA"
#: With the control's arm C: each arm's mean position in the cycle is the same (2.5), so a drift over the process
#: falls on all three alike, and every cycle has A next to B and A next to C (each ratio is taken between
#: neighbouring runs of A and the other arm). A cycle of twelve blocks, ABCACBBCACBA, balanced only after all
#: twelve: a worker of 30 iterations of conv ran ten blocks, arm A's in the first and the fourth, and gave
#: `bench/aa_calibration.py --paired` intervals that held the median of all runs in 62% of runs.
PATTERN_WITH_CONTROL = "ABCCBA"
#: The letter of the control's arm in a worker that carries it.
CONTROL_LETTER = "C"
#: A worker that carries the control runs this many times the iterations (and the time target) it is given, so
#: that arms A and B keep what a two-arm worker gives them and arm C gets as much: with conv's 30 iterations
#: split three ways, `bench/aa_calibration.py --paired` gave bands of ±5-20% (median ±9%) where two-arm workers
#: gave a median of ±5%, and 4 of 20 runs ran out of budget unresolved.
CARRIER_SCALE = 1.5
_SETTLING = {"A": "a", "B": "b", "C": "c"}  # the schedule's letter for an iteration left out after a switch


@dataclass(frozen=True)
class Pair:
    """The settings a paired worker switches: arm A's values (the baseline cell's) and arm B's (the cell's).
    A name one arm does not give is switched to the setting's :attr:`~benchctl._setting.Setting.unapplied`
    value there, read in the worker where the workload's code has run. Both empty: the paired A/A control."""

    a: dict[str, Any] = field(default_factory=dict)
    b: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in settings.ordered(dict.fromkeys({**self.a, **self.b}))]

    @property
    def is_control(self) -> bool:
        return not self.names

    @property
    def gated(self) -> bool:
        """Whether a worker switching this pair goes through the contention gate: one of its settings runs the
        arms on different numbers of CPUs (:attr:`~benchctl._setting.Setting.changes_cpus_used`), so other
        load does not fall on both arms alike."""
        return any(settings.SETTINGS[name].changes_cpus_used for name in self.names)

    def to_json(self) -> dict:
        return {"a": dict(self.a), "b": dict(self.b)}

    @classmethod
    def from_json(cls, data: dict) -> "Pair":
        return cls(dict(data.get("a") or {}), dict(data.get("b") or {}))


def rotated(pattern: str, arms: str, rotation: int) -> str:
    """``pattern`` with each arm's letter replaced by the one ``rotation`` places after it in ``arms`` (cyclic):
    ``rotated("ABBA", "AB", 1) == "BAAB"``; a worker's repetition rotates its schedule (see the module doc)."""
    shift = rotation % len(arms)
    table = {arm: arms[(i + shift) % len(arms)] for i, arm in enumerate(arms)}
    return "".join(table[letter] for letter in pattern)


def carrier_args(args: dict) -> dict:
    """``args`` for a worker that carries the control: its ``iterations`` and ``seconds`` target, where the
    workload takes them, times :data:`CARRIER_SCALE`."""
    out = dict(args)
    if isinstance(out.get("iterations"), int) and not isinstance(out["iterations"], bool):
        out["iterations"] = math.ceil(out["iterations"] * CARRIER_SCALE)
    if isinstance(out.get("seconds"), (int, float)) and not isinstance(out["seconds"], bool) and out["seconds"]:
        out["seconds"] = out["seconds"] * CARRIER_SCALE
    return out


def pair_for(baseline: dict, cell: dict) -> Pair | None:
    """How ``cell`` is timed paired with ``baseline`` in one process, or None where it cannot be: a workload
    parameter differs, a setting that differs cannot be switched in a running process or its effect outlasts a
    switch (``pools``: the other pool's threads spin on), or a paired worker, which starts as the baseline's,
    would start with something no switch undoes (:func:`_start_stays`: ``pin=compact``'s team bound at start)."""
    base_settings, base_params = settings.split_cell(baseline)
    cell_settings, cell_params = settings.split_cell(cell)
    if base_params != cell_params:
        return None
    differ = sorted(name for name in set(base_settings) | set(cell_settings)
                    if base_settings.get(name) != cell_settings.get(name))
    if not differ or not all(settings.SETTINGS[name].in_process and not settings.SETTINGS[name].carries_over
                             for name in differ):
        return None
    if any(_start_stays(name, base_settings, cell_settings) for name in differ if name in base_settings):
        return None
    return Pair({n: base_settings[n] for n in differ if n in base_settings},
                {n: cell_settings[n] for n in differ if n in cell_settings})


def _start_stays(name: str, base_settings: dict, cell_settings: dict) -> bool:
    """Whether the baseline's value of setting ``name`` leaves in the paired worker's starting environment what
    switching to the cell's value would not undo: its own variables, unless its switch sets all they set
    (:attr:`~benchctl._setting.Setting.switch_undoes_environment`: ``threads``), and those of any other
    baseline setting that reads it (``pin=compact`` places as many threads as ``threads`` names)."""
    setting, value = settings.SETTINGS[name], base_settings[name]
    if not setting.switch_undoes_environment and (setting.environment(value, {}, base_settings) or setting.owns(value)):
        return True
    switched = {k: v for k, v in base_settings.items() if k != name}
    if name in cell_settings:
        switched[name] = cell_settings[name]
    try:
        return any(settings.SETTINGS[other].environment(v, {}, base_settings)
                   != settings.SETTINGS[other].environment(v, {}, switched)
                   for other, v in base_settings.items() if other != name)
    except settings.SettingError:  # another setting cannot start with the cell's value (fewer CPUs than threads)
        return True


class PairedRecorder(CountedRecorder):
    """A :class:`CountedRecorder` that switches ``pair``'s settings between arms A and B before timed iterations
    (see the module doc). ``plan``: the baseline cell's settings the pair does not switch, checked as an
    unpaired worker's are. ``carry_control``: also arm C, the paired A/A control (arm A's values again).
    ``labels[phase]`` holds each recorded iteration's letter (``A``, ``B``, ``C``, or ``a`` / ``b`` / ``c``
    for one left out after a switch); :meth:`split` and :meth:`split_control` sort a worker's phases by it."""

    def __init__(self, group: _counters.CounterGroup | None, pair: Pair, plan: tuple | list = (),
                 carry_control: bool = False, rotation: int = 0) -> None:
        super().__init__(group, probe=False, plan=plan)
        self.pair = pair
        self.arms = "ABC" if carry_control else "AB"
        self.pattern = rotated(PATTERN_WITH_CONTROL if carry_control else PATTERN, self.arms, rotation)
        self.labels: dict[str, list[str]] = {}
        self.values: dict[str, dict[str, Any]] = {}  # arm -> {name: value}, resolved at the first iteration
        self.applied: dict[str, dict[str, Any]] = {arm: {} for arm in self.arms}  # each setting's first switch
        self.watches: dict[str, dict[str, SettingWatch]] = {}
        # arm -> {name: {"calls", "held"}}: a setting held by the calls counts them from its switch on; the spans
        # an arm left, summed, so that its readback counts every timed call of the arm (held_calls).
        self._left_calls: dict[str, dict[str, dict[str, int]]] = {arm: {} for arm in self.arms}
        self.switches: list[dict] = []
        self.arm: str | None = None  # the arm the process holds now
        self._block = 0
        self._block_s = 0.0  # steady seconds in the block so far
        self._block_n = 0  # steady iterations in the block so far
        self._settling = False
        self._settled_s = 0.0  # seconds left out since the last switch
        self._settled_n = 0  # iterations left out since the last switch
        self._label = ""  # the letter of the iteration running

    # --- the schedule ---------------------------------------------------------------------------------------

    def _resolve(self) -> None:
        """Each arm's values: the pair's, else the setting's unapplied value as the process holds it now."""
        for arm in self.arms:
            given = self.pair.b if arm == "B" else self.pair.a  # the control's arm C holds arm A's values
            self.values[arm] = {name: given[name] if name in given else settings.SETTINGS[name].unapplied
                                for name in self.pair.names}
            self.watches[arm] = {name: SettingWatch(settings.SETTINGS[name], value)
                                 for name, value in self.values[arm].items()
                                 if settings.SETTINGS[name].during(value) is not None}

    def held_calls(self, arm: str, name: str, observed: dict) -> dict:
        """``observed`` (``name``'s readback as ``arm``, a setting held by the calls) with ``calls`` and ``held``
        counted over every span of the arm, not only the one since its last switch."""
        left = self._left_calls[arm].get(name, {})
        if not isinstance(observed, dict):  # a readback without counts: nothing to add to
            return observed
        return {**observed, **{k: int(observed.get(k) or 0) + left.get(k, 0) for k in ("calls", "held")}}

    def _leave(self, arm: str) -> None:
        """Before a switch away from ``arm``: add what its settings held by the calls counted in this span."""
        for name, setting, value in settings.ordered(self.values[arm]):
            now = setting.readback(value) if setting.held_by_calls else None
            if isinstance(now, dict):
                total = self._left_calls[arm].setdefault(name, {"calls": 0, "held": 0})
                for key in total:
                    total[key] += int(now.get(key) or 0)

    def switch_to(self, arm: str) -> None:
        """Move the process to ``arm``'s values (outside any timed iteration), read back and timed."""
        if not self.values:
            self._resolve()
        if self.arm is not None and self.arm != arm:
            self._leave(self.arm)
        started = time.perf_counter()
        for name, setting, value in settings.ordered(self.values[arm]):
            observed = setting.switch(value)
            self.applied[arm].setdefault(name, observed.to_json() if hasattr(observed, "to_json") else observed)
        took = time.perf_counter() - started
        # A setting held by the calls has none to read yet: its during() would read "not held" at every switch.
        seen = {name: setting.during(value) for name, setting, value in settings.ordered(self.values[arm])
                if not setting.held_by_calls}
        missed = {name: now for name, now in seen.items() if now is not None and now != self.values[arm][name]}
        self.switches.append({"to": arm, "seconds": took, **({"not_held": missed} if missed else {})})
        self.arm = arm

    def _next_label(self) -> str:
        """The letter of the iteration about to run, switching first where its block's arm differs."""
        want = self.pattern[self._block % len(self.pattern)]
        if want != self.arm:
            self.switch_to(want)
            self._settling = True
            self._settled_s, self._settled_n = 0.0, 0
        return _SETTLING[want] if self._settling else want

    def _recorded(self, label: str, seconds: float) -> None:
        # Time ends a settling stretch and a block, so that each arm gets the same time whatever its iterations
        # take (a fixed count would give the slower arm most of the process); a count caps both where
        # iterations are short.
        if label in _SETTLING.values():
            self._settled_s += seconds
            self._settled_n += 1
            self._settling = self._settled_s < SETTLE_S and self._settled_n < SETTLE_ITERATIONS
            return
        self._block_s += seconds
        self._block_n += 1
        if self._block_s >= BLOCK_S or self._block_n >= BLOCK_ITERATIONS:
            self._block, self._block_s, self._block_n = self._block + 1, 0.0, 0

    def _check_settings(self) -> None:
        """The cell's other settings' in-run checks and those of the arm the window ran, where it closes (before any
        switch to the next arm)."""
        super()._check_settings()
        for watch in self.watches.get(self.arm, {}).values():
            watch.sample()

    def _kind(self, phase: str) -> Any:
        """A window of iterations may not span a change of their phase or their arm. It holds the arm's iterations
        left out after the switch (their share of it is not kept) and its steady ones: a window closed and another
        opened between them would leave the steady block's first iteration after two reads of the counters (a gap
        of 20 us, after which a 7 us multiply ran 2x slow on an Intel Xeon VM: :data:`.recorder.COUNTER_WINDOW_NS`),
        where the left-out iterations are there to take what the switch leaves."""
        return phase, self._label.upper()

    def _begin(self, phase: str) -> Any:
        # A switch, where the block's arm changes: before the iteration's clock.
        self._label = label = self._next_label()
        started = time.perf_counter()
        super()._begin(phase)
        return label, started

    def _end(self, phase: str, ticks: int, begun: Any) -> None:
        label, started = begun
        super()._end(phase, ticks, None)
        self.labels.setdefault(phase, []).append(label)
        self._recorded(label, time.perf_counter() - started)
        if self._coming().upper() != label.upper():
            self._window.close()  # now, so that the switch to the next arm is in no window

    def _coming(self) -> str:
        """The letter of the next iteration, as :meth:`_next_label` will give it (without switching)."""
        want = self.pattern[self._block % len(self.pattern)]
        return _SETTLING[want] if want != self.arm or self._settling else want

    def timed_enough(self, phase: str, least: int) -> bool:
        """Whether each arm has ``least`` steady iterations in ``phase``: a time target that stopped a worker after
        the first few iterations (settling ones, arm A's first block) left no arm B to pair with, and the worker
        gave no ratio (vs_peers' 0.05 s processes: 'aAA', 3 processes of A and none of B)."""
        labels = self.labels.get(phase, [])
        return all(labels.count(arm) >= least for arm in self.arms)

    # --- what the worker keeps ------------------------------------------------------------------------------

    def split(self, phases: dict[str, dict]) -> tuple[dict[str, dict], dict]:
        """(arm B's phases, as a run's phases; the ``pair`` record: arm A's phases, the left-out iterations,
        the schedule, the switches) from the worker's per-phase output of every recorded iteration."""
        b_phases, a_phases, settling, schedule = {}, {}, {}, {}
        for phase, data in phases.items():
            labels = self.labels.get(phase, [])
            schedule[phase] = "".join(labels)
            readings = {k: v for k, v in data.items() if k not in ("ticks", "ns", "counters")}
            b_phases[phase] = {**_pick(data, labels, "B"), **readings}
            a_phases[phase] = _pick(data, labels, "A")
            settling[phase] = _pick(data, labels, "a", "b")["ns"]
        return b_phases, {
            "pair": self.pair.to_json(),
            "values": self.values,
            "phases": a_phases,
            "settling_ns": settling,
            "schedule": schedule,
            "switches": len(self.switches),
            "switch_s": [s["seconds"] for s in self.switches],
            "not_held": [s for s in self.switches if "not_held" in s and s["to"] != CONTROL_LETTER],
            "applied_a": self.applied["A"],
            "during_a": {name: watch.to_json() for name, watch in self.watches.get("A", {}).items()},
            "settle_s": SETTLE_S,
            "block_s": BLOCK_S,
            "settle_iterations": SETTLE_ITERATIONS,
            "block_iterations": BLOCK_ITERATIONS,
            "pattern": self.pattern,
        }

    def split_control(self, phases: dict[str, dict], cell_pair: dict) -> tuple[dict[str, dict], dict] | None:
        """(arm C's phases, the control's ``pair`` record) of a worker that carries the paired A/A control, as
        a paired control worker's run would hold them (its ``letter`` says which arm it compares with A), from
        the worker's ``phases`` and the cell's ``pair`` record :meth:`split` made of them (arm A, the schedule
        and the switches are the process's, shared); None for one that does not."""
        if CONTROL_LETTER not in self.arms:
            return None
        c_phases, settling = {}, {}
        for phase, data in phases.items():
            labels = self.labels.get(phase, [])
            c_phases[phase] = _pick(data, labels, CONTROL_LETTER)
            settling[phase] = _pick(data, labels, "a", _SETTLING[CONTROL_LETTER])["ns"]
        return c_phases, {**cell_pair, "pair": Pair().to_json(), "letter": CONTROL_LETTER, "settling_ns": settling,
                          "not_held": [s for s in self.switches if "not_held" in s and s["to"] != "B"],
                          "applied_c": self.applied[CONTROL_LETTER],
                          "during_c": {name: watch.to_json()
                                       for name, watch in self.watches.get(CONTROL_LETTER, {}).items()}}


def _pick(data: dict, labels: list[str], *arms: str) -> dict:
    """The iterations of ``data`` (a phase's ticks, ns and per-iteration counters) whose letter is in ``arms``."""
    keep = [i for i, label in enumerate(labels) if label in arms]
    return {"ticks": [data["ticks"][i] for i in keep], "ns": [data["ns"][i] for i in keep],
            "counters": {event: [values[i] for i in keep] for event, values in (data.get("counters") or {}).items()}}
