"""Cause in autograd: a graph recorded for gradients nobody uses.

It reads its evidence from the probe worker's watched call (:class:`.probe.AutogradFacts`, which the
anomaly cause, :mod:`benchctl._causes.anomaly.rule`, reads too): :class:`Recording` is ruled out when no
call records a graph, or when the call computes gradients (then they are needed), and probes
``inference=on`` (each timed call under ``torch.inference_mode()``). A call that fails under that mode
needs autograd: not this cause.
"""

from __future__ import annotations

from typing import Any

from ..._results import queries
from ..._results.document import cell_id
from ..._results.facts import Facts
from ..._results.findings import MECHANISM_UNCONFIRMED, Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_text
from .probe import PROBE, AutogradFacts
from .setting import INFERENCE

__all__ = ["RECORDING_FIX", "MIN_RECORDING_SHARE", "FEW_RECORD", "autograd_of", "autograd_json", "Recording", "CAUSES"]

#: What the user changes when recording is the cause.
RECORDING_FIX = "the call needs no gradient: run it under torch.inference_mode() (or torch.no_grad())"
#: Under this share of its torch calls recording a graph, a call faster under inference mode owes it to something
#: else: inference mode also spares every op its version counter and view tracking (an optimizer step over 400
#: parameters, 4,401 calls of which one recorded, was 1.09x faster under it).
MIN_RECORDING_SHARE = 0.1
#: Why a faster call with few recording calls leaves the mechanism open.
FEW_RECORD = ("yet so few of its calls record that recording cannot be what inference mode saves: it also spares "
              "every op its version counter and view tracking")
#: How much of a failed cell's error an answer quotes.
_ERROR_CHARS = 160


def autograd_of(facts: Facts | None) -> AutogradFacts | None:
    """What the probe worker saw autograd do (None: not watched, or no facts)."""
    return facts.of(PROBE) if facts is not None else None


def autograd_json(ctx: Context) -> Any:
    """The autograd fact as a finding's evidence quotes it (None: not watched, or no facts)."""
    return ctx.facts.to_json()["probed"].get(PROBE.key) if ctx.facts else None



class Recording(Cause):
    name = "recording"
    order = 130
    title = "autograd recording where no gradient is needed"
    probe = probe_of(INFERENCE)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = autograd_of(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="there is no call to run under torch.inference_mode()")
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
            return self.not_run(ctx, cell) or (None if cell is None else self._failed(ctx, cell))
        cell, cmp = probed
        seen = autograd_of(ctx.facts)
        evidence = seen.recording_text() if seen is not None and seen.records else None
        readback = self.readback_suffix(ctx, cell, INFERENCE)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"autograd": autograd_json(ctx),
                                "inference_readback": ctx.readback(cell, INFERENCE.name)})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"under torch.inference_mode() it is {cmp.effect_text()}{readback}, yet no "
                                          f"call was seen recording a graph: {MECHANISM_UNCONFIRMED}",
                                Status.UNCONFIRMED, **fields)
        if cmp.faster and seen.recording < MIN_RECORDING_SHARE * seen.calls:
            return self.finding(ctx, cmp, f"under torch.inference_mode() it is {cmp.effect_text()}; {evidence}"
                                          f"{readback}; {FEW_RECORD}: {MECHANISM_UNCONFIRMED}", Status.UNCONFIRMED,
                                **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"under torch.inference_mode() it is {cmp.effect_text()}; {evidence}"
                                          f"{readback}: {mechanism(INFERENCE)}; {RECORDING_FIX}", Status.CAUSE,
                                **fields)
        suffix = readback + (f"; {evidence}" if evidence else "")
        return self.not_found(ctx, cmp, "torch.inference_mode()", suffix=suffix, **fields)


CAUSES = (Recording(),)
