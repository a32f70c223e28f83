"""Calibrated rounds: how the fixture times a callable with benchctl's tick clock.

A *round* is a block of ``k`` back-to-back calls timed as one interval; its
per-call time is the interval over ``k``. ``k`` is calibrated so that a round
lasts long enough that the clock's read cost and resolution are a negligible
share of it (:func:`round_target_ns`), and the number of rounds fills the
time budget within bounds, so that the statistics over rounds stay cheap.

The calls of a round are made by C code (``itertools.starmap`` consumed by a
``deque``), not by a Python loop, so a round adds no Python frame per call:
what is timed is the callable, plus the cost of calling it that any caller pays.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import clock

__all__ = ["PRECISION_FACTOR", "MAX_ROUNDS", "MAX_CALLS_PER_ROUND", "Target", "Series", "round_target_ns",
           "calibrate", "measure", "measure_pedantic"]

#: A round lasts at least this many times the clock's resolution (its read cost):
#: what is left of the read cost after subtracting it is then under 0.1% of a round.
PRECISION_FACTOR = 1000
#: Rounds per series at most: beyond this, rounds get longer instead of more numerous
#: (the bootstrap CI of the median costs time in proportion to the rounds).
MAX_ROUNDS = 1000
MAX_CALLS_PER_ROUND = 10_000_000
# Calibration steps before giving up on reaching the target (each at least doubles k).
_CALIBRATION_STEPS = 40
# A calibration jump aims this far past the target, so one more step is rarely needed.
_CALIBRATION_MARGIN = 1.2


class Target:
    """A callable with its arguments, and the last value it returned.

    ``round(k)`` gives a one-shot callable that makes ``k`` calls with no
    Python frame of its own (the deque keeps the last result);
    ``repeatable(k)`` gives one that can be called again and again, for a
    native loop over many rounds (one Python frame per round when k > 1).
    """

    def __init__(self, fn: Callable, args: tuple = (), kwargs: dict | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"the function to time must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.call = functools.partial(fn, **kwargs) if kwargs else fn
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self._last: deque = deque(maxlen=1)

    @property
    def result(self) -> Any:
        """What the last call returned (None before any call)."""
        return self._last[0] if self._last else None

    def round(self, k: int) -> Callable[[], None]:
        return functools.partial(self._last.extend, itertools.starmap(self.call, itertools.repeat(self.args, k)))

    def repeatable(self, k: int) -> Callable[[], Any]:
        if k == 1:
            return functools.partial(self.call, *self.args) if self.args else self.call

        def block(extend=self._last.extend, starmap=itertools.starmap, repeat=itertools.repeat,
                  call=self.call, args=self.args, k=k):
            extend(starmap(call, repeat(args, k)))

        return block


@dataclass
class Series:
    """One measured series: ticks per round of ``calls_per_round`` calls (read overhead subtracted)."""

    round_ticks: np.ndarray
    calls_per_round: int

    @property
    def ns(self) -> np.ndarray:
        """Nanoseconds per call, one value per round."""
        return clock.to_ns(self.round_ticks) / self.calls_per_round


def _time_once(fn: Callable[[], Any]) -> float:
    """Nanoseconds of one call of ``fn`` (a native read on each side)."""
    return float(clock.to_ns(clock.time_calls(fn, 1, 0))[0])


def _resolution_ns() -> float:
    info = clock.info()
    return max(1.0, float(info["chained_read_overhead_cycles"])) * 1e9 / info["frequency_hz"]


def round_target_ns(min_round_ns: float, max_time_ns: float, floor_ns: float = 0.0) -> float:
    """How long one round must last: the configured minimum, the clock's resolution times
    :data:`PRECISION_FACTOR`, the budget spread over :data:`MAX_ROUNDS`, and ``floor_ns``."""
    return max(min_round_ns, PRECISION_FACTOR * _resolution_ns(), max_time_ns / MAX_ROUNDS, floor_ns)


def calibrate(target: Target, round_ns: float) -> tuple[int, float]:
    """(calls per round, ns of the last calibration round): the fewest calls whose round lasts
    ``round_ns``. Each step times a round of ``k`` calls and scales ``k`` by what is missing."""
    k = 1
    floor = _resolution_ns()
    for _ in range(_CALIBRATION_STEPS):
        took = _time_once(target.round(k))
        if took >= round_ns:
            # One slow round (a cold cache, an interrupt) must not stop the search: a second one confirms.
            took = min(took, _time_once(target.round(k)))
        if took >= round_ns or k >= MAX_CALLS_PER_ROUND:
            return k, took
        grow = round_ns * _CALIBRATION_MARGIN / max(took, floor)
        k = min(MAX_CALLS_PER_ROUND, max(2 * k, math.ceil(k * grow)))
    return k, took


def _round_count(round_ns: float, max_time_ns: float, min_rounds: int) -> int:
    return int(min(MAX_ROUNDS, max(min_rounds, max_time_ns // max(round_ns, 1.0))))


def measure(target: Target, *, min_round_ns: float, max_time_ns: float, min_rounds: int,
            recorder=None, phase: str = "call") -> Series:
    """Call ``target`` once (its result is kept), calibrate, and time the rounds that fit the budget.

    With a ``recorder`` (an isolated worker's), each round is timed by
    ``recorder.iteration(phase)`` instead, so its counters come along; the
    rounds are then made long enough that the recorder's own cost inside the
    interval stays under 0.5% (see :func:`recorder_floor_ns`).
    """
    _time_once(target.round(1))  # the first call: imports, caches, lazy init; and the result
    floor = recorder_floor_ns() if recorder is not None else 0.0
    k, took = calibrate(target, round_target_ns(min_round_ns, max_time_ns, floor))
    rounds = _round_count(took, max_time_ns, min_rounds)
    if recorder is None:
        ticks = clock.time_calls(target.repeatable(k), rounds, 0)
    else:
        for _ in range(rounds):
            one = target.round(k)  # built outside the timed interval
            with recorder.iteration(phase):
                one()
        ticks = np.asarray(recorder.ticks[phase][-rounds:], dtype=np.int64)
    return Series(np.asarray(ticks, dtype=np.int64), k)


def recorder_floor_ns() -> float:
    """200 times what an empty ``rec.iteration()`` measures (its context-manager frames sit inside
    the interval), so that they cost under 0.5% of a round."""
    from .._run.recorder import Recorder

    probe = Recorder()
    for _ in range(50):
        with probe.iteration("probe"):
            pass
    return 200.0 * float(np.median(clock.to_ns(np.asarray(probe.ticks["probe"]))))


def measure_pedantic(target: Target, *, rounds: int, iterations: int, warmup_rounds: int,
                     setup: Callable | None, teardown: Callable | None = None, recorder=None,
                     phase: str = "call") -> Series:
    """Exactly ``warmup_rounds`` + ``rounds`` rounds of ``iterations`` calls, ``setup()`` before each
    and ``teardown(*args, **kwargs)`` after each (both untimed); no calibration. ``setup`` may return
    ``(args, kwargs)`` for the round; ``teardown`` gets the round's arguments."""
    ticks = []
    for i in range(warmup_rounds + rounds):
        call_target = target
        if setup is not None:
            made = setup()
            if made is not None:
                call_target = _target_from_setup(target, made)
        one = call_target.round(iterations)
        if i < warmup_rounds:
            one()
        elif recorder is None:
            ticks.append(int(clock.time_calls(one, 1, 0)[0]))
        else:
            with recorder.iteration(phase):
                one()
            ticks.append(int(recorder.ticks[phase][-1]))
        if teardown is not None:
            teardown(*call_target.args, **call_target.kwargs)
        if call_target is not target and i >= warmup_rounds:
            target._last.extend(call_target._last)
    return Series(np.asarray(ticks, dtype=np.int64), iterations)


def _target_from_setup(target: Target, made: Any) -> Target:
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], (tuple, list))
            and isinstance(made[1], dict)):
        raise TypeError(f"setup must return None or (args, kwargs), a tuple and a dict; it returned {made!r}")
    if target.args or target.call is not target.fn:
        raise TypeError("pedantic: pass args/kwargs either to pedantic or from setup, not both")
    return Target(target.fn, made[0], made[1])
