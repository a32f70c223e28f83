"""Cause: weights initialised in each call, by modules built (or their parameters reset) inside the timed call.

Building a module draws its weights from a random distribution (its ``reset_parameters``, through
``torch.nn.init``); built in every call, the model pays that draw every call, often more than its forward pass. No
setting can change the code, so the finding rests on the probe worker's timed iterations (:mod:`.probe`): the time
spent in torch.nn.init's functions against the iterations' own, judged as every share-judged cause is
(:mod:`benchctl._share_cause`).
"""

from __future__ import annotations

from ..._share_cause import ShareCause
from .probe import PROBE, InitFacts

__all__ = ["MECHANISM", "FIX", "WeightInit", "CAUSES"]

MECHANISM = ("a module built in the timed call (or reset there) draws its weights anew (torch.nn.init through its "
             "reset_parameters), in every call")
FIX = ("build the modules once, outside the timed call (the workload's setup), and reuse them; where each call "
       "needs fresh weights, load a state_dict saved once (load_state_dict copies it) instead of drawing them")


class WeightInit(ShareCause):
    name = "weight_init"
    order = 173
    title = "weights initialised in each call (modules built in the timed call)"
    watch = PROBE
    unwatched = "no call shows the modules it builds"
    mechanism = MECHANISM
    fix = FIX
    it = "it"

    def unseen(self, seen: InitFacts) -> str | None:
        if seen.init_calls:
            return None
        return (f"no weight was initialised over its timed iterations ({seen.modules:,} module"
                f"{'s' * (seen.modules != 1)} built, no torch.nn.init call)")


CAUSES = (WeightInit(),)
