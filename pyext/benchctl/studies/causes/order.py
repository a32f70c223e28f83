"""Cause: the state earlier phases leave in the process (how seed 1's gap shows).

For a workload with more than one phase, each later phase is also measured
alone in a fresh process (``only=PHASE``, which the workload sees as
``rec.runs(phase)``) and compared with the same phase after the earlier
ones. The page faults per iteration of both say whether the allocator is
what the earlier phases change.
"""

from __future__ import annotations

from ...results import processes, queries, wording
from ...results.verdict import Finding
from .base import CAUSE, UNRESOLVED, Cause, Context, Facts, counter

__all__ = ["Order"]


class Order(Cause):
    name = "order"
    title = "process state left by earlier phases"

    def probes(self, facts: Facts) -> list[dict]:
        return [{"only": phase} for phase in facts.phases[1:]]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        return None if len(facts.phases) > 1 else "one phase: no earlier phase to leave state behind"

    def judge(self, ctx: Context, phase: str) -> Finding | None:
        phases = ctx.facts.phases
        if phase not in phases[1:]:
            return None
        probe = {"only": phase}
        cell = ctx.cell(probe)
        ran = {p for r in queries.ok_runs(ctx.doc, cell) for p in r["phases"]}
        earlier = ", ".join(phases[:phases.index(phase)])
        if ran - {phase}:
            text = (f"not measured: the workload ran {', '.join(sorted(ran))} when told to run only {phase}: let it "
                    "ask rec.runs(phase) before each phase")
            return self.finding(phase, None, text, UNRESOLVED, a=cell, b=ctx.baseline, setting=f"only={phase}",
                                significant=None)
        cmp = ctx.compare(phase, probe)
        if cmp is None:
            return None
        faults = (f"minor page faults/iter {counter(ctx.counter(phase, probe, 'minor_faults_per_iter'))} alone, "
                  f"{counter(ctx.counter(phase, None, 'minor_faults_per_iter'))} after {earlier}")
        fields = dict(a=cell, b=ctx.baseline, setting=f"only={phase}",
                      evidence={"earlier": phases[:phases.index(phase)]})
        if cmp["outcome"] == processes.EFFECT:
            how, interval = wording.slower_or_faster(cmp["ratio"], cmp["ci95"])
            return self.finding(phase, cmp, f"{phase} alone in a fresh process is {how} than after {earlier} "
                                            f"{interval} ({faults}): what runs before it changes its speed", CAUSE,
                                **fields)
        return self.not_found(phase, cmp, f"running {phase} alone", suffix=f" ({faults})", **fields)
