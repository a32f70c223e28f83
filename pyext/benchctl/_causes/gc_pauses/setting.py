"""The ``gc`` setting: Python's cyclic garbage collector as the code leaves it, or off across the timed calls."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as collector

__all__ = ["Collector", "GC", "SETTINGS"]


class Collector(AroundCalls):
    """``gc``: Python's cyclic garbage collector as the workload's code leaves it (``code``), or off from the first
    timed call of a user workload until the switch back (``off``: :func:`benchctl._causes.gc_pauses.control.disabled`;
    the code's own ``gc.collect()`` calls still run)."""

    name = "gc"
    help = ("code | off: Python's cyclic garbage collector as the workload's code leaves it, or off across the timed "
            "calls of a callable or setup()/run(state) workload (its passes no longer run in them; cyclic garbage "
            "waits for the next pass after them; the code's own gc.collect() calls still run)")
    order = 50
    # Its counts of allocations go on rising while it is off, and the first pass after the switch back (a full one,
    # often) lands in the unchanged arm: paired, the gc_churn plant's A/A control read 0.50× [0.15, 1.63]. Timed in
    # fresh processes, never paired.
    carries_over = True
    probe = "off"
    control = collector
    held_words = "with the collector off"
    # No counter shows it: the cause reads the passes over the probe worker's timed iterations (its evidence).
    mechanism = ("Python's cyclic garbage collector walking every tracked container object (lists, dicts, class "
                 "instances, tensors) whenever allocations pass its threshold: the more objects stay alive, the longer "
                 "each pass")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with the collector off (off) or as the code left it (code).
        return collector.off_calls() if value == "off" else collector.restore_calls()


GC = Collector()
SETTINGS = (GC,)
