"""Cause: autocast casting the weights anew in every call.

Inference written as ``with torch.autocast(...): model(x)`` in each call casts every float32 weight to the lower
precision in every call: autocast caches the casts of parameters, but clears the cache when its outermost block
exits. The probe worker counts those clears over its profiled call (:mod:`.probe`): with none, or where the call
computes gradients (training changes the weights between calls, so each call must cast them anew), the cause is out
before any cell runs. The probe is ``autocast_cache=kept``, the cache kept from one timed call to the next
(:mod:`.control`), which is what one autocast block around all the calls, or a model cast once, gives.

Autocast caches only the casts of weights that require grad, outside inference mode: a frozen model
(``requires_grad_(False)``) or one run under ``torch.inference_mode()`` is cast anew at every use, inside one block
too, and keeping the cache changes nothing. Where such weights are at least half of those the probe worker saw its
modules use under autocast, the cause is not ruled out for want of clears, and a probe cell that is not faster
leaves it open (``?``) with that mechanism and its fix, rather than "not the cause". In training, where frozen weights
(a fine-tuned head on a frozen backbone) are at least half of those cast and the casts at least 5% of the op time,
the cause is open on that evidence alone, with its fix (cast the frozen part once): no probe runs, since a cache kept
across training steps would hand the next step stale casts of the weights it trains.
"""

from __future__ import annotations

import dataclasses

from ..._results.facts import Facts, OpRow
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._switched_cause import SwitchedCause
from ..half.rule import HALF
from ..recording.probe import PROBE as AUTOGRAD
from .probe import PROBE, AutocastFacts
from .setting import AUTOCAST_CACHE

__all__ = ["CASTS", "FIX", "LEAVE_OUT", "FIX_WHERE_SLOWER", "UNCACHED", "FROZEN_SHARE", "FIX_FROZEN", "FIX_UNCACHED",
           "AutocastRecast", "CAUSES"]

#: The ops a cast runs: their share of the profiled call's op time is quoted beside the clears.
CASTS = ("aten::_to_copy", "aten::copy_")
#: What the user changes when the recasts are the cause.
FIX = ("for inference, cast the model once to the lower precision (model.to(torch.bfloat16) or .half()) instead of "
       "autocasting each call, or enter one autocast block around all the calls (its cache then lives from one call "
       "to the next)")
#: The same where the lower precision's own ops run slower than float32 on this CPU (the half cause names it): casting
#: the model to it once would keep that cost.
#: Where the lower precision's own ops run slower than float32 on this CPU (the half cause names it).
LEAVE_OUT = "leave autocast out: this CPU runs its lower precision's ops slower than float32 (see half)"
FIX_WHERE_SLOWER = ("enter one autocast block around all the calls (its cache then lives from one call to the next), "
                    f"or {LEAVE_OUT}")

#: Why keeping the cache cannot remove the casts of weights autocast does not cache.
UNCACHED = ("autocast keeps the casts only of weights that require grad, outside inference mode, so it casts those "
            "anew at every use, inside one autocast block too, and keeping its cache across calls cannot remove them")
#: The least share of op time in casts that makes a training call's frozen weights' recasts worth naming.
FROZEN_SHARE = 0.05
#: The fix for frozen weights in training: cast them once, autocast left to the parts that train.
FIX_FROZEN = ("cast the frozen modules once to the lower precision (frozen_part.to(torch.bfloat16) or .half()), "
              "leaving autocast to the parts that train")
#: The fix for them: no autocast over those weights.
FIX_UNCACHED = ("for inference, cast the model once to the lower precision (model.to(torch.bfloat16) or .half()) and "
                "leave autocast out")


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
        if not seen.cleared and not seen.mostly_uncached:
            return seen.none_text()
        trains = _trains(facts)
        if trains is not None and not _frozen_recast(facts, seen):
            return f"{trains}: training changes its weights between calls, so each call must cast them anew"
        return None

    def probes(self, facts: Facts | None) -> list[dict]:
        # In training the cache kept across calls would hand the weights it trains to the next call as they were
        # cast before the update, and it cannot keep the frozen ones' casts: there is nothing to time.
        return [] if facts is not None and _trains(facts) else [self.probe]

    def fix_for(self, facts: Facts | None) -> str:
        return FIX_WHERE_SLOWER if HALF.named(facts) else FIX

    def evidence(self, facts: Facts | None) -> str | None:
        seen = self.seen(facts)
        if seen is None or not seen.cleared:
            return None
        return seen.text() + _casts_share(facts)

    def judge_phase(self, ctx: Context) -> Finding | None:
        seen = self.seen(ctx.facts)
        if ctx.facts is not None and _trains(ctx.facts):
            return self._frozen_in_training(ctx, seen)
        found = super().judge_phase(ctx)
        if found is None or found.status is Status.CAUSE or seen is None or not seen.mostly_uncached:
            return found
        fix = LEAVE_OUT if HALF.named(ctx.facts) else FIX_UNCACHED
        kept = ("" if found.comparison is None
                else f" (kept across calls its time ratio is {found.comparison.ratio_text()})")
        weights = {"cached": seen.cached, "frozen": seen.frozen, "inference": seen.inference}
        return dataclasses.replace(found, status=Status.UNCONFIRMED, evidence={**found.evidence, "weights": weights},
                                   message=(f"{self.title}: {seen.uncached_text()}{_casts_share(ctx.facts)}: "
                                            f"{UNCACHED}{kept}; no setting here removes those casts, so the fix is "
                                            f"not measured: {fix}"))

    def _frozen_in_training(self, ctx: Context, seen: AutocastFacts | None) -> Finding | None:
        """A training call whose frozen weights autocast casts anew at every step (:func:`_frozen_recast`): open, on the
        watch's evidence alone (no probe can keep those casts), with the fix; None in another phase."""
        if seen is None or ctx.phase != ctx.facts.profiled_phase() or not _frozen_recast(ctx.facts, seen):
            return None
        fix = LEAVE_OUT if HALF.named(ctx.facts) else FIX_FROZEN
        weights = {"cached": seen.cached, "frozen": seen.frozen, "inference": seen.inference}
        return self.finding(ctx, None, f"{seen.uncached_text()}{_casts_share(ctx.facts)}: {UNCACHED}; "
                                       f"{_trains(ctx.facts)}, and a cache kept across its steps would hand the next "
                                       f"step stale casts of the weights it trains, so no probe ran; the fix is not "
                                       f"measured: {fix}", Status.UNCONFIRMED, evidence={"weights": weights})

    def evidence_json(self, ctx: Context) -> int | None:
        seen = self.seen(ctx.facts)
        return None if seen is None else seen.clears


def _trains(facts: Facts) -> str | None:
    """Where the call computes gradients, the autograd census's words for it; None otherwise or where not known."""
    autograd = facts.of(AUTOGRAD)
    return autograd.gradients_text() if autograd is not None and autograd.computes_gradients else None


def _frozen_recast(facts: Facts, seen: AutocastFacts) -> bool:
    """Whether the frozen weights (not requiring grad) are at least half of those autocast cast, and their casts at
    least :data:`FROZEN_SHARE` of the op time: a fine-tuned head on a frozen backbone, under autocast at each step."""
    share = facts.op_share(_casts)
    return seen.frozen > 0 and seen.frozen >= seen.cached + seen.inference and share is not None \
        and share >= FROZEN_SHARE


def _casts_share(facts: Facts | None) -> str:
    share = facts.op_share(_casts) if facts is not None else None
    return "" if share is None else f", and casts ({', '.join(CASTS)}) took {share:.0%} of its op time"


CAUSES = (AutocastRecast(),)
