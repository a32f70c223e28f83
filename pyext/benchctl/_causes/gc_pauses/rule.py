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
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_text
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


def _seen(facts: Facts | None) -> GcFacts | None:
    return facts.of(PROBE) if facts is not None else None


class GcPauses(Cause):
    name = "gc"
    order = 165
    title = "Python's garbage collector pausing the calls"
    probe = probe_of(GC)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="its passes over the calls were not counted")
        if not seen.enabled:
            return "the code turned the collector off itself (gc.disable()): it ran no pass of its own"
        if seen.share < NEGLIGIBLE_SHARE:
            return f"{seen.text()}: under {NEGLIGIBLE_SHARE:.0%}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        cell = ctx.probe_cell(self.probe)
        if probed is None:
            return self.unmeasured(ctx, cell, "with the collector off")
        cell, cmp = probed
        seen = _seen(ctx.facts)
        evidence = seen.text() if seen is not None else None
        read = self.readback_suffix(ctx, cell, GC)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"gc": None if seen is None else ctx.facts.to_json()["probed"].get(PROBE.key),
                                "readback": ctx.readback(cell, GC.name) or {}})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"with the collector off it is {cmp.effect_text()} ({TIMING_ONLY}){read}, "
                                          "yet its passes were not counted: the mechanism is unconfirmed",
                                Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with the collector off it is {cmp.effect_text()} ({TIMING_ONLY}); "
                                          f"{evidence}{read}: {mechanism(GC)}; the fix: {FIX}", Status.CAUSE,
                                **fields)
        return self.not_found(ctx, cmp, "the collector off", suffix=read + (f"; {evidence}" if evidence else ""),
                              **fields)


CAUSES = (GcPauses(),)
