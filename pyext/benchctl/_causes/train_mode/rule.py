"""Cause: modules left in training mode in calls that compute no gradient.

A model built or trained and then timed (or served) without ``model.eval()`` does training work on every call:
``Dropout`` draws a random mask and scales by it, ``BatchNorm`` computes each batch's statistics and updates its
running ones, attention and transformer layers stay off their fused inference path. The probe worker counts the
module calls of its profiled call made in training mode in modules that compute differently there (:mod:`.probe`):
with none, or where the call computes gradients (then training mode is what it is for), the cause is out before
any cell runs. The probe is ``train_mode=eval``, each timed call with its modules in eval mode (:mod:`.control`),
a timing probe: what the call computes changes with it.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._switched_cause import SwitchedCause
from ..recording.probe import PROBE as AUTOGRAD
from .probe import PROBE, TrainModeFacts
from .setting import TRAIN_MODE

__all__ = ["FIX", "TIMING_ONLY", "TrainModeLeftOn", "CAUSES"]

#: What the user changes when training mode is the cause.
FIX = ("put the model in eval mode for inference (model.eval(); model.train() before training it again): Dropout then "
       "passes its input through and BatchNorm uses its running statistics, which is what inference should compute")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = "a timing probe: in eval mode the call computes other values (no random masks, running statistics)"


class TrainModeLeftOn(SwitchedCause):
    name = "train_mode"
    order = 131
    title = "modules left in training mode"
    setting = TRAIN_MODE
    watch = PROBE
    under = "with its modules in eval mode"
    switched = "eval mode"
    unseen = "no module that computes differently in training ran in training mode"
    unwatched = "there is no call to run with its modules in eval mode"
    fix = FIX
    timing_only = TIMING_ONLY

    def rule_out(self, facts: Facts, seen: TrainModeFacts) -> str | None:
        autograd = facts.of(AUTOGRAD)
        if autograd is not None and autograd.known and autograd.computes_gradients:
            return f"{autograd.gradients_text()}: training mode is what its call is for"
        return None if seen.differs else seen.none_text()

    def confirms(self, seen: TrainModeFacts) -> bool:
        return seen.differs


CAUSES = (TrainModeLeftOn(),)
