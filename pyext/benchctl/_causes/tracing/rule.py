"""Cause: a trace or profile function left on.

``sys.settrace`` or ``sys.setprofile`` called at import or in a setup and left on (coverage started by the code or
by the tool that runs it, a debugger's tracer, a line tracer written to debug, cProfile enabled and never disabled)
is called by the interpreter on every Python call and line (and C call, for a profile function) of every later call:
torch's Python layers (each module call, each functional) pay with the user's code. The probe worker reads the
functions on over its timed iterations (:mod:`.probe`): with none on, the cause is out before any cell runs. The probe
is ``tracing=off``, each timed call with them taken off (:mod:`.control`), a timing probe only: a tracer that records
(coverage, a profiler) misses the calls it was taken off for.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._switched_cause import SwitchedCause
from .probe import PROBE, TracingFacts
from .setting import TRACING

__all__ = ["FIX", "TIMING_ONLY", "TracingLeftOn", "CAUSES"]

#: What the user changes when the tracer is the cause.
FIX = ("time it without the tracer: stop what set it before the timed code (sys.settrace(None), coverage's stop(), "
       "the profiler's disable()), or run it outside the debugger or coverage tool that sets one")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = "a timing probe: a tracer that records (coverage, a profiler) misses the calls it was taken off for"


class TracingLeftOn(SwitchedCause):
    name = TRACING.name
    order = 138
    title = "a trace or profile function left on"
    setting = TRACING
    watch = PROBE
    under = "with its trace and profile functions taken off"
    switched = "taking its trace and profile functions off"
    unseen = "no trace or profile function was seen on"
    unwatched = "there is no call to run with its trace and profile functions taken off"
    fix = FIX
    timing_only = TIMING_ONLY

    def rule_out(self, facts: Facts, seen: TracingFacts) -> str | None:
        return None if seen.on else seen.none_text()

    def confirms(self, seen: TracingFacts) -> bool:
        return seen.on


CAUSES = (TracingLeftOn(),)
