"""Cause: gradient hooks on tensors run on every backward.

``param.register_hook(...)`` on every parameter to log, check or clip its gradient (``grad.norm().item()`` each),
left in the code, calls a Python hook per parameter in every backward, with the ops and syncs it does. The probe
worker finds the leaf tensors that hold such hooks and runs one more call with each hook counted as it runs
(:mod:`.probe`): with none, or none run, the cause is out before any cell runs. The probe is ``grad_hooks=off``,
the timed calls with those hooks detached (:mod:`.control`), a timing probe only: a hook may change a gradient.
Post-accumulate hooks (an optimizer stepping in backward) are not detached: their work is the step's.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._switched_cause import SwitchedCause
from .probe import PROBE, GradHooksFacts
from .setting import GRAD_HOOKS

__all__ = ["FIX", "TIMING_ONLY", "GradHooksOnEveryBackward", "CAUSES"]

#: What the user changes when the hooks are the cause.
FIX = ("remove the hooks after the steps you inspect (handle.remove()), or do their work once for all tensors after "
       "backward (torch._foreach_norm over the gradients, one .item() or none, instead of a norm and a sync per "
       "parameter)")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = "a timing probe: a hook that changes a gradient (clips or scales it) changes what the call computes"


class GradHooksOnEveryBackward(SwitchedCause):
    name = GRAD_HOOKS.name
    order = 137
    title = "gradient hooks on tensors run on every backward"
    setting = GRAD_HOOKS
    watch = PROBE
    under = "with its gradient hooks detached"
    switched = "detaching its gradient hooks"
    unseen = "no gradient hook was seen running"
    unwatched = "there is no call to run with its gradient hooks detached"
    fix = FIX
    timing_only = TIMING_ONLY

    def rule_out(self, facts: Facts, seen: GradHooksFacts) -> str | None:
        if not seen.known:
            return None
        return None if seen.ran else seen.none_text()

    def confirms(self, seen: GradHooksFacts) -> bool:
        return seen.ran


CAUSES = (GradHooksOnEveryBackward(),)
