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
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_text
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


def _seen(facts: Facts | None) -> ParametrizeFacts | None:
    return facts.of(PROBE) if facts is not None else None


class Recomputed(Cause):
    name = "parametrize"
    order = 134
    title = "parametrized tensors recomputed on every access"
    probe = probe_of(PARAMETRIZE)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="there is no call to run under parametrize.cached()")
        if not seen.known:
            return None
        return None if seen.recomputed_again else seen.none_text()

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        cell = ctx.probe_cell(self.probe)
        if probed is None:
            # A call that backpropagates twice through one cached weight (two steps in one call) fails so.
            return self.unmeasured(ctx, cell, "under parametrize.cached()")
        cell, cmp = probed
        seen = _seen(ctx.facts)
        evidence = seen.text() if seen is not None and seen.recomputed_again else None
        readback = ctx.readback(cell, PARAMETRIZE.name) or {}
        read = self.readback_suffix(ctx, cell, PARAMETRIZE)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"parametrize": None if seen is None else ctx.facts.to_json()["probed"].get(PROBE.key),
                                "readback": readback})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"under parametrize.cached() it is {cmp.effect_text()} ({TIMING_ONLY})"
                                          f"{read}, yet no tensor was seen recomputed twice: the mechanism is "
                                          "unconfirmed", Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"under parametrize.cached() it is {cmp.effect_text()} ({TIMING_ONLY}); "
                                          f"{evidence}{read}: {mechanism(PARAMETRIZE)}; the fix: {FIX}",
                                Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, "parametrize.cached()", suffix=read + (f"; {evidence}" if evidence else ""),
                              **fields)


CAUSES = (Recomputed(),)
