"""Cause: more threads than the CPU mask or the cgroup quota lets the process run at once.

A mask cut below torch's thread count (``os.sched_setaffinity`` in the code, ``taskset`` after start:
#125547, 30x) or a cgroup quota below it (192 threads on an 8-CPU quota: onyx PR #12351) leaves team
threads waiting for a CPU at every barrier. The evidence, from the probe worker's profiled call once
the workload's code has set its mask and its count: the team's size against the CPUs its threads may
use together (each one's ``sched_getaffinity``), the tightest cgroup quota (v2 ``cpu.max``, v1
``cpu.cfs_quota_us``) and the periods throttled. The probe holds torch's count at the usable CPUs
(``clamp=usable``), also against the code's own ``torch.set_num_threads``: the plain ``threads=1``
probe is undone by such code, this one reads back what the code asked for and what ran.
"""

from __future__ import annotations

from dataclasses import asdict

from ..._results.counter_evidence import CpuWait
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from .probe import PROBE
from .setting import CLAMP

__all__ = ["CpuFit", "FIX", "CAUSES"]

#: What a user does about it, said once the probe measured it.
FIX = "size torch's threads to the CPUs the process may use (torch.set_num_threads(len(os.sched_getaffinity(0))))"


class CpuFit(Cause):
    name = "cpu_fit"
    order = 90
    title = "threads beyond the usable CPUs (CPU mask or cgroup quota)"
    probe = probe_of(CLAMP)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        fit = facts.of(PROBE)
        if fit is None:
            return None  # no profiled call (a decorated workload): nothing rules it out
        if not fit.over:
            return f"its team fits the CPUs it may use: {fit.text}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        wait = CpuWait.of(ctx, ctx.baseline, cell)
        switches = wait.text()
        fit = ctx.facts.of(PROBE) if ctx.facts else None
        probe = f"; in the probe {fit.text}" if fit else ""
        held = ctx.readback(cell, CLAMP.name) or {}
        phrase = CLAMP.facts_phrase(held)
        ran = f" ({phrase})" if phrase else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={**wait.evidence("off", "usable"), CLAMP.name: held,
                                "cpu_fit": None if fit is None else asdict(fit)})
        if cmp.faster:
            head = f"with torch's threads held at the CPUs it may use{ran} it is {cmp.effect_text()}; {switches}{probe}"
            if wait.fell(ctx.saved_ns(cmp)):
                return self.finding(ctx, cmp, f"{head}: {mechanism(CLAMP)}; the fix: {FIX}", Status.CAUSE,
                                    **fields)
            return self.finding(ctx, cmp, f"{head}{wait.unconfirmed()}", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, "threads held at the usable CPUs", suffix=f"{ran}; {switches}{probe}",
                              **fields)


CAUSES = (CpuFit(),)
