"""Cause: memory returned to the OS and faulted back in (the allocator).

glibc gives large blocks back to the OS on ``free`` and trims the heap, so a
loop that frees and reallocates big tensors page-faults them in again on
every iteration. The probes keep freed memory (``alloc=retain``) or swap the
allocator (jemalloc, tcmalloc, where installed); the evidence is minor page
faults per iteration, which must fall with the time.
"""

from __future__ import annotations

from ... import alloc
from ...results import processes
from ...results.verdict import Finding
from .base import CAUSE, UNCONFIRMED, Cause, Context, Facts, counter, effect_text, moved_down

__all__ = ["FAULT_COST_US", "NEGLIGIBLE_SHARE", "Allocator"]

#: A minor fault costs at least this many microseconds here (page zeroing included; 0.5-3 µs seen).
FAULT_COST_US = 0.5
#: Faults that cost less than this share of an iteration cannot explain its time.
NEGLIGIBLE_SHARE = 0.01
_FAULTS = "minor_faults_per_iter"


class Allocator(Cause):
    name = "allocator"
    title = "allocator (memory returned to the OS and faulted back in)"

    def probes(self, facts: Facts) -> list[dict]:
        preloads = [name for name, a in alloc.ALLOCATORS.items()
                    if isinstance(a, alloc.PreloadedAllocator) and a.find() is not None]
        return [{"alloc": name} for name in ["retain", *preloads]]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        costs = []
        for phase in facts.phases:
            faults, ms = facts.counters[phase].get(_FAULTS), facts.median_ms.get(phase)
            if faults is None or not ms:
                return None  # unknown: nothing is ruled out
            cost_ms = faults * FAULT_COST_US / 1e3
            if cost_ms >= NEGLIGIBLE_SHARE * ms:
                return None
            costs.append(f"{counter(faults)} minor faults per {phase} iteration would cost about "
                         f"{cost_ms * 1e3:.0f} µs of its {ms:.3g} ms")
        return "; ".join(costs) + f" (at {FAULT_COST_US} µs a fault): under {NEGLIGIBLE_SHARE:.0%}"

    def judge(self, ctx: Context, phase: str) -> Finding | None:
        before = ctx.counter(phase, None, _FAULTS)
        tried = [(probe, ctx.compare(phase, probe)) for probe in self.probes(ctx.facts)]
        tried = [(probe, cmp) for probe, cmp in tried if cmp is not None]
        if not tried:
            return None
        faster = [(p, c) for p, c in tried if c["outcome"] == processes.EFFECT and c["ratio"] < 1]
        probe, cmp = min(faster, key=lambda pc: pc[1]["ratio"]) if faster else tried[0]
        after = ctx.counter(phase, probe, _FAULTS)
        setting = f"alloc={probe['alloc']}"
        faults = f"minor page faults/iter go from {counter(before)} to {counter(after)}"
        evidence = {"faults_per_iter": {"default": before, probe["alloc"]: after},
                    "tried": {f"alloc={p['alloc']}": c["outcome"] for p, c in tried}}
        if not faster:
            return self.not_found(phase, cmp, setting, suffix=f"; {faults}", a=ctx.cell(probe), b=ctx.baseline,
                                  setting=setting, evidence=evidence)
        if moved_down(before, after):
            return self.finding(phase, cmp, f"with {setting} it is {effect_text(cmp)}; {faults}: memory returned to "
                                            "the OS and faulted back in", CAUSE, a=ctx.cell(probe), b=ctx.baseline,
                                setting=setting, evidence=evidence)
        return self.finding(phase, cmp, f"with {setting} it is {effect_text(cmp)}, yet {faults}: the mechanism is "
                                        "not the allocator's page faults", UNCONFIRMED, a=ctx.cell(probe),
                            b=ctx.baseline, setting=setting, evidence=evidence)
