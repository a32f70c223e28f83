"""Cause: torch's inter-op pool larger than the CPUs, with inter-op work to run on it.

TorchScript's ``torch.jit.fork`` runs each forked function as a task of torch's inter-op pool
(``torch.set_num_interop_threads``; by default one thread per hardware thread, which a CPU mask or a
container's quota does not shrink), and each task's ops run their own intra-op team: with more forked
tasks running at once than CPUs, they compete for them. The probe worker reads the pool's size and its
CPUs (:mod:`.probe`); the inter-op work is the forked functions of its profiled call (its op table).
No setting measures it: torch fixes the inter-op count once inter-op work has started or the code set it,
so no cell can change it under the code. The finding is open (``?``) where both show, and the cause is
ruled out before running otherwise. A fork in eager Python runs at once on the calling thread (no inter-op
work), and work ``at::launch`` queues from C++ has no name in the profile: neither is seen here.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, probe_phase
from .probe import PROBE, InteropFacts

__all__ = ["FORKED", "interop_work", "at_once", "Interop", "CAUSES"]

#: The profiler's name of a function TorchScript forked onto the inter-op pool.
FORKED = "<forked function>"


def interop_work(facts: Facts | None) -> int:
    """The forked functions the probe worker's profiled call ran on the inter-op pool."""
    return sum(row.calls for row in (facts.op_table if facts is not None else ()) if row.op == FORKED)


def at_once(pool: InteropFacts, forked: int) -> int:
    """The most forked tasks that can have run at once: no more than the pool's threads or the tasks."""
    return min(pool.threads, forked)


def _functions(n: int) -> str:
    return f"{n} function{'s' * (n != 1)}"


class Interop(Cause):
    name = "interop"
    order = 146
    title = "torch's inter-op pool beyond the CPUs"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        pool: InteropFacts | None = facts.of(PROBE)
        if pool is None:
            return "the probe worker did not read torch's inter-op pool"
        if not pool.beyond_cpus:
            return f"{pool.text()}: it fits them"
        if not facts.op_table:
            return (f"{pool.text()}, but no op time of its call is known ({facts.unprofiled_why()}): no inter-op "
                    "work seen")
        forked = interop_work(facts)
        if not forked:
            return f"{pool.text()}, but its profiled call forked no function onto it (torch.jit.fork in TorchScript)"
        if at_once(pool, forked) <= pool.cpus:
            return (f"{pool.text()}, and its profiled call forked {_functions(forked)} onto it: at most "
                    f"{at_once(pool, forked)} at once, within them")
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        facts = ctx.facts
        pool: InteropFacts | None = facts.of(PROBE) if facts else None
        forked = interop_work(facts)
        if pool is None or ctx.phase != probe_phase(facts) or at_once(pool, forked) <= pool.cpus:
            return None
        team = f", each with torch's intra-op team of {facts.torch_threads} threads" if facts.torch_threads else ""
        return self.finding(
            ctx, None,
            f"{pool.text()} and its profiled call forked {_functions(forked)} onto it{team}: "
            f"forked tasks beyond the CPUs compete for them; not measured (torch fixes the inter-op count once "
            f"inter-op work has started, so no cell can change it under the code): to try, "
            f"torch.set_num_interop_threads({pool.cpus}) before any inter-op work",
            Status.UNCONFIRMED, evidence={"interop_threads": pool.threads, "cpus": pool.cpus, "forked": forked,
                                          "torch_threads": facts.torch_threads})


CAUSES = (Interop(),)
