"""Cause: parametrized tensors recomputed on every access.

A weight under ``torch.nn.utils.parametrizations.orthogonal`` / ``spectral_norm`` / ``weight_norm`` (or any
``register_parametrization``) is recomputed from its original each time it is read; a call that reads it
several times (a module stepped in a loop, a weight shared between layers) recomputes it each time unless
it runs under ``parametrize.cached()``. The probe worker runs one more call with every recompute counted
(:mod:`.probe`): with no parametrized tensor, or none recomputed twice in the call, the cause is out before
any cell runs. The probe is ``parametrize=cached``, each timed call under ``parametrize.cached()``
(:mod:`.control`), a timing probe where the call changes a weight between two reads.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._switched_cause import SwitchedCause
from .probe import PROBE, ParametrizeFacts
from .setting import PARAMETRIZE

__all__ = ["FIX", "TIMING_ONLY", "Recomputed", "CAUSES"]

#: What the user changes when the recomputes are the cause.
FIX = ("compute each parametrized tensor once per call: with torch.nn.utils.parametrize.cached(): around the "
       "forward (or the loop that reads the weights again); for inference, "
       "torch.nn.utils.parametrize.remove_parametrizations(module, name, leave_parametrized=True) once")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = ("a timing probe: a weight the call changes between two reads, as an optimizer step inside it does, "
               "stays at its first value under the cache")


class Recomputed(SwitchedCause):
    name = "parametrize"
    order = 134
    title = "parametrized tensors recomputed on every access"
    setting = PARAMETRIZE
    watch = PROBE
    # A call that backpropagates twice through one cached weight (two steps in one call) fails under the cache.
    under = "under parametrize.cached()"
    switched = "parametrize.cached()"
    unseen = "no tensor was seen recomputed twice"
    unwatched = "there is no call to run under parametrize.cached()"
    fix = FIX
    timing_only = TIMING_ONLY

    def rule_out(self, facts: Facts, seen: ParametrizeFacts) -> str | None:
        if not seen.known:
            return None
        return None if seen.recomputed_again else seen.none_text()

    def confirms(self, seen: ParametrizeFacts) -> bool:
        return seen.recomputed_again


CAUSES = (Recomputed(),)
