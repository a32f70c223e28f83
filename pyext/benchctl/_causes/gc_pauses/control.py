"""Python's cyclic garbage collector: its passes counted and timed over a block, or kept off across the timed calls.

CPython's collector runs a pass whenever allocations of container objects (lists, dicts, tuples, class instances,
tensors) outnumber deallocations past a threshold; each pass walks every tracked object of the generations it
collects, so a call that allocates many containers while many stay alive (a history list, a cache, a dataset of
Python objects) pays a pass every few hundred allocations, the oldest generation's across everything alive.
:func:`watching` counts the passes over a block and their time (``gc.callbacks``), and the code's own
``gc.collect()`` calls apart. :func:`off_calls` runs every later timed call of a user workload with the collector
disabled (:mod:`benchctl._timed_call`; a worker's ``gc=off`` cell), from the first such call until
:func:`restore_calls` turns it back on as the code had it; :func:`held` says whether every call so far ended with it
still off (the code did not turn it on again).
"""

from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from ... import _timed_call

__all__ = ["WHAT", "Passes", "watching", "disabled", "off_calls", "restore_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "gc=off"


@dataclass
class Passes:
    """Over a block: the collector's passes by generation and their seconds, the code's own ``gc.collect()`` calls
    (``explicit``, their passes included above) and seconds, the block's seconds, and as it ended whether the
    collector was on and how many objects it tracked."""

    passes: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    explicit: int = 0
    explicit_s: float = 0.0
    window_s: float = 0.0
    enabled: bool = True
    tracked: int = 0


@contextlib.contextmanager
def watching() -> Iterator[Passes]:
    """Count and time the collector's passes inside the block (a ``gc.callbacks`` entry) and the code's own
    ``gc.collect()`` calls (``gc.collect`` wrapped); the callback removed and ``gc.collect`` given back after it,
    also on an exception. The objects tracked are counted once, as it ends."""
    seen, started, own = Passes(), [0.0], gc.collect

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        seen.seconds += time.perf_counter() - started[0]
        generation = int(info.get("generation", 0))
        seen.passes[generation] = seen.passes.get(generation, 0) + 1

    def collect(*args: Any, **kwargs: Any) -> int:
        began = time.perf_counter()
        try:
            return own(*args, **kwargs)
        finally:
            seen.explicit += 1
            seen.explicit_s += time.perf_counter() - began

    began = time.perf_counter()
    gc.callbacks.append(callback)
    gc.collect = collect
    try:
        yield seen
    finally:
        gc.collect = own
        gc.callbacks.remove(callback)
        seen.window_s = time.perf_counter() - began
        seen.enabled = gc.isenabled()
        seen.tracked = len(gc.get_objects())


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """The collector off inside the block, and back as it was after it, also on an exception (what the block left
    uncollected is collected at the collector's next pass)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# Off from the first timed call to the switch back, not around each call; a call held where the collector was
# still off at its end.
_off_calls = _timed_call.SpanContext(WHAT, disabled, lambda _: gc.isenabled())


def off_calls() -> dict[str, Any]:
    """Run every later timed call with the collector off (counts start at zero; already so: kept); the state right
    after."""
    _off_calls.start()
    return state()


def restore_calls() -> dict[str, Any]:
    """The collector as the code had it again for the timed calls; the state right after."""
    _off_calls.stop()
    return state()


def enabled() -> bool:
    return _off_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran with the collector off and none turned it on again."""
    return _off_calls.all_held()


def state() -> dict[str, Any]:
    """``{"off", "calls", "held", "collector_on"}``: whether timed calls run with the collector off, how many did,
    how many held, and whether the collector is on now."""
    return {"off": enabled(), **_off_calls.counts(), "collector_on": gc.isenabled()}
