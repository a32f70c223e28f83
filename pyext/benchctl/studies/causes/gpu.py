"""Causes on the GPU: a host clock around asynchronous launches, cuDNN autotuning each new shape, CUDA's lazy
start, and float32 matmuls without TF32.

Each is ruled out before any cell runs where the probe worker saw no CUDA device or no CUDA work
(:meth:`benchctl.results.facts.Facts.no_cuda_reason`): on a CPU workload they add no cell. Their evidence
is the probe worker's few extra GPU calls (:mod:`benchctl.workloads.probe_cuda`), their probes the
settings of :mod:`benchctl.cuda_state`.

:class:`CudaFirstCall` and :class:`~.warmup.Warmup` look at the same first iterations differently: the
warm-up cause measures what the first iterations cost on any device, with no probe; this one creates
the CUDA context and library handles before the workload runs (``cuda_init=eager``) and says how much
of the first iteration that removes, i.e. whether the warm-up is CUDA's lazy start.
"""

from __future__ import annotations

import numpy as np

from ... import settings
from ...results import processes, queries
from ...results.comparison import Comparison
from ...results.facts import Facts
from ...results.findings import Finding, Status
from ...results.rules import Context
from ..cause import Cause, mechanism, probe_of, probe_text
from .warmup import LAZY_MIN_ITERATIONS

__all__ = ["HOST_COVERS_GPU", "MIN_MATMUL_SHARE", "AsyncClock", "CudnnAutotune", "CudaFirstCall", "Tf32"]

#: A host clock that reads at least this share of the call's GPU time already waits for the GPU.
HOST_COVERS_GPU = 0.9
#: Float32 matmuls under this share of the GPU time: TF32 cannot change the time beyond the noise floor.
MIN_MATMUL_SHARE = 0.05


def _readback_suffix(ctx: Context, cell: dict, name: str) -> str:
    facts = ctx.readback(cell, name) or {}
    phrase = settings.SETTINGS[name].facts_phrase(facts) if isinstance(facts, dict) and "varies" not in facts else ""
    return f"; {phrase}" if phrase else ""


class AsyncClock(Cause):
    name = "async_clock"
    title = "asynchronous CUDA launches timed by a host clock"
    probe = probe_of("sync")

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or facts.no_cuda_reason() is None else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        reason = facts.no_cuda_reason()
        if reason is not None:
            return reason
        ratio = facts.cuda.host_over_gpu
        if ratio is not None and ratio >= HOST_COVERS_GPU:
            return f"{facts.cuda.clock_text()}: the call already waits for its own GPU work"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        cuda = ctx.facts.cuda if ctx.facts else None
        ratio = cuda.host_over_gpu if cuda else None
        clock = f"; {cuda.clock_text()}" if ratio is not None else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"host_ms": cuda.host_ms if cuda else None, "event_ms": cuda.event_ms if cuda else None})
        said = _readback_suffix(ctx, cell, "sync")
        head = f"synchronised before each clock read it is {cmp.effect_text()}{clock}{said}"
        if cmp.slower and ratio is not None and ratio < HOST_COVERS_GPU:
            return self.finding(ctx, cmp, f"{head}: {mechanism('sync')}; the unsynchronised time is not the "
                                          "GPU's: call torch.cuda.synchronize() before reading the clock, or time "
                                          "with CUDA events", Status.CAUSE, **fields)
        if cmp.slower:
            return self.finding(ctx, cmp, f"{head}, yet no host-clocked call was measured shorter than its GPU time: "
                                          "the mechanism is unconfirmed", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, "synchronising before each clock read", suffix=clock, **fields)


class CudnnAutotune(Cause):
    name = "cudnn_autotune"
    title = "cuDNN autotuning on every new shape"
    probe = probe_of("cudnn_benchmark")

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or self._reason(facts) is None else []

    def _reason(self, facts: Facts) -> str | None:
        reason = facts.no_cuda_reason()
        if reason is not None:
            return reason
        cuda = facts.cuda
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
        cuda = ctx.facts.cuda if ctx.facts else None
        shapes = cuda.shapes_text() if cuda and (cuda.new_shape_ms or cuda.seen_shape_ms) else ""
        evidence = {"new_shape_ms": list(cuda.new_shape_ms) if cuda else [],
                    "seen_shape_ms": list(cuda.seen_shape_ms) if cuda else []}
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe), evidence=evidence)
        suffix = f"; {shapes}" if shapes else ""
        head = f"with torch.backends.cudnn.benchmark off it is {cmp.effect_text()}{suffix}"
        if cmp.faster and cuda is not None and cuda.new_shape_ms:
            return self.finding(ctx, cmp, f"{head}: {mechanism('cudnn_benchmark')}; where shapes change per "
                                          "iteration, leave benchmark off (or pad inputs to a few fixed shapes)",
                                Status.CAUSE, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"{head}, yet no probe call ran new convolution shapes: the mechanism is "
                                          "unconfirmed", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, "cudnn.benchmark off", suffix=suffix, **fields)


