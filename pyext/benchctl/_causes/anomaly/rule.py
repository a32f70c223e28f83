"""Cause: autograd anomaly detection left on.

It reads its evidence from the probe worker's watched call (:class:`benchctl._causes.recording.probe.AutogradFacts`,
the recording cause's probe): :class:`Anomaly` is ruled out when no torch call of it ran with anomaly
detection on, and probes ``anomaly=off`` (kept off against the code's own calls).
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import MECHANISM_UNCONFIRMED, Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from ..recording.rule import autograd_json, autograd_of
from .setting import ANOMALY

__all__ = ["ANOMALY_FIX", "Anomaly", "CAUSES"]

#: What the user changes when anomaly detection is the cause.
ANOMALY_FIX = ("switch it on only to find where a NaN comes from (no torch.autograd.set_detect_anomaly(True) or "
               "detect_anomaly() around the step, Lightning's Trainer(detect_anomaly=False))")


class Anomaly(Cause):
    name = ANOMALY.name
    order = 120
    title = "anomaly detection left on"
    probe = probe_of(ANOMALY)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = autograd_of(facts)
        if seen is None or not seen.known:
            return None  # its call was not watched: nothing rules it out
        return None if seen.anomaly_on else f"{seen.anomaly_text()}: it was never on"

    def _seen_on(self, ctx: Context, cell: dict) -> str | None:
        """The evidence that the mode was on without the probe, in words; None when none was seen."""
        seen = autograd_of(ctx.facts)
        if seen is not None and seen.anomaly_on:
            return seen.anomaly_text()
        refused = (ctx.readback(cell, ANOMALY.name) or {}).get("refused")
        if not refused:
            return None
        return f"the code asked to turn it on {refused} time{'s' * (refused != 1)} in the probe cell"

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return self.not_run(ctx, ctx.probe_cell(self.probe))
        cell, cmp = probed
        seen = self._seen_on(ctx, cell)
        readback = self.readback_suffix(ctx, cell, ANOMALY)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"autograd": autograd_json(ctx),
                                "anomaly_readback": ctx.readback(cell, ANOMALY.name)})
        if cmp.faster and seen is None:
            return self.finding(ctx, cmp, f"with anomaly detection off it is {cmp.effect_text()}{readback}, yet it "
                                          f"was not seen on: {MECHANISM_UNCONFIRMED}", Status.UNCONFIRMED,
                                **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with anomaly detection off it is {cmp.effect_text()}; {seen}{readback}: "
                                          f"{mechanism(ANOMALY)}; {ANOMALY_FIX}", Status.CAUSE, **fields)
        suffix = readback + (f"; {seen}" if seen else "")
        return self.not_found(ctx, cmp, "anomaly detection off", suffix=suffix, **fields)


CAUSES = (Anomaly(),)
