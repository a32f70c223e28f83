"""Cause on the GPU: float32 matmuls at full precision where TF32 would do (``matmul_precision``).

Ruled out without CUDA work, as every GPU cause (:mod:`benchctl._causes.async_clock.rule`), and where float32
matmuls hold too little of the GPU time (:mod:`benchctl._causes.cuda_first_call.probe` measures it); its probe
is the other precision than the code's.
"""

from __future__ import annotations

from ... import settings
from ..._results.facts import Facts
from ..._results.findings import MECHANISM_UNCONFIRMED, Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of
from ..cuda_first_call.probe import PROBE as CUDA, no_cuda_reason
from .setting import MATMUL_PRECISION

__all__ = ["MIN_MATMUL_SHARE", "Tf32", "CAUSES"]

#: Float32 matmuls under this share of the GPU time: TF32 cannot change the time beyond the noise floor.
MIN_MATMUL_SHARE = 0.05


class Tf32(Cause):
    name = "tf32"
    order = 230
    title = "float32 matmul precision (TF32)"

    def probes(self, facts: Facts | None) -> list[dict]:
        if facts is None or no_cuda_reason(facts) is not None:
            return [] if facts is not None else [probe_of(MATMUL_PRECISION)]
        # The other precision: TF32 where the code runs full float32, full float32 where it runs TF32.
        full = facts.of(CUDA).matmul_precision in (None, "highest")
        return [{MATMUL_PRECISION.name: "high" if full else "highest"}]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        reason = no_cuda_reason(facts)
        if reason is not None:
            return reason
        share = facts.of(CUDA).matmul_fp32_share
        if share is not None and share < MIN_MATMUL_SHARE:
            return f"float32 matmuls take {share:.1%} of its GPU kernel time: TF32 has too little to change"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        cuda = ctx.facts.of(CUDA) if ctx.facts else None
        code = cuda.matmul_precision if cuda and cuda.matmul_precision else "highest"
        probe = settings.split_cell(cell)[0].get(MATMUL_PRECISION.name)
        share = cuda.matmul_fp32_share if cuda else None
        measured = f"float32 matmuls take {share:.0%} of its GPU kernel time" if share is not None else \
            "the share of float32 matmuls in its GPU time was not measured"
        fields = dict(a=cell, b=ctx.baseline, setting=f"{MATMUL_PRECISION.name}={probe}",
                      evidence={"code_precision": code, "matmul_fp32_share": share})
        head = (f"its code runs float32 matmuls at precision {code!r}; at {probe!r} it is {cmp.effect_text()}; "
                f"{measured}")
        if probe != "highest" and cmp.faster:
            status = Status.CAUSE if share is not None and share >= MIN_MATMUL_SHARE else Status.UNCONFIRMED
            tail = (f": {mechanism(MATMUL_PRECISION)}; torch.set_float32_matmul_precision('{probe}') buys it "
                    "where that precision suffices") if status is Status.CAUSE else f": {MECHANISM_UNCONFIRMED}"
            return self.finding(ctx, cmp, head + tail, status, **fields)
        if probe == "highest" and cmp.slower:
            return self.finding(ctx, cmp, f"{head}: it already runs TF32, which saves that much", Status.NOT_CAUSE,
                                **fields)
        return self.not_found(ctx, cmp, f"matmul precision {probe!r}", suffix=f"; {measured}", **fields)


CAUSES = (Tf32(),)
