"""Cause: autocast casting the weights anew in every call.

Inference written as ``with torch.autocast(...): model(x)`` in each call casts every float32 weight to the lower
precision in every call: autocast caches the casts of parameters, but clears the cache when its outermost block
exits. The probe worker counts those clears over its profiled call (:mod:`.probe`): with none, or where the call
computes gradients (training changes the weights between calls, so each call must cast them anew), the cause is out
before any cell runs. The probe is ``autocast_cache=kept``, the cache kept from one timed call to the next
(:mod:`.control`), which is what one autocast block around all the calls, or a model cast once, gives.
"""

from __future__ import annotations

from ..._results.facts import Facts, OpRow
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_text
from ..recording.probe import PROBE as AUTOGRAD
from .probe import PROBE, AutocastFacts
from .setting import AUTOCAST_CACHE

__all__ = ["CASTS", "FIX", "AutocastRecast", "CAUSES"]

#: The ops a cast runs: their share of the profiled call's op time is quoted beside the clears.
CASTS = ("aten::_to_copy", "aten::copy_")
#: What the user changes when the recasts are the cause.
FIX = ("for inference, cast the model once to the lower precision (model.to(torch.bfloat16) or .half()) instead of "
       "autocasting each call, or enter one autocast block around all the calls (its cache then lives from one call "
       "to the next)")


def _seen(facts: Facts | None) -> AutocastFacts | None:
    return facts.of(PROBE) if facts is not None else None


def _casts(row: OpRow) -> bool:
    return row.op in CASTS


class AutocastRecast(Cause):
    name = "autocast_cache"
    order = 135
    title = "autocast casting the weights anew in every call"
    probe = probe_of(AUTOCAST_CACHE)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="there is no call to keep autocast's cache across")
        if not seen.cleared:
            return seen.none_text()
        autograd = facts.of(AUTOGRAD)
        if autograd is not None and autograd.known and autograd.computes_gradients:
            return (f"{autograd.gradients_text()}: training changes its weights between calls, so each call must "
                    "cast them anew")
        return None

    def _evidence(self, facts: Facts | None) -> str | None:
        seen = _seen(facts)
        if seen is None or not seen.cleared:
            return None
        share = facts.op_share(_casts) if facts is not None else None
        casts = "" if share is None else f", and casts ({', '.join(CASTS)}) took {share:.0%} of its op time"
        return seen.text() + casts

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        cell = ctx.probe_cell(self.probe)
        if probed is None:
            return self.unmeasured(ctx, cell, "with autocast's cache kept across calls")
        cell, cmp = probed
        evidence = self._evidence(ctx.facts)
        read = self.readback_suffix(ctx, cell, AUTOCAST_CACHE)
        seen = _seen(ctx.facts)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"autocast_cache": None if seen is None else seen.clears,
                                "readback": ctx.readback(cell, AUTOCAST_CACHE.name) or {}})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"with autocast's cache kept across calls it is {cmp.effect_text()}{read}, "
                                          "yet the cache was not cleared in its profiled call: the mechanism is "
                                          "unconfirmed", Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with autocast's cache kept across calls it is {cmp.effect_text()}; "
                                          f"{evidence}{read}: {mechanism(AUTOCAST_CACHE)}; the fix: {FIX}",
                                Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, "autocast's cache kept across calls",
                              suffix=read + (f"; {evidence}" if evidence else ""), **fields)


CAUSES = (AutocastRecast(),)
