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
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from .probe import PROBE, ProfilerFacts
from .setting import PROFILER

__all__ = ["FIX", "ProfilerLeftOn", "CAUSES"]

#: What the user changes when the profiler is the cause.
FIX = ("profile only the steps you look at: remove the profiler context from the loop, or give "
       "torch.profiler.profile a schedule (wait/warmup/active) so that most steps run unrecorded")


class ProfilerLeftOn(Cause):
    name = PROFILER.name
    order = 140
    title = "the autograd profiler left on"
    probe = probe_of(PROFILER)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen: ProfilerFacts | None = facts.of(PROBE)
        if seen is None:
            return None  # its iterations were not watched: nothing rules it out
        return None if seen.seen_on else "no profiler session ran over the probe worker's timed iterations"

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return self.not_run(ctx, ctx.probe_cell(self.probe))
        cell, cmp = probed
        seen: ProfilerFacts | None = ctx.facts.of(PROBE) if ctx.facts else None
        readback = ctx.readback(cell, PROFILER.name) or {}
        phrase = PROFILER.facts_phrase(readback)
        read = f"; {phrase}" if phrase else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"profiler": None if seen is None else {"starts": seen.starts,
                                                                       "on_before": seen.on_before},
                                "readback": readback})
        on = seen.text() if seen is not None and seen.seen_on else None
        if cmp.faster and on is None and not readback.get("refused"):
            return self.finding(ctx, cmp, f"with the profiler kept off it is {cmp.effect_text()}{read}, yet no "
                                          "profiler session was seen: the mechanism is unconfirmed",
                                Status.UNCONFIRMED, **fields)
        if cmp.faster:
            why = f"{on}{read}" if on else phrase  # the readback is the evidence where the probe saw none
            return self.finding(ctx, cmp, f"with the profiler kept off it is {cmp.effect_text()}; {why}: "
                                          f"{mechanism(PROFILER)}; the fix: {FIX}", Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, "the profiler kept off", suffix=read + (f"; {on}" if on else ""), **fields)


CAUSES = (ProfilerLeftOn(),)
