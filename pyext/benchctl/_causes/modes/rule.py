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
from ..._cause import probe_phase
from ..._switched_cause import SwitchedCause
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


class ModesLeftOn(SwitchedCause):
    name = "modes"
    order = 133
    title = "torch function / dispatch modes left on"
    setting = MODES
    watch = PROBE
    under = "with its modes off"
    switched = "its modes off"
    unseen = "no mode was on as its profiled call started"
    unwatched = "there is no call to run with its modes off"

    def probes(self, facts: Facts | None) -> list[dict]:
        seen = self.seen(facts)
        return [] if seen is not None and not seen.switchable else [self.probe]  # entered only: nothing to switch

    def rule_out(self, facts: Facts, seen: ModesFacts) -> str | None:
        if seen.switchable or seen.entered_text():
            return None
        return seen.none_text()

    def evidence(self, facts: Facts | None) -> str | None:
        seen = self.seen(facts)
        if seen is None or not seen.switchable:
            return None
        entered = seen.entered_text()
        return seen.text() + (f"; {entered} (left on by the probe: it is entered inside the call)" if entered else "")

    def _own(self, facts: Facts | None) -> list[str]:
        """The modes switched off that are the code's own (not torch.set_default_device's)."""
        seen = self.seen(facts)
        return [name for name in seen.switchable if name not in seen.devices] if seen is not None else []

    def timing(self, facts: Facts | None) -> str:
        return f" ({TIMING_ONLY})" if self._own(facts) else ""  # taking off the default device's mode is the fix

    def cause_under(self, facts: Facts | None) -> str:
        return f"with {', '.join(self.seen(facts).switchable)} off"

    def fix_for(self, facts: Facts | None) -> str:
        own = self._own(facts)
        switched = self.seen(facts).switchable
        return "; ".join(([FIX_DEFAULT_DEVICE] if len(own) < len(switched) else []) + ([FIX_OWN] if own else []))

    def judge_phase(self, ctx: Context) -> Finding | None:
        seen = self.seen(ctx.facts)
        if seen is not None and not seen.switchable:
            if ctx.phase != probe_phase(ctx.facts) or not seen.entered_text():
                return None
            return self.finding(ctx, None, f"{seen.none_text()}; {seen.entered_text()}: {ENTERED_INSIDE}",
                                Status.UNCONFIRMED, evidence={"modes": self.evidence_json(ctx)})
        return super().judge_phase(ctx)


CAUSES = (ModesLeftOn(),)
