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
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_text
from .probe import PROBE, HooksFacts
from .setting import HOOKS

__all__ = ["FIX", "TIMING_ONLY", "HooksOnEveryCall", "CAUSES"]

#: What the user changes when the hooks are the cause.
FIX = ("remove the debugging or logging hooks, register them only around the calls you inspect (handle.remove() "
       "after), or make them cheap (no .item() or other sync per module: keep the tensors, reduce them once)")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = "a timing probe: a hook that changes a module's inputs or outputs changes what the call computes"


def _seen(facts: Facts | None) -> HooksFacts | None:
    return facts.of(PROBE) if facts is not None else None


class HooksOnEveryCall(Cause):
    name = "hooks"
    order = 132
    title = "module hooks run on every call"
    probe = probe_of(HOOKS)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="there is no call to run with its hooks detached")
        if not seen.known:
            return None
        return None if seen.ran else seen.none_text()

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        cell = ctx.probe_cell(self.probe)
        if probed is None:
            # The code needs its hooks (they hold state it reads, or shape what later modules get): not measured.
            return self.unmeasured(ctx, cell, "with its hooks detached")
        cell, cmp = probed
        seen = _seen(ctx.facts)
        evidence = seen.text() if seen is not None and seen.ran else None
        readback = ctx.readback(cell, HOOKS.name) or {}
        read = self.readback_suffix(ctx, cell, HOOKS)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"hooks": None if seen is None else ctx.facts.to_json()["probed"].get(PROBE.key),
                                "readback": readback})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"with its hooks detached it is {cmp.effect_text()} ({TIMING_ONLY}){read}, "
                                          "yet no hook was seen running: the mechanism is unconfirmed",
                                Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with its hooks detached it is {cmp.effect_text()} ({TIMING_ONLY}); "
                                          f"{evidence}{read}: {mechanism(HOOKS)}; the fix: {FIX}", Status.CAUSE,
                                **fields)
        return self.not_found(ctx, cmp, "detaching its hooks", suffix=read + (f"; {evidence}" if evidence else ""),
                              **fields)


CAUSES = (HooksOnEveryCall(),)
