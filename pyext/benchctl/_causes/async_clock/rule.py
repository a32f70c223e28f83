"""Cause on the GPU: a host clock around asynchronous launches.

Like every GPU cause (:mod:`benchctl._causes.cudnn_autotune`, :mod:`benchctl._causes.cuda_first_call`,
:mod:`benchctl._causes.tf32`), it is ruled out before any cell runs where the probe worker saw no CUDA
device or no CUDA work (:func:`benchctl._causes.cuda_first_call.probe.no_cuda_reason`): on a CPU workload they add
no cell. Their evidence is the probe worker's few extra GPU calls (:mod:`benchctl._causes.cuda_first_call.probe`),
their probes the settings of :mod:`.control` (this one's ``sync``).
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import MECHANISM_UNCONFIRMED, Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from ..cuda_first_call.probe import PROBE as CUDA, no_cuda_reason
from .setting import SYNC

__all__ = ["HOST_COVERS_GPU", "AsyncClock", "CAUSES"]

#: A host clock that reads at least this share of the call's GPU time already waits for the GPU.
HOST_COVERS_GPU = 0.9



class AsyncClock(Cause):
    name = "async_clock"
    order = 200
    title = "asynchronous CUDA launches timed by a host clock"
    probe = probe_of(SYNC)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or no_cuda_reason(facts) is None else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        reason = no_cuda_reason(facts)
        if reason is not None:
            return reason
        ratio = facts.of(CUDA).host_over_gpu
        if ratio is not None and ratio >= HOST_COVERS_GPU:
            return f"{facts.of(CUDA).clock_text()}: the call already waits for its own GPU work"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        cuda = ctx.facts.of(CUDA) if ctx.facts else None
        ratio = cuda.host_over_gpu if cuda else None
        clock = f"; {cuda.clock_text()}" if ratio is not None else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"host_ms": cuda.host_ms if cuda else None, "event_ms": cuda.event_ms if cuda else None})
        said = self.readback_suffix(ctx, cell, SYNC)
        head = f"synchronised before each clock read it is {cmp.effect_text()}{clock}{said}"
        if cmp.slower and ratio is not None and ratio < HOST_COVERS_GPU:
            return self.finding(ctx, cmp, f"{head}: {mechanism(SYNC)}; the unsynchronised time is not the "
                                          "GPU's: call torch.cuda.synchronize() before reading the clock, or time "
                                          "with CUDA events", Status.CAUSE, **fields)
        if cmp.slower:
            return self.finding(ctx, cmp, f"{head}, yet no host-clocked call was measured shorter than its GPU time: "
                                          f"{MECHANISM_UNCONFIRMED}", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, "synchronising before each clock read", suffix=clock, **fields)


CAUSES = (AsyncClock(),)
