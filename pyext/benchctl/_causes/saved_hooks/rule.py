"""Cause: saved-tensor hooks left on.

``torch.autograd.graph.saved_tensors_hooks(pack, unpack)`` or ``save_on_cpu()`` entered at import or in a setup
and never exited (a library's activation offloading switched on for good, a debugging hook that checks or copies
what autograd keeps) calls its ``pack`` in Python on every tensor autograd saves, for every op of every training
step after it. The probe worker runs one more call with the hooks on as it began counted, and the tensors they
packed (:mod:`.probe`): with none on, or none packing a tensor, the cause is out before any cell runs. The probe
is ``saved_hooks=off``, each timed call with those hooks set aside (:mod:`.control`), a timing probe only: a hook
may change what backward gets.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._switched_cause import SwitchedCause
from .probe import PROBE, SavedHooksFacts
from .setting import SAVED_HOOKS

__all__ = ["FIX", "TIMING_ONLY", "SavedHooksLeftOn", "CAUSES"]

#: What the user changes when the hooks are the cause.
FIX = ("enter saved_tensors_hooks or save_on_cpu only around the forward passes whose saved tensors need it (a with "
       "block around the model call), and exit it; or make the pack hook cheap (no copy of a tensor it can keep)")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = ("a timing probe: a hook that compresses or moves what autograd saves changes what backward gets or "
               "the memory the call holds")


class SavedHooksLeftOn(SwitchedCause):
    name = SAVED_HOOKS.name
    order = 136
    title = "saved-tensor hooks left on"
    setting = SAVED_HOOKS
    watch = PROBE
    under = "with its saved-tensor hooks set aside"
    switched = "setting its saved-tensor hooks aside"
    unseen = "no saved-tensor hook was seen packing a tensor"
    unwatched = "there is no call to run with its saved-tensor hooks set aside"
    fix = FIX
    timing_only = TIMING_ONLY

    def rule_out(self, facts: Facts, seen: SavedHooksFacts) -> str | None:
        if not seen.known:
            return None
        return None if seen.packed else seen.none_text()

    def confirms(self, seen: SavedHooksFacts) -> bool:
        return seen.packed


CAUSES = (SavedHooksLeftOn(),)
