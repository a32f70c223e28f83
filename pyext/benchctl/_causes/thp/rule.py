"""Cause: large buffers faulted in one 4 KiB page at a time, where transparent huge pages would map
them 2 MiB at a time.

A loop that allocates and frees buffers of megabytes (5000×5000 products, large activations)
maps them fresh each time and pays one page fault per 4 KiB page touched; torch's allocator
puts buffers of 2 MiB or more on huge pages when ``THP_MEM_ALLOC_ENABLE=1`` (#115990; candle
#2149: 22 → 63 it/s on 5000×5000 buffers). The probe worker reads the kernel's THP mode and
torch's variable (:mod:`.probe`): with the kernel's THP off, the
variable already set, or faults too few to matter, the cause is out before any cell runs.
The probe is ``thp=on``, read back from the mapping of a buffer the worker writes; the
evidence is the time with minor page faults per iteration falling with it. The allocator's
``alloc=retain`` removes the same faults another way (freed memory is kept, not faulted in
again): where the run measured both, the finding quotes it.
"""

from __future__ import annotations

from ..._results import counter_evidence
from ..._results.counter_evidence import MINOR_FAULTS
from ..._results.facts import Facts
from ..._results.findings import MECHANISM_UNCONFIRMED, Finding, Status
from ..._results.rules import Context

from ..._cause import Cause, faults_negligible, mechanism, probe_of, probe_text
from ..allocator.setting import ALLOCATOR
from .control import TORCH_ENV
from .probe import PROBE
from .setting import HUGE_PAGES

__all__ = ["FIX", "HugePages", "CAUSES"]

#: What a user sets, and what torch then does.
FIX = (f"{TORCH_ENV}=1 in the environment the process starts with (torch then aligns each buffer of 2 MiB or "
       "more to 2 MiB and asks the kernel to back it with huge pages)")


class HugePages(Cause):
    name = HUGE_PAGES.name
    order = 30
    title = "transparent huge pages for large buffers"
    probe = probe_of(HUGE_PAGES)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        pages = facts.of(PROBE)
        if pages is None or pages.mode is None:
            return "the kernel's transparent-huge-page mode was not read in the probe worker (no THP here)"
        if pages.mode == "never":
            return "the kernel's transparent huge pages are off (never): torch's allocator cannot get huge pages"
        if pages.torch_on:
            return f"torch already puts its buffers of 2 MiB or more on huge pages ({TORCH_ENV}={pages.torch_env})"
        return faults_negligible(facts)

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        probe = probe_text(self.probe)
        before, after = ctx.counter(ctx.baseline, MINOR_FAULTS), ctx.counter(cell, MINOR_FAULTS)
        moved = counter_evidence.change_text(MINOR_FAULTS, before, after)
        readback = ctx.readback(cell, HUGE_PAGES.name) or {}
        phrase = HUGE_PAGES.facts_phrase(readback)
        read = f"; {phrase}" if phrase else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe,
                      evidence={"faults_per_iter": {"default": before, "on": after}, "readback": readback})
        on_huge = bool(readback.get("huge_bytes"))
        faults_fell = counter_evidence.moved_down(MINOR_FAULTS, before, after)
        if cmp.faster and faults_fell and on_huge:
            return self.finding(ctx, cmp, f"with {probe} it is {cmp.effect_text()}; {moved}{read}: "
                                          f"{mechanism(HUGE_PAGES)}; the fix: {FIX}{_retain_text(ctx)}",
                                Status.CAUSE, **fields)
        if cmp.faster:
            why = "no buffer was read back on huge pages" if not on_huge else \
                f"{moved}: fewer TLB misses may be it, which no counter here can show"
            return self.finding(ctx, cmp, f"with {probe} it is {cmp.effect_text()}{read}, yet {why}: "
                                          f"{MECHANISM_UNCONFIRMED}", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, probe, suffix=f"; {moved}{read}", **fields)


def _retain_text(ctx: Context) -> str:
    """``"; alloc=retain ... gives 2.10× faster"``: the allocator's other way to the same faults, where the
    run measured it; "" otherwise."""
    cell = ctx.probe_cell(probe_of(ALLOCATOR))
    cmp = None if cell is None else ctx.compare(cell, ctx.baseline)
    if cmp is None:
        return ""
    return (f"; {probe_text(probe_of(ALLOCATOR))}, which keeps freed memory instead of faulting it in again, "
            f"measured {cmp.headline()}")


CAUSES = (HugePages(),)
