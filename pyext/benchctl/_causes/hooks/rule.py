"""Cause: module hooks run on every call.

A forward hook registered on every submodule to log a statistic (``output.abs().mean().item()``), to
collect activations or to check for NaN, then left in the code, runs on every call of every module it
is on: the module takes ``torch.nn.Module``'s slow path, and the hook's ops and syncs add to the call.
The probe worker runs one more call with every module call counted and the hooks each one runs
(:mod:`.probe`): with none, the cause is out before any cell runs. The probe is ``hooks=off``, each timed
call with every module's hooks detached (:mod:`.control`), a timing probe only: a hook may change what
the call computes.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._switched_cause import SwitchedCause
from .probe import PROBE, HooksFacts
from .setting import HOOKS

__all__ = ["FIX", "TIMING_ONLY", "HooksOnEveryCall", "CAUSES"]

#: What the user changes when the hooks are the cause.
FIX = ("remove the debugging or logging hooks, register them only around the calls you inspect (handle.remove() "
       "after), or make them cheap (no .item() or other sync per module: keep the tensors, reduce them once)")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = "a timing probe: a hook that changes a module's inputs or outputs changes what the call computes"


class HooksOnEveryCall(SwitchedCause):
    name = "hooks"
    order = 132
    title = "module hooks run on every call"
    setting = HOOKS
    watch = PROBE
    # The code may need its hooks (they hold state it reads, or shape what later modules get): then not measured.
    under = "with its hooks detached"
    switched = "detaching its hooks"
    unseen = "no hook was seen running"
    unwatched = "there is no call to run with its hooks detached"
    fix = FIX
    timing_only = TIMING_ONLY

    def rule_out(self, facts: Facts, seen: HooksFacts) -> str | None:
        if not seen.known:
            return None
        return None if seen.ran else seen.none_text()

    def confirms(self, seen: HooksFacts) -> bool:
        return seen.ran


CAUSES = (HooksOnEveryCall(),)
