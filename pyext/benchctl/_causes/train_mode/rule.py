"""Cause: modules left in training mode in calls that compute no gradient.

A model built or trained and then timed (or served) without ``model.eval()`` does training work on every call:
``Dropout`` draws a random mask and scales by it, ``BatchNorm`` computes each batch's statistics and updates its
running ones, attention and transformer layers stay off their fused inference path. The probe worker counts the
module calls of its profiled call made in training mode in modules that compute differently there (:mod:`.probe`):
with none, or where the call computes gradients (then training mode is what it is for), the cause is out before
any cell runs. The probe is ``train_mode=eval``, each timed call with its modules in eval mode (:mod:`.control`),
a timing probe: what the call computes changes with it.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_text
from ..recording.probe import PROBE as AUTOGRAD
from .probe import PROBE, TrainModeFacts
from .setting import TRAIN_MODE

__all__ = ["FIX", "TIMING_ONLY", "TrainModeLeftOn", "CAUSES"]

#: What the user changes when training mode is the cause.
FIX = ("put the model in eval mode for inference (model.eval(); model.train() before training it again): Dropout then "
       "passes its input through and BatchNorm uses its running statistics, which is what inference should compute")
#: What the probe cell is, said wherever its time is quoted.
TIMING_ONLY = "a timing probe: in eval mode the call computes other values (no random masks, running statistics)"


def _seen(facts: Facts | None) -> TrainModeFacts | None:
    return facts.of(PROBE) if facts is not None else None


class TrainModeLeftOn(Cause):
    name = "train_mode"
    order = 131
    title = "modules left in training mode"
    probe = probe_of(TRAIN_MODE)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="there is no call to run with its modules in eval mode")
        autograd = facts.of(AUTOGRAD)
        if autograd is not None and autograd.known and autograd.computes_gradients:
            return f"{autograd.gradients_text()}: training mode is what its call is for"
        return None if seen.differs else seen.none_text()

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        cell = ctx.probe_cell(self.probe)
        if probed is None:
            return self.unmeasured(ctx, cell, "with its modules in eval mode")
        cell, cmp = probed
        seen = _seen(ctx.facts)
        evidence = seen.text() if seen is not None and seen.differs else None
        readback = ctx.readback(cell, TRAIN_MODE.name) or {}
        read = self.readback_suffix(ctx, cell, TRAIN_MODE)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"train_mode": None if seen is None else ctx.facts.to_json()["probed"].get(PROBE.key),
                                "readback": readback})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"with its modules in eval mode it is {cmp.effect_text()} ({TIMING_ONLY})"
                                          f"{read}, yet no module that computes differently in training ran in "
                                          "training mode: the mechanism is unconfirmed", Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with its modules in eval mode it is {cmp.effect_text()} ({TIMING_ONLY}); "
                                          f"{evidence}{read}: {mechanism(TRAIN_MODE)}; the fix: {FIX}", Status.CAUSE,
                                **fields)
        return self.not_found(ctx, cmp, "eval mode", suffix=read + (f"; {evidence}" if evidence else ""), **fields)


CAUSES = (TrainModeLeftOn(),)
