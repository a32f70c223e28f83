"""Causes in autograd: anomaly detection left on, and a graph recorded for gradients nobody uses.

Both read their evidence from the probe worker's watched call
(:class:`benchctl.results.autograd_facts.AutogradFacts`): :class:`Anomaly` is ruled out when no torch
call of it ran with anomaly detection on, and probes ``anomaly=off`` (kept off against the code's own
calls); :class:`Recording` is ruled out when no call records a graph, or when the call computes
gradients (then they are needed), and probes ``inference=on`` (each timed call under
``torch.inference_mode()``). A call that fails under that mode needs autograd: not this cause.
"""

from __future__ import annotations

from ... import settings
from ...results import queries
from ...results.autograd_facts import AutogradFacts
from ...results.document import cell_id
from ...results.facts import Facts
from ...results.findings import Finding, Status
from ...results.rules import Context
from ..cause import Cause, mechanism, probe_of, probe_text

__all__ = ["ANOMALY_FIX", "RECORDING_FIX", "NOT_RUN", "Anomaly", "Recording"]

#: What the user changes when anomaly detection is the cause.
ANOMALY_FIX = ("switch it on only to find where a NaN comes from (no torch.autograd.set_detect_anomaly(True) or "
               "detect_anomaly() around the step, Lightning's Trainer(detect_anomaly=False))")
#: What the user changes when recording is the cause.
RECORDING_FIX = "the call needs no gradient: run it under torch.inference_mode() (or torch.no_grad())"
#: What a cause says when its probe cell ran no process (the budget ran out before it: a loaded machine).
NOT_RUN = "not measured: its {probe} cell ran no process within the budget"
#: How much of a failed cell's error an answer quotes.
_ERROR_CHARS = 160


def _autograd(facts: Facts | None) -> AutogradFacts | None:
    return facts.autograd if facts is not None else None


def _not_run(cause: Cause, ctx: Context, cell: dict | None) -> Finding | None:
    """The open finding of a cause whose probe cell is in the matrix yet ran no process at all, or None."""
    if cell is None or any(cell_id(r["cell"]) == cell_id(cell) for r in ctx.doc["runs"]):
        return None
    probe = probe_text(settings.split_cell(cell)[0])
    return cause.finding(ctx, None, NOT_RUN.format(probe=probe), Status.UNRESOLVED, a=cell, b=ctx.baseline,
                         setting=probe)


def _readback(ctx: Context, cell: dict, name: str) -> str:
    """``"; kept off against 30 calls of the code that turned it on"``: what the setting read back, or ""."""
    reach = ctx.readback(cell, name) or {}
    phrase = settings.SETTINGS[name].facts_phrase(reach) if "varies" not in reach else ""
    return f"; {phrase}" if phrase else ""


class Anomaly(Cause):
    name = "anomaly"
    title = "anomaly detection left on"
    probe = probe_of("anomaly")

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _autograd(facts)
        if seen is None or not seen.known:
            return None  # its call was not watched: nothing rules it out
        return None if seen.anomaly_on else f"{seen.anomaly_text()}: it was never on"

    def _seen_on(self, ctx: Context, cell: dict) -> str | None:
        """The evidence that the mode was on without the probe, in words; None when none was seen."""
        seen = _autograd(ctx.facts)
        if seen is not None and seen.anomaly_on:
            return seen.anomaly_text()
        refused = (ctx.readback(cell, "anomaly") or {}).get("refused")
        if not refused:
            return None
        return f"the code asked to turn it on {refused} time{'s' * (refused != 1)} in the probe cell"

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return _not_run(self, ctx, ctx.probe_cell(self.probe))
        cell, cmp = probed
        seen = self._seen_on(ctx, cell)
        readback = _readback(ctx, cell, "anomaly")
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"autograd": ctx.facts.to_json()["autograd"] if ctx.facts else None,
                                "anomaly_readback": ctx.readback(cell, "anomaly")})
        if cmp.faster and seen is None:
            return self.finding(ctx, cmp, f"with anomaly detection off it is {cmp.effect_text()}{readback}, yet it "
                                          "was not seen on: the mechanism is unconfirmed", Status.UNCONFIRMED,
                                **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with anomaly detection off it is {cmp.effect_text()}; {seen}{readback}: "
                                          f"{mechanism('anomaly')}; {ANOMALY_FIX}", Status.CAUSE, **fields)
        suffix = readback + (f"; {seen}" if seen else "")
        return self.not_found(ctx, cmp, "anomaly detection off", suffix=suffix, **fields)


class Recording(Cause):
    name = "recording"
    title = "autograd recording where no gradient is needed"
    probe = probe_of("inference")

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _autograd(facts)
        if seen is None:
            return ("its calls were not watched (a @benchctl.workload function times its own iterations): there is "
                    "no call to run under torch.inference_mode()")
        if not seen.known:
            return None
        if seen.computes_gradients:
            return seen.gradients_text()
        return None if seen.records else f"{seen.recording_text()}: nothing to stop recording"

    def _failed(self, ctx: Context, cell: dict) -> Finding | None:
        """The finding where every process of the probe cell failed: the call needs autograd."""
        key = cell_id(cell)
        errors = [r.get("error") or "" for r in queries.failed_runs(ctx.doc) if cell_id(r["cell"]) == key]
        if not errors:
            return None
        error = errors[0].splitlines()[0][:_ERROR_CHARS] if errors[0] else "no error recorded"
        return self.finding(ctx, None, f"it needs autograd's graph: under torch.inference_mode() its call fails "
                                       f"({error})", Status.NOT_CAUSE, a=cell, b=ctx.baseline,
                            setting=probe_text(self.probe), evidence={"failed": errors})

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        cell = ctx.probe_cell(self.probe)
        if probed is None:
            return _not_run(self, ctx, cell) or (None if cell is None else self._failed(ctx, cell))
        cell, cmp = probed
        seen = _autograd(ctx.facts)
        evidence = seen.recording_text() if seen is not None and seen.records else None
        readback = _readback(ctx, cell, "inference")
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"autograd": ctx.facts.to_json()["autograd"] if ctx.facts else None,
                                "inference_readback": ctx.readback(cell, "inference")})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"under torch.inference_mode() it is {cmp.effect_text()}{readback}, yet no "
                                          "call was seen recording a graph: the mechanism is unconfirmed",
                                Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"under torch.inference_mode() it is {cmp.effect_text()}; {evidence}"
                                          f"{readback}: {mechanism('inference')}; {RECORDING_FIX}", Status.CAUSE,
                                **fields)
        suffix = readback + (f"; {evidence}" if evidence else "")
        return self.not_found(ctx, cmp, "torch.inference_mode()", suffix=suffix, **fields)
