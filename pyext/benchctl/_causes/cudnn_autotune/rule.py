"""Cause on the GPU: cuDNN autotuning each new shape (``torch.backends.cudnn.benchmark``).

Ruled out before any cell runs without CUDA work (as every GPU cause: :mod:`benchctl._causes.async_clock.rule`),
with benchmark off, with no convolution, or with shapes that repeat; its evidence is the probe worker's GPU calls
(:mod:`benchctl._causes.cuda_first_call.probe`), its probe ``cudnn_benchmark=off``.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from ..cuda_first_call.probe import PROBE as CUDA, no_cuda_reason
from .setting import CUDNN_BENCHMARK

__all__ = ["CudnnAutotune", "CAUSES"]


class CudnnAutotune(Cause):
    name = "cudnn_autotune"
    order = 210
    title = "cuDNN autotuning on every new shape"
    probe = probe_of(CUDNN_BENCHMARK)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or self._reason(facts) is None else []

    def _reason(self, facts: Facts) -> str | None:
        reason = no_cuda_reason(facts)
        if reason is not None:
            return reason
        cuda = facts.of(CUDA)
        if cuda.cudnn_benchmark == "off":
            return "torch.backends.cudnn.benchmark is off: cuDNN tunes nothing"
        if cuda.conv_calls == 0:
            return "its probe calls ran no convolution: cuDNN's autotuner has nothing to tune"
        if cuda.seen_shape_ms and not cuda.new_shape_ms:
            return ("its convolution shapes repeat from call to call: autotuning runs once, in the warm-up, "
                    "which every comparison leaves out")
        return None

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        return self._reason(facts)

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        cuda = ctx.facts.of(CUDA) if ctx.facts else None
        shapes = cuda.shapes_text() if cuda and (cuda.new_shape_ms or cuda.seen_shape_ms) else ""
        evidence = {"new_shape_ms": list(cuda.new_shape_ms) if cuda else [],
                    "seen_shape_ms": list(cuda.seen_shape_ms) if cuda else []}
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe), evidence=evidence)
        suffix = f"; {shapes}" if shapes else ""
        head = f"with torch.backends.cudnn.benchmark off it is {cmp.effect_text()}{suffix}"
        if cmp.faster and cuda is not None and cuda.new_shape_ms:
            return self.finding(ctx, cmp, f"{head}: {mechanism(CUDNN_BENCHMARK)}; where shapes change per "
                                          "iteration, leave benchmark off (or pad inputs to a few fixed shapes)",
                                Status.CAUSE, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"{head}, yet no probe call ran new convolution shapes: the mechanism is "
                                          "unconfirmed", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, "cudnn.benchmark off", suffix=suffix, **fields)


CAUSES = (CudnnAutotune(),)
