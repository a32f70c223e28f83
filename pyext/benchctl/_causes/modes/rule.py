"""Cause: torch function or dispatch modes left on around every call.

A ``TorchFunctionMode`` runs Python on every torch call made while it is on, a ``TorchDispatchMode`` on every aten
op. ``torch.set_default_device`` enters one (``DeviceContext``) and leaves it on for the whole program, and a
logging, tracing or checking mode entered at import or in ``setup()`` stays on around every call. The probe worker
reads the modes on as its profiled call starts and counts their handlers' runs (:mod:`.probe`): with none on, the
cause is out before any cell runs. The probe is ``modes=off``, each timed call with those modes taken off
(:mod:`.control`), a timing probe for a mode of the code's own (what it did no longer happens); for the CPU's
``DeviceContext`` it is the fix itself. A mode the call enters itself (``with FlopCounterMode(): model(x)`` in the
step) no setting can take off from outside the call: where no other mode was on, it is named as evidence, open.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_phase, probe_text
from .probe import PROBE, ModesFacts
from .setting import MODES

__all__ = ["FIX_DEFAULT_DEVICE", "FIX_OWN", "TIMING_ONLY", "ENTERED_INSIDE", "ModesLeftOn", "CAUSES"]

#: What the user changes when torch.set_default_device's mode is the cause.
FIX_DEFAULT_DEVICE = ("do not set a default device (torch.set_default_device(None) takes its mode off): give device= "
                      "where tensors are made, or enter `with torch.device(...)` only around the code that makes them")
#: What the user changes when a mode of the code's own is the cause.
FIX_OWN = "enter the mode only around the calls that need it (a with-block), not for the whole program"
#: What the probe cell is, said wherever its time is quoted for a mode of the code's own.
TIMING_ONLY = "a timing probe: what the mode did no longer happens"
#: Why a mode the call enters itself is named but not measured, and what to do.
ENTERED_INSIDE = ("its handler runs in Python on every torch call or op inside the block; no setting takes off from "
                  "outside the call a mode the call enters, so its cost is not measured: time the call without the "
                  "block to weigh it, and enter it only in the runs that need what it records")


def _seen(facts: Facts | None) -> ModesFacts | None:
    return facts.of(PROBE) if facts is not None else None


class ModesLeftOn(Cause):
    name = "modes"
    order = 133
    title = "torch function / dispatch modes left on"
    probe = probe_of(MODES)

    def probes(self, facts: Facts | None) -> list[dict]:
        seen = _seen(facts)
        return [] if seen is not None and not seen.switchable else [self.probe]  # entered only: nothing to switch

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="there is no call to run with its modes off")
        if seen.switchable or seen.entered_text():
            return None
        return seen.none_text()

    def judge_phase(self, ctx: Context) -> Finding | None:
        seen = _seen(ctx.facts)
        if seen is not None and not seen.switchable:
            if ctx.phase != probe_phase(ctx.facts) or not seen.entered_text():
                return None
            return self.finding(ctx, None, f"{seen.none_text()}; {seen.entered_text()}: {ENTERED_INSIDE}",
                                Status.UNCONFIRMED,
                                evidence={"modes": ctx.facts.to_json()["probed"].get(PROBE.key)})
        probed = self.probed(ctx)
        cell = ctx.probe_cell(self.probe)
        if probed is None:
            return self.unmeasured(ctx, cell, "with its modes off")
        cell, cmp = probed
        switched = seen.switchable if seen is not None else []
        evidence = seen.text() if switched else None
        if evidence and seen.entered_text():
            evidence += f"; {seen.entered_text()} (left on by the probe: it is entered inside the call)"
        own = [name for name in switched if seen is None or name not in seen.devices]
        probe_kind = f" ({TIMING_ONLY})" if own else ""
        fix = "; ".join(([FIX_DEFAULT_DEVICE] if len(own) < len(switched) else []) + ([FIX_OWN] if own else []))
        read = self.readback_suffix(ctx, cell, MODES)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"modes": None if seen is None else ctx.facts.to_json()["probed"].get(PROBE.key),
                                "readback": ctx.readback(cell, MODES.name) or {}})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"with its modes off it is {cmp.effect_text()}{read}, yet no mode was on "
                                          "as its profiled call started: the mechanism is unconfirmed",
                                Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with {', '.join(switched)} off it is {cmp.effect_text()}{probe_kind}; "
                                          f"{evidence}{read}: {mechanism(MODES)}; the fix: {fix}", Status.CAUSE,
                                **fields)
        return self.not_found(ctx, cmp, "its modes off", suffix=read + (f"; {evidence}" if evidence else ""), **fields)


CAUSES = (ModesLeftOn(),)
