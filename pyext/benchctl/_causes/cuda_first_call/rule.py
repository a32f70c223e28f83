"""Cause on the GPU: CUDA's lazy start (context, library handles, kernels loaded on first use).

:class:`CudaFirstCall` and :class:`~benchctl._causes.warmup.rule.Warmup` look at the same first iterations
differently: the warm-up cause measures what the first iterations cost on any device, with no probe; this
one creates the CUDA context and library handles before the workload runs (``cuda_init=eager``) and says how
much of the first iteration that removes, i.e. whether the warm-up is CUDA's lazy start. Ruled out without
CUDA work, as every GPU cause (:mod:`benchctl._causes.async_clock.rule`); the probe worker's GPU evidence
they all read is this package's probe (:mod:`.probe`).
"""

from __future__ import annotations

import numpy as np

from ..._results import processes, queries
from ..._results.comparison import Comparison
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from .probe import no_cuda_reason
from ..._cause import Cause, mechanism, probe_of, probe_text
from ..warmup.rule import LAZY_MIN_ITERATIONS
from .setting import CUDA_INIT

__all__ = ["CudaFirstCall", "CAUSES"]


def _first_iterations(ctx: Context, cell: dict) -> list[float]:
    """The first timed iteration (ns) of each successful process of ``cell`` in this phase."""
    return [r["phases"][ctx.phase]["ns"][0] for r in queries.ok_runs(ctx.doc, cell)
            if ctx.phase in r["phases"] and r["phases"][ctx.phase]["ns"]]


class CudaFirstCall(Cause):
    name = "cuda_first_call"
    order = 220
    title = "CUDA's lazy start (context, library handles, kernels loaded on first use)"
    probe = probe_of(CUDA_INIT)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or no_cuda_reason(facts) is None else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        """Out without CUDA, and where the probe worker's first iterations cost less than the warm-up cause
        calls lazy initialisation (its threshold, one place): then there is no lazy start to remove."""
        reason = no_cuda_reason(facts)
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
        said = self.readback_suffix(ctx, cell, CUDA_INIT)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with the CUDA context and cuBLAS handle created before the workload runs "
                                          f"its first iteration is {cmp.effect_text()}{times}{said}: "
                                          f"{mechanism(CUDA_INIT)}; benchctl leaves the warm-up out of every "
                                          "comparison; in your own timings create the context first (one small "
                                          "CUDA op) or time after a warm-up call", Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, "creating the CUDA context first", suffix=(
            f" for the first iteration{times}{said}; what the first iterations cost is the warm-up cause's finding"),
            **fields)


CAUSES = (CudaFirstCall(),)
