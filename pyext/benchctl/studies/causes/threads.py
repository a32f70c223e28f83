"""Causes: the thread count and oversubscription, and where the threads run.

:class:`Threads` runs the workload on one thread, and on all of them with
another BLAS pool kept busy beside it (:mod:`benchctl.contention`): a
workload that is faster on one thread than on all is oversubscribed, and its
context switches per iteration fall with the time; the busy pool shows how
sensitive it is to a neighbour. :class:`Placement` pins torch's team
(``pin=compact``); the evidence is CPU migrations per iteration.
"""

from __future__ import annotations

import numpy as np

from ...results import processes, queries
from ...results.verdict import Finding
from .base import CAUSE, NOT_CAUSE, UNCONFIRMED, Cause, Context, Facts, counter, effect_text, moved_down

__all__ = ["Threads", "Placement"]

_SWITCHES = "context_switches_per_iter"
_MIGRATIONS = "cpu_migrations_per_iter"
# Fewer CPU migrations per iteration than this in the probe: placement has nothing to fix.
_FEW_MIGRATIONS = 0.5


def _pools(facts: Facts) -> str:
    """The thread pools threadpoolctl saw, e.g. "libgomp openmp x2, libopenblas blas x2"."""
    found = [f"{p.get('prefix')} {p.get('user_api')} x{p.get('num_threads')}" for p in facts.pools]
    return ", ".join(found) or "none seen"


class Threads(Cause):
    name = "threads"
    title = "thread count and oversubscription"
    one = {"threads": 1}
    busy = {"busy": "pool"}

    def probes(self, facts: Facts) -> list[dict]:
        return [self.one, self.busy] if facts.cpus > 1 else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        return "one CPU: no thread count to vary and nothing to oversubscribe" if facts.cpus <= 1 else None

    def _neighbour(self, ctx: Context, phase: str) -> str:
        cmp = ctx.compare(phase, self.busy)
        if cmp is None or cmp["outcome"] != processes.EFFECT or cmp["ratio"] < 1:
            return ""
        switches = (f"{counter(ctx.counter(phase, None, _SWITCHES))} to "
                    f"{counter(ctx.counter(phase, self.busy, _SWITCHES))} context switches/iter")
        return f"; another busy BLAS pool beside it makes it {effect_text(cmp)} ({switches})"

    def _outside(self, ctx: Context) -> str:
        """Whether other processes shared the CPUs with the unchanged workload: then part of the
        oversubscription is theirs, not the workload's own."""
        runs = queries.ok_runs(ctx.doc, ctx.baseline)
        if not queries.mostly_shared(runs):
            return ""
        busy = float(np.median([queries.beside_cpus(r) for r in runs]))
        return (f"; other processes kept {busy:.2f} CPUs busy beside it (median over its processes): they "
                "oversubscribe the CPUs with it, so on a quiet machine the effect is smaller")

    def judge(self, ctx: Context, phase: str) -> Finding | None:
        cmp = ctx.compare(phase, self.one)
        if cmp is None:
            return None
        before, after = ctx.counter(phase, None, _SWITCHES), ctx.counter(phase, self.one, _SWITCHES)
        switches = f"context switches/iter go from {counter(before)} to {counter(after)}"
        evidence = {"context_switches_per_iter": {"all": before, "1": after}, "pools": ctx.facts.pools}
        neighbour = self._neighbour(ctx, phase)
        fields = dict(a=ctx.cell(self.one), b=ctx.baseline, setting="threads=1", evidence=evidence)
        if cmp["outcome"] == processes.EFFECT and cmp["ratio"] < 1:
            head = f"with 1 thread it is {effect_text(cmp)}; {switches}; pools: {_pools(ctx.facts)}"
            if moved_down(before, after):
                return self.finding(phase, cmp, f"{head}: more threads than the CPUs can run at once"
                                                f"{self._outside(ctx)}{neighbour}", CAUSE, **fields)
            return self.finding(phase, cmp, f"{head}, yet context switches do not fall with it: the mechanism is "
                                            f"unconfirmed{neighbour}", UNCONFIRMED, **fields)
        if cmp["outcome"] == processes.EFFECT:
            return self.finding(phase, cmp, f"1 thread is {effect_text(cmp)}: its threads do useful work, not "
                                            f"oversubscribed{neighbour}", NOT_CAUSE, **fields)
        return self.not_found(phase, cmp, "1 thread", suffix=neighbour, **fields)


class Placement(Cause):
    name = "placement"
    title = "thread placement (migrations between CPUs)"
    probe = {"pin": "compact"}

    def probes(self, facts: Facts) -> list[dict]:
        return [self.probe] if facts.cpus > 1 else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        if facts.cpus <= 1:
            return "one CPU: nothing to place"
        migrations = [facts.counters[p].get(_MIGRATIONS) for p in facts.phases]
        if migrations and all(m is not None and m < _FEW_MIGRATIONS for m in migrations):
            return (f"its threads do not move between CPUs ({', '.join(counter(m) for m in migrations)} "
                    "migrations per iteration in the probe)")
        return None

    def judge(self, ctx: Context, phase: str) -> Finding | None:
        cmp = ctx.compare(phase, self.probe)
        if cmp is None:
            return None
        before, after = ctx.counter(phase, None, _MIGRATIONS), ctx.counter(phase, self.probe, _MIGRATIONS)
        migrations = f"CPU migrations/iter go from {counter(before)} to {counter(after)}"
        evidence = {"cpu_migrations_per_iter": {"off": before, "compact": after}}
        fields = dict(a=ctx.cell(self.probe), b=ctx.baseline, setting="pin=compact", evidence=evidence)
        if cmp["outcome"] == processes.EFFECT and cmp["ratio"] < 1:
            head = f"pinned compactly it is {effect_text(cmp)}; {migrations}"
            if moved_down(before, after, least=0.5):
                return self.finding(phase, cmp, f"{head}: threads migrating between CPUs", CAUSE, **fields)
            return self.finding(phase, cmp, f"{head}, yet migrations do not fall with it: the mechanism is "
                                            "unconfirmed", UNCONFIRMED, **fields)
        return self.not_found(phase, cmp, "pinning", suffix=f"; {migrations}", **fields)
