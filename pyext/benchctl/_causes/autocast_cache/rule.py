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
from ..._results.rules import Context
from ..._switched_cause import SwitchedCause
from ..half.rule import HALF
from ..recording.probe import PROBE as AUTOGRAD
from .probe import PROBE, AutocastFacts
from .setting import AUTOCAST_CACHE

__all__ = ["CASTS", "FIX", "FIX_WHERE_SLOWER", "AutocastRecast", "CAUSES"]

#: The ops a cast runs: their share of the profiled call's op time is quoted beside the clears.
CASTS = ("aten::_to_copy", "aten::copy_")
#: What the user changes when the recasts are the cause.
FIX = ("for inference, cast the model once to the lower precision (model.to(torch.bfloat16) or .half()) instead of "
       "autocasting each call, or enter one autocast block around all the calls (its cache then lives from one call "
       "to the next)")
#: The same where the lower precision's own ops run slower than float32 on this CPU (the half cause names it): casting
#: the model to it once would keep that cost.
FIX_WHERE_SLOWER = ("enter one autocast block around all the calls (its cache then lives from one call to the next), "
                    "or leave autocast out: this CPU runs its lower precision's ops slower than float32 (see half)")


def _casts(row: OpRow) -> bool:
    return row.op in CASTS


class AutocastRecast(SwitchedCause):
    name = "autocast_cache"
    order = 135
    title = "autocast casting the weights anew in every call"
    setting = AUTOCAST_CACHE
    watch = PROBE
    under = "with autocast's cache kept across calls"
    switched = "autocast's cache kept across calls"
    unseen = "the cache was not cleared in its profiled call"
    unwatched = "there is no call to keep autocast's cache across"
    fix = FIX

    def rule_out(self, facts: Facts, seen: AutocastFacts) -> str | None:
        if not seen.cleared:
            return seen.none_text()
        autograd = facts.of(AUTOGRAD)
        if autograd is not None and autograd.known and autograd.computes_gradients:
            return (f"{autograd.gradients_text()}: training changes its weights between calls, so each call must "
                    "cast them anew")
        return None

    def fix_for(self, facts: Facts | None) -> str:
        return FIX_WHERE_SLOWER if HALF.named(facts) else FIX

    def evidence(self, facts: Facts | None) -> str | None:
        seen = self.seen(facts)
        if seen is None or not seen.cleared:
            return None
        share = facts.op_share(_casts) if facts is not None else None
        casts = "" if share is None else f", and casts ({', '.join(CASTS)}) took {share:.0%} of its op time"
        return seen.text() + casts

    def evidence_json(self, ctx: Context) -> int | None:
        seen = self.seen(ctx.facts)
        return None if seen is None else seen.clears


CAUSES = (AutocastRecast(),)
