"""Cause: the state earlier phases leave in the process (how seed 1's gap shows).

For a workload with more than one phase, each later phase is also measured
alone in a fresh process (``only=PHASE``, which the workload sees as
``rec.runs(phase)``) and compared with the same phase after the earlier
ones. The page faults per iteration of both say whether the allocator is
what the earlier phases change.
"""

from __future__ import annotations

from ..._results import queries, wording
from ..._results.counter_evidence import MINOR_FAULTS, WORDS
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause

__all__ = ["Order", "CAUSES"]


class Order(Cause):
    name = "order"
    order = 70
    title = "process state left by earlier phases"
    probe_words = "only=PHASE"

    def probes(self, facts: Facts | None) -> list[dict]:
        return [{"only": phase} for phase in (facts.phases[1:] if facts else [])]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        return None if len(facts.phases) > 1 else "one phase: no earlier phase to leave state behind"

    def judge_phase(self, ctx: Context) -> Finding | None:
        phases, phase = (ctx.facts.phases if ctx.facts else []), ctx.phase
        probe = {"only": phase}
        cell = ctx.probe_cell(probe)
        if phase not in phases[1:] or cell is None:
            return None
        ran = {p for r in queries.ok_runs(ctx.doc, cell) for p in r["phases"]}
        earlier = ", ".join(phases[:phases.index(phase)])
        if ran - {phase}:
            text = (f"not measured: the workload ran {', '.join(sorted(ran))} when told to run only {phase}: let it "
                    "ask rec.runs(phase) before each phase")
            return self.finding(ctx, None, text, Status.UNRESOLVED, a=cell, b=ctx.baseline, setting=f"only={phase}")
        cmp = ctx.compare(cell, ctx.baseline)
        if cmp is None:
            return None
        faults = (f"{WORDS[MINOR_FAULTS]} {wording.count(ctx.counter(cell, MINOR_FAULTS))} alone, "
                  f"{wording.count(ctx.counter(ctx.baseline, MINOR_FAULTS))} after {earlier}")
        fields = dict(a=cell, b=ctx.baseline, setting=f"only={phase}",
                      evidence={"earlier": phases[:phases.index(phase)]})
        if cmp.beyond_band:
            return self.finding(ctx, cmp, f"{cmp.relation(f'{phase} alone in a fresh process', f'after {earlier}')} "
                                          f"({faults}): what runs before it changes its speed", Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, f"running {phase} alone", suffix=f" ({faults})", **fields)


CAUSES = (Order(),)
