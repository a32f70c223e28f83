"""Cause: another library's thread pool competing with torch's for the same CPUs.

numpy's OpenBLAS (loaded by ``import torch`` itself) sizes its pool to every CPU, as torch's OpenMP
team does; a workload that alternates numpy products and torch ops runs both, and each pool's threads
spin after their work while the other's need the CPUs (numpy #29352: ``np.dot`` 8 s -> 33 s after
``import torch``). The probe caps every pool but torch's own at one thread (``pools=capped``: torch
keeps its count), read back after every timed iteration; the evidence is the CPU time native threads outside
torch's team took over the probe worker's timed iterations (the workload's own Python threads and the
profiler's, which runs only after them, left out), and the context switches per iteration.

Its share and the thread count's are told apart: :class:`~.threads.Threads` judges one thread for
torch against this probe's cell when capping the other pools already made it faster, so each cause
claims only what its own fix removes.
"""

from __future__ import annotations

from dataclasses import asdict

from ..._results import wording
from ..._results.counter_evidence import CpuWait
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..python_time.probe import quoted as split_quoted
from ..._cause import Cause, mechanism, probe_of, probe_text
from .probe import PROBE, ThreadCpu
from .setting import CAP_OTHER_POOLS

__all__ = ["CompetingPools", "FIX", "CAUSES"]

#: What a user does about it, said once a probe measured it.
FIX = ("cap numpy's pool in the code (threadpoolctl.threadpool_limits(1, user_api='blas')) or at start "
       "(OPENBLAS_NUM_THREADS=1)")


class CompetingPools(Cause):
    name = CAP_OTHER_POOLS.name
    order = 80
    title = "competing thread pools (another library's pool beside torch's)"
    probe = probe_of(CAP_OTHER_POOLS)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or facts.cpus > 1 else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        if facts.cpus <= 1:
            return "one CPU: no two pools to compete for it"
        use = facts.of(PROBE)
        if use is None:
            return None  # not watched (a decorated workload times itself): nothing rules it out
        if not use.others_pooled:
            beside = ", ".join(use.others) or "none"
            return f"no pool beside torch's own has more than one thread (beside it: {beside})"
        if not use.others_busy:
            return f"the pools beside torch's ({', '.join(use.others)}) are idle: {_text(use)}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        cell = ctx.probe_cell(self.probe)
        cmp = None if cell is None else ctx.compare(cell, ctx.baseline)
        if cmp is None:
            return None
        wait = CpuWait.of(ctx, ctx.baseline, cell)
        switches = wait.text()
        use = ctx.facts.of(PROBE) if ctx.facts else None
        busy = (f"; in the probe {_text(use)}" if use else "") + split_quoted(ctx.facts)
        phrase = CAP_OTHER_POOLS.facts_phrase(ctx.readback(cell, CAP_OTHER_POOLS.name) or {})
        held = f" ({phrase})" if phrase else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={**wait.evidence("off", "capped"),
                                "thread_cpu": None if use is None else asdict(use)})
        if cmp.faster:
            head = (f"with every pool but torch's own at one thread{held}, torch keeping its count, it is "
                    f"{cmp.effect_text()}; {switches}{busy}")
            if wait.fell(ctx.saved_ns(cmp)):
                return self.finding(ctx, cmp, f"{head}: {mechanism(CAP_OTHER_POOLS)}; the fix: {FIX}", Status.CAUSE,
                                    **fields)
            return self.finding(ctx, cmp, f"{head}{wait.unconfirmed()}", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, "capping the other pools", suffix=f"; {switches}{busy}", **fields)


def _text(use: ThreadCpu) -> str:
    """``"3 native threads outside torch's team took 120 ms of CPU over 140 ms of timed iterations (torch's
    team 150 ms)"``."""
    return (f"{use.other_threads} native thread(s) outside torch's team took {wording.count(use.other_ms)} ms "
            f"of CPU over {wording.count(use.wall_ms)} ms of timed iterations (torch's team "
            f"{wording.count(use.team_ms)} ms)")


CAUSES = (CompetingPools(),)
