"""Cause: weights initialised in each call, by modules built (or their parameters reset) inside the timed call.

Building a module draws its weights from a random distribution (its ``reset_parameters``, through
``torch.nn.init``); built in every call, the model pays that draw every call, often more than its forward pass. No
setting can change the code, so the finding rests on the probe worker's timed iterations (:mod:`.probe`): the time
spent in torch.nn.init's functions against the iterations' own.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import EVIDENCE_ONLY, NOT_WATCHED, Cause
from .probe import PROBE, InitFacts

__all__ = ["NEGLIGIBLE_SHARE", "PART_SHARE", "DOMINANT_SHARE", "MECHANISM", "FIX", "WeightInit", "CAUSES"]

#: Under this share of the time, initialising weights cannot explain it: ruled out before running.
NEGLIGIBLE_SHARE = 0.05
#: From this share it explains part of the time (``?``) ...
PART_SHARE = 0.2
#: ... and from this share most of it (``*``).
DOMINANT_SHARE = 0.5
MECHANISM = ("a module built in the timed call (or reset there) draws its weights anew (torch.nn.init through its "
             "reset_parameters), in every call")
FIX = ("build the modules once, outside the timed call (the workload's setup), and reuse them; where each call "
       "needs fresh weights, load a state_dict saved once (load_state_dict copies it) instead of drawing them")


def _seen(facts: Facts | None) -> InitFacts | None:
    return facts.of(PROBE) if facts is not None else None


class WeightInit(Cause):
    name = "weight_init"
    order = 173
    title = "weights initialised in each call (modules built in the timed call)"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="no call shows the modules it builds")
        if not seen.init_calls:
            return (f"no weight was initialised over its timed iterations ({seen.modules:,} module"
                    f"{'s' * (seen.modules != 1)} built, no torch.nn.init call)")
        if seen.share < NEGLIGIBLE_SHARE:
            return f"{seen.text()}: under {NEGLIGIBLE_SHARE:.0%}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        called = ctx.facts.called_phase() if ctx.facts is not None else None  # whether or not it ran a torch op
        seen = _seen(ctx.facts) if ctx.phase == called else None
        if seen is None or not seen.init_calls:
            return None
        evidence = {"weight_init": ctx.facts.to_json()["probed"].get(PROBE.key), "share": seen.share}
        if seen.share < PART_SHARE:
            return self.finding(ctx, None, f"{seen.text()}: under {PART_SHARE:.0%}", Status.NOT_CAUSE,
                                evidence=evidence)
        if seen.share < DOMINANT_SHARE:
            return self.finding(ctx, None, f"{seen.text()}; under {DOMINANT_SHARE:.0%}, it explains part of the "
                                           f"time at most; the fix: {FIX}", Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{seen.text()}: {MECHANISM}; the fix: {FIX}; {EVIDENCE_ONLY}", Status.CAUSE,
                            evidence=evidence)


CAUSES = (WeightInit(),)
