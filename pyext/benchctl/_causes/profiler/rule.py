"""Cause: torch's autograd profiler left on around the work.

A ``torch.profiler.profile()`` (or ``torch.autograd.profiler.profile()``, ``emit_nvtx()``) wrapped around
a training step to look at it once, then left in the code, records every op's event, inputs and time
on every step: reports have training several times slower until it was removed. The probe worker
counts the sessions the code starts over its timed iterations, and whether one was already recording
as they began (:mod:`.probe`): with none, the cause is out before any cell runs. The probe is
``profiler=off``, every start refused (:mod:`.control`) and read back; the evidence is the time falling
with it while the code was seen starting the profiler.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.rules import Context
from ..._switched_cause import KeptCause
from .probe import PROBE, ProfilerFacts
from .setting import PROFILER

__all__ = ["FIX", "ProfilerLeftOn", "CAUSES"]

#: What the user changes when the profiler is the cause.
FIX = ("profile only the steps you look at: remove the profiler context from the loop, or give "
       "torch.profiler.profile a schedule (wait/warmup/active) so that most steps run unrecorded")


class ProfilerLeftOn(KeptCause):
    name = PROFILER.name
    order = 140
    title = "the autograd profiler left on"
    setting = PROFILER
    watch = PROBE
    under = "with the profiler kept off"
    switched = "the profiler kept off"
    unseen = "no profiler session was seen"
    fix = FIX

    def rule_out(self, facts: Facts, seen: ProfilerFacts) -> str | None:
        return None if seen.seen_on else "no profiler session ran over the probe worker's timed iterations"

    def confirms(self, seen: ProfilerFacts) -> bool:
        return seen.seen_on

    def evidence_json(self, ctx: Context) -> dict | None:
        seen = self.seen(ctx.facts)
        return None if seen is None else {"starts": seen.starts, "on_before": seen.on_before}


CAUSES = (ProfilerLeftOn(),)
