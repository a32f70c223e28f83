"""Cause: the thread count and oversubscription.

:class:`Threads` runs the workload on one thread, and on all of them with
another BLAS pool kept busy beside it (:mod:`benchctl._contention`): a
workload that is faster on one thread than on all is oversubscribed, and its
context switches per iteration fall with the time; the busy pool shows how
sensitive it is to a neighbour. Where the threads run is :mod:`benchctl._causes.placement`'s.

Where capping the other pools (:class:`~benchctl._causes.pools.rule.CompetingPools`) or holding torch's threads
at the usable CPUs (:class:`~benchctl._causes.cpu_fit.rule.CpuFit`) already makes the workload faster, one
thread is judged against that cell, not the unchanged workload: that share is the narrower cause's, and the
thread count is named only for what one thread removes beyond it.
"""

from __future__ import annotations

import numpy as np

from ... import settings
from ..._results import queries
from ..._results.counter_evidence import CpuWait
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from ..cpu_fit.probe import PROBE as CPU_FIT
from ..denormals.probe import PROBE as FLUSH_STATE
from ..omp_wait.probe import waited
from ..cpu_fit.rule import CpuFit
from ..cpu_fit.setting import CLAMP
from ..pools.setting import CAP_OTHER_POOLS
from .setting import THREADS

__all__ = ["Threads", "CAUSES"]


def _pools(facts: Facts | None) -> str:
    """The thread pools threadpoolctl saw, e.g. "libgomp openmp x2, libopenblas blas x2"."""
    found = [f"{p.get('prefix')} {p.get('user_api')} x{p.get('num_threads')}" for p in (facts.pools if facts else [])]
    return ", ".join(found) or "none seen"


class Threads(Cause):
    name = THREADS.name
    order = 40
    title = "thread count and oversubscription"
    one = probe_of(THREADS)
    busy = probe_of(settings.BUSY)
    #: The narrower causes whose probes remove part of what one thread does: (their probe, the probe in words,
    #: the cause in words). Where one made it faster, one thread is judged against that cell.
    narrower = ((probe_of(CAP_OTHER_POOLS), "capping the other pools alone", "the competing pools are"),
                (probe_of(CLAMP), "holding torch's threads at the usable CPUs", "its CPU mask or quota is"))

    def _beyond_narrower(self, ctx: Context, cell: dict) -> tuple[Finding | None, str]:
        """One thread judged against the cell of each narrower cause's probe that made it faster (and held):
        the thread count's own share. (the finding when one thread adds nothing beyond one of them, or None;
        the words that give their shares when it adds more than each)."""
        shares = []
        for probe, fix, cause in self.narrower:
            narrow = ctx.probe_cell(probe)
            if narrow is None or ctx.undone(narrow) is not None:
                continue
            by_fix, beyond = ctx.compare(narrow, ctx.baseline), ctx.compare(cell, narrow)
            if by_fix is None or beyond is None or not by_fix.faster:
                continue
            if not beyond.faster:
                return self.not_found(ctx, beyond, f"1 thread against {fix}",
                                      suffix=(f"; {fix} makes it {by_fix.effect_text()}: torch's own thread count "
                                              f"is not the cause, {cause}"),
                                      a=cell, b=narrow, setting=probe_text(self.one)), ""
            shares.append(f"; {fix} makes it {by_fix.effect_text()}, and 1 thread is {beyond.effect_text()} "
                          "beyond that")
        return None, "".join(shares)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.one, self.busy] if facts is None or facts.cpus > 1 else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        if facts.cpus <= 1:
            return "one CPU: no thread count to vary and nothing to oversubscribe"
        fit = facts.of(CPU_FIT)
        if fit is not None and fit.sets_own_count and fit.over and fit.usable == 1:
            # clamp=usable is then one thread held against the code's own calls: the same measurement, kept.
            return (f"its own code sets torch's thread count ({fit.asked_text}) past the 1 CPU it may use: "
                    f"threads=1 would be undone by it, and one thread held against it is the probe of "
                    f"{CpuFit.title}")
        if facts.torch_threads == 1:
            return "it runs torch on one thread already (its own code set it): threads=1 would change nothing"
        return waited(facts)

    def _neighbour(self, ctx: Context) -> str:
        cell = ctx.probe_cell(self.busy)
        cmp = None if cell is None else ctx.compare(cell, ctx.baseline)
        if cmp is None or not cmp.slower:
            return ""
        wait = CpuWait.of(ctx, ctx.baseline, cell)
        return f"; another busy BLAS pool beside it makes it {cmp.effect_text()} ({wait.text()})"

    def _outside(self, ctx: Context) -> str:
        """Whether other processes shared the CPUs with the unchanged workload: then part of the
        oversubscription is theirs, not the workload's own."""
        runs = queries.ok_runs(ctx.doc, ctx.baseline)
        if not queries.mostly_shared(runs):
            return ""
        busy = float(np.median([queries.beside_cpus(r) for r in runs]))
        return (f"; other processes kept {busy:.2f} CPUs busy beside it (median over its processes): they "
                "oversubscribe the CPUs with it, so on a quiet machine the effect is smaller")

    @staticmethod
    def _flushed_caller(ctx: Context) -> str:
        """Where the code flushed subnormals in its calling thread alone: one thread is then that thread, which
        computes at full speed on subnormal values the others pay for (the denormals cause's to name)."""
        state = ctx.facts.of(FLUSH_STATE) if ctx.facts is not None else None
        if state is None or not (state.partial and state.caller):
            return ""
        return (f"; its one thread is the calling thread, the one that flushes subnormals ({state.text()}): "
                "see denormals")

    def judge_phase(self, ctx: Context) -> Finding | None:
        cell = ctx.probe_cell(self.one)
        cmp = None if cell is None else ctx.compare(cell, ctx.baseline)
        if cmp is None:
            return None
        wait = CpuWait.of(ctx, ctx.baseline, cell)
        evidence = {**wait.evidence("all", "1"), "pools": ctx.facts.pools if ctx.facts else []}
        neighbour = self._neighbour(ctx)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.one), evidence=evidence)
        narrower_only, shares = self._beyond_narrower(ctx, cell) if cmp.faster else (None, "")
        if narrower_only is not None:
            return narrower_only
        if cmp.faster:
            head = f"with 1 thread it is {cmp.effect_text()}; {wait.text()}; pools: {_pools(ctx.facts)}"
            if wait.fell(ctx.saved_ns(cmp)):
                found = f"{head}: {mechanism(THREADS)}{shares}{self._outside(ctx)}{neighbour}"
                return self.finding(ctx, cmp, found, Status.CAUSE, **fields)
            return self.finding(ctx, cmp, f"{head}{wait.unconfirmed()}{self._flushed_caller(ctx)}{neighbour}",
                                Status.UNCONFIRMED, **fields)
        if cmp.slower:
            return self.finding(ctx, cmp, f"1 thread is {cmp.effect_text()}: its threads do useful work, not "
                                          f"oversubscribed{neighbour}", Status.NOT_CAUSE, **fields)
        return self.not_found(ctx, cmp, "1 thread", suffix=neighbour, **fields)


CAUSES = (Threads(),)
