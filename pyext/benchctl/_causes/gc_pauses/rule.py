"""Cause: Python's cyclic garbage collector pausing the calls.

A call that allocates many container objects (dicts, lists, tuples, class instances, tensors) while many stay alive
(a history list that grows each call, a cache, a dataset held as Python objects) makes the collector run a pass every
few hundred allocations, each walking the objects it tracks: the time goes to the collector, not to the code's own
lines. The probe worker counts and times the passes over its timed iterations (:mod:`.probe`): where they took under
:data:`NEGLIGIBLE_SHARE` of the time, or the code turned the collector off itself, the cause is out before any cell
runs. The probe is ``gc=off``, the collector off across the timed calls (:mod:`.control`), in fresh processes of its
own: a timing probe, since the garbage of cycles then waits for a pass after them.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._switched_cause import SwitchedCause
from .probe import PROBE, GcFacts
from .setting import GC

__all__ = ["NEGLIGIBLE_SHARE", "FIX", "TIMING_ONLY", "GcPauses", "CAUSES"]

#: The collector's own passes under this share of the timed iterations' time cannot explain it: out before running.
NEGLIGIBLE_SHARE = 0.05
#: What the user changes when the collector's passes are the cause.
FIX = ("keep fewer container objects alive across calls (a list that grows each call, Python objects where one "
       "tensor or array would do), call gc.freeze() once setup is done (what is alive then leaves the collector's "
       "passes), or collect less often (gc.set_threshold with a larger first threshold)")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = "a timing probe: the garbage of reference cycles waits for a pass after the calls"


class GcPauses(SwitchedCause):
    name = "gc"
    order = 165
    title = "Python's garbage collector pausing the calls"
    setting = GC
    watch = PROBE
    under = "with the collector off"
    switched = "the collector off"
    unseen = "its passes were not counted"
    unwatched = "its passes over the calls were not counted"
    fix = FIX
    timing_only = TIMING_ONLY

    def rule_out(self, facts: Facts, seen: GcFacts) -> str | None:
        if not seen.enabled:
            return "the code turned the collector off itself (gc.disable()): it ran no pass of its own"
        if seen.share < NEGLIGIBLE_SHARE:
            return f"{seen.text()}: under {NEGLIGIBLE_SHARE:.0%}"
        return None


CAUSES = (GcPauses(),)
