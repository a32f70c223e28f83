"""Cause: where the threads run (migrations between CPUs).

:class:`Placement` pins torch's team (``pin=compact``); the evidence is CPU migrations per iteration.
"""

from __future__ import annotations

from ..._results import counter_evidence, wording
from ..._results.counter_evidence import CPU_MIGRATIONS
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from .setting import PINNING

__all__ = ["Placement", "CAUSES"]

# Fewer CPU migrations per iteration than this in the probe: placement has nothing to fix.
_FEW_MIGRATIONS = 0.5


class Placement(Cause):
    name = "placement"
    order = 50
    title = "thread placement (migrations between CPUs)"
    probe = probe_of(PINNING)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe] if facts is None or facts.cpus > 1 else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        if facts.cpus <= 1:
            return "one CPU: nothing to place"
        migrations = [facts.counters[p].get(CPU_MIGRATIONS) for p in facts.phases]
        if migrations and all(m is not None and m < _FEW_MIGRATIONS for m in migrations):
            return (f"its threads do not move between CPUs ({', '.join(wording.count(m) for m in migrations)} "
                    "migrations per iteration in the probe)")
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        before, after = ctx.counter(ctx.baseline, CPU_MIGRATIONS), ctx.counter(cell, CPU_MIGRATIONS)
        migrations = counter_evidence.change_text(CPU_MIGRATIONS, before, after)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={CPU_MIGRATIONS: {"off": before, "compact": after}})
        if cmp.faster:
            head = f"pinned compactly it is {cmp.effect_text()}; {migrations}"
            if counter_evidence.moved_down(CPU_MIGRATIONS, before, after):
                return self.finding(ctx, cmp, f"{head}: {mechanism(PINNING)}", Status.CAUSE, **fields)
            return self.finding(ctx, cmp, f"{head}, yet migrations do not fall with it: the mechanism is "
                                          "unconfirmed", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, "pinning", suffix=f"; {migrations}", **fields)


CAUSES = (Placement(),)
