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
from ..._libsplit import Kind
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
from ..python_time.probe import PROBE as LIBRARY_SPLIT
from .setting import THREADS

__all__ = ["SYNC_SHARE", "SYNC_MECHANISM", "SYNC_FIX", "Threads", "CAUSES"]

#: Where one thread is faster without the wait for a CPU falling, the team waiting on itself is the mechanism where
#: the OpenMP runtime (its fork, barriers and idle wait) held at least this share of the unchanged workload's CPU
#: time over the probe worker's timed iterations (the lower end of its samples' interval). A team at useful work
#: spends little there (2 threads, 0.5 s each, ~990 samples: a 512x512 matmul 1%, a small conv 13%); a small LSTM,
#: 2.0x slower on 2 threads than on one (0.48 against 0.24 ms a call, alternating blocks in one process), 36-71%.
SYNC_SHARE = 0.2
SYNC_MECHANISM = ("its team spends its time waiting on itself, not splitting work: each op's work is too small (or "
                  "split too unevenly) for a second thread to pay for the OpenMP runtime's fork and barriers")
SYNC_FIX = "run it on one thread (torch.set_num_threads(1)), or give each op more work (a larger batch)"


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
    def _synchronising(facts: Facts | None) -> str | None:
        """``"the OpenMP runtime held 43% of the CPU time of its timed iterations (at least 27% by its 30 samples;
        all of it: ...)"`` where it held at least :data:`SYNC_SHARE` of the probe worker's timed iterations' CPU time
        (at the lower end of its samples' interval), or None."""
        split = facts.of(LIBRARY_SPLIT) if facts is not None else None
        low = split.share_at_least(Kind.OPENMP) if split is not None else None
        if low is None or low < SYNC_SHARE:
            return None
        return (f"the {Kind.OPENMP.value} held {split.share(Kind.OPENMP):.0%} of the CPU time of its timed iterations "
                f"(at least {low:.0%} by its {split.samples:,} samples; all of it: {split.text()})")

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
            flushed = self._flushed_caller(ctx)
            waiting = None if flushed else self._synchronising(ctx.facts)
            if waiting is not None:  # a partly flushed team waits on its slow threads: that is the denormals cause's
                return self.finding(ctx, cmp, f"{head}; {waiting}: {SYNC_MECHANISM}; the fix: {SYNC_FIX}{shares}"
                                              f"{neighbour}", Status.CAUSE, **fields)
            return self.finding(ctx, cmp, f"{head}{wait.unconfirmed()}{flushed}{neighbour}",
                                Status.UNCONFIRMED, **fields)
        if cmp.slower:
            return self.finding(ctx, cmp, f"1 thread is {cmp.effect_text()}: its threads do useful work, not "
                                          f"oversubscribed{neighbour}", Status.NOT_CAUSE, **fields)
        return self.not_found(ctx, cmp, "1 thread", suffix=neighbour, **fields)


CAUSES = (Threads(),)