def _first_iterations(ctx: Context, cell: dict) -> list[float]:
    """The first timed iteration (ns) of each successful process of ``cell`` in this phase."""
    return [r["phases"][ctx.phase]["ns"][0] for r in queries.ok_runs(ctx.doc, cell)
            if ctx.phase in r["phases"] and r["phases"][ctx.phase]["ns"]]


class CudaFirstCall(Cause):
    name = "cuda_first_call"
    title = "CUDA's lazy start (context, library handles, kernels loaded on first use)"
    probe = probe_of("cuda_init")

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or facts.no_cuda_reason() is None else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        """Out without CUDA, and where the probe worker's first iterations cost less than the warm-up cause
        calls lazy initialisation (its threshold, one place): then there is no lazy start to remove."""
        reason = facts.no_cuda_reason()
        if reason is not None:
            return reason
        extras = [facts.first_extra.get(p) for p in facts.phases]
        if extras and all(e is not None and e < LAZY_MIN_ITERATIONS for e in extras):
            shown = ", ".join(f"{max(e, 0.0) + 0.0:.1f}" for e in extras)
            return (f"its first iterations cost {shown} steady iterations in the probe worker: under "
                    f"{LAZY_MIN_ITERATIONS:.0f}, no lazy start to remove")
        return None

    def _first(self, ctx: Context, cell: dict) -> Comparison | None:
        """The first iteration of ``cell``'s processes against the unchanged workload's, as a comparison."""
        eager, lazy = _first_iterations(ctx, cell), _first_iterations(ctx, ctx.baseline)
        if not eager or not lazy:
            return None
        return processes.compare(eager, lazy, band=ctx.band())

    def judge_phase(self, ctx: Context) -> Finding | None:
        cell = ctx.probe_cell(self.probe)
        cmp = None if cell is None else self._first(ctx, cell)
        if cmp is None:
            return None
        steady = ctx.entry(ctx.baseline) or {}
        first_ms = float(np.median(_first_iterations(ctx, ctx.baseline))) / 1e6
        times = f" (first iteration {first_ms:.3g} ms unchanged"
        times += f", {steady['median_ms']:.3g} ms steady)" if steady.get("median_ms") else ")"
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe), evidence={"first_ms": first_ms})
        said = f"{_readback_suffix(ctx, cell, 'cuda_init')}"
        if cmp.faster:
            return self.finding(ctx, cmp, f"with the CUDA context and cuBLAS handle created before the workload runs "
                                          f"its first iteration is {cmp.effect_text()}{times}{said}: "
                                          f"{mechanism('cuda_init')}; benchctl leaves the warm-up out of every "
                                          "comparison; in your own timings create the context first (one small "
                                          "CUDA op) or time after a warm-up call", Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, "creating the CUDA context first", suffix=(
            f" for the first iteration{times}{said}; what the first iterations cost is the warm-up cause's finding"),
            **fields)


class Tf32(Cause):
    name = "tf32"
    title = "float32 matmul precision (TF32)"

    def probes(self, facts: Facts | None) -> list[dict]:
        if facts is None or facts.no_cuda_reason() is not None:
            return [] if facts is not None else [probe_of("matmul_precision")]
        # The other precision: TF32 where the code runs full float32, full float32 where it runs TF32.
        full = facts.cuda.matmul_precision in (None, "highest")
        return [{"matmul_precision": "high" if full else "highest"}]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        reason = facts.no_cuda_reason()
        if reason is not None:
            return reason
        share = facts.cuda.matmul_fp32_share
        if share is not None and share < MIN_MATMUL_SHARE:
            return f"float32 matmuls take {share:.1%} of its GPU kernel time: TF32 has too little to change"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        cuda = ctx.facts.cuda if ctx.facts else None
        code = cuda.matmul_precision if cuda and cuda.matmul_precision else "highest"
        probe = settings.split_cell(cell)[0].get("matmul_precision")
        share = cuda.matmul_fp32_share if cuda else None
        measured = f"float32 matmuls take {share:.0%} of its GPU kernel time" if share is not None else \
            "the share of float32 matmuls in its GPU time was not measured"
        fields = dict(a=cell, b=ctx.baseline, setting=f"matmul_precision={probe}",
                      evidence={"code_precision": code, "matmul_fp32_share": share})
        head = (f"its code runs float32 matmuls at precision {code!r}; at {probe!r} it is {cmp.effect_text()}; "
                f"{measured}")
        if probe != "highest" and cmp.faster:
            status = Status.CAUSE if share is not None and share >= MIN_MATMUL_SHARE else Status.UNCONFIRMED
            tail = (f": {mechanism('matmul_precision')}; torch.set_float32_matmul_precision('{probe}') buys it "
                    "where that precision suffices") if status is Status.CAUSE else ": the mechanism is unconfirmed"
            return self.finding(ctx, cmp, head + tail, status, **fields)
        if probe == "highest" and cmp.slower:
            return self.finding(ctx, cmp, f"{head}: it already runs TF32, which saves that much", Status.NOT_CAUSE,
                                **fields)
        return self.not_found(ctx, cmp, f"matmul precision {probe!r}", suffix=f"; {measured}", **fields)
