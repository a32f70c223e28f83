"""Cause: memory returned to the OS and faulted back in (the allocator).

glibc gives large blocks back to the OS on ``free`` and trims the heap, so a
loop that frees and reallocates big tensors page-faults them in again on
every iteration. The probes keep freed memory (``alloc=retain``) or swap the
allocator (jemalloc, tcmalloc, where installed); the evidence is minor page
faults per iteration, which must fall with the time.
"""

from __future__ import annotations

from ... import alloc
from ...results import counter_evidence, wording
from ...results.counter_evidence import MINOR_FAULTS
from ...results.facts import Facts
from ...results.findings import Finding, Status
from ...results.rules import Context
from ...results.verdict import setting_text
from .base import Cause, mechanism, probe_of

__all__ = ["FAULT_COST_US", "NEGLIGIBLE_SHARE", "Allocator"]

#: A minor fault costs at least this many microseconds here (page zeroing included; 0.5-3 µs seen).
FAULT_COST_US = 0.5
#: Faults that cost less than this share of an iteration cannot explain its time.
NEGLIGIBLE_SHARE = 0.01


def _allocator(cell: dict) -> str:
    return cell.get("with", cell).get("alloc", "default")


class Allocator(Cause):
    name = "allocator"
    title = "allocator"

    def probes(self, facts: Facts | None) -> list[dict]:
        preloads = [name for name, a in alloc.ALLOCATORS.items()
                    if isinstance(a, alloc.PreloadedAllocator) and a.find() is not None]
        return [probe_of("alloc")] + [{"alloc": name} for name in preloads]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        costs = []
        for phase in facts.phases:
            faults, ms = facts.counters[phase].get(MINOR_FAULTS), facts.median_ms.get(phase)
            if faults is None or not ms:
                return None  # unknown: nothing is ruled out
            cost_ms = faults * FAULT_COST_US / 1e3
            if cost_ms >= NEGLIGIBLE_SHARE * ms:
                return None
            costs.append(f"{wording.count(faults)} minor faults per {phase} iteration would cost about "
                         f"{cost_ms * 1e3:.0f} µs of its {ms:.3g} ms")
        if not costs:
            return None
        return "; ".join(costs) + f" (at {FAULT_COST_US} µs a fault): under {NEGLIGIBLE_SHARE:.0%}"

    def judge_phase(self, ctx: Context) -> Finding | None:
        """Each other allocator the run measured against the unchanged one, by time and minor page
        faults per iteration; the fastest that is called faster speaks for them all."""
        cells = [c for c in (ctx.probe_cell(p) for p in self.probes(ctx.facts)) if c is not None]
        tried = [(cell, cmp) for cell in cells if (cmp := ctx.compare(cell, ctx.baseline)) is not None]
        if not tried:
            return None
        faster = [(c, cmp) for c, cmp in tried if cmp.faster]
        cell, cmp = min(faster, key=lambda pair: pair[1].ratio) if faster else tried[0]
        before, after = ctx.counter(ctx.baseline, MINOR_FAULTS), ctx.counter(cell, MINOR_FAULTS)
        setting = setting_text("alloc", _allocator(cell))
        moved = counter_evidence.change_text(MINOR_FAULTS, before, after)
        fields = dict(a=cell, b=ctx.baseline, setting=setting,
                      evidence={"faults_per_iter": {_allocator(ctx.baseline): before, _allocator(cell): after},
                                "tried": {setting_text("alloc", _allocator(c)): cmp.outcome.value
                                          for c, cmp in tried}})
        if not faster:
            return self.not_found(ctx, cmp, setting, suffix=f"; {moved}", **fields)
        if counter_evidence.moved_down(MINOR_FAULTS, before, after):
            return self.finding(ctx, cmp, f"with {setting} it is {cmp.effect_text()}; {moved}: {mechanism('alloc')}",
                                Status.CAUSE, **fields)
        return self.finding(ctx, cmp, f"with {setting} it is {cmp.effect_text()}, yet {moved}: the mechanism is not "
                                      "the allocator's page faults", Status.UNCONFIRMED, **fields)
