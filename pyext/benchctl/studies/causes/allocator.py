"""Cause: memory returned to the OS and faulted back in (the allocator).

glibc gives large blocks back to the OS on ``free`` and trims the heap, so a
loop that frees and reallocates big tensors page-faults them in again on
every iteration. The probes keep freed memory (``alloc=retain``) or swap the
allocator (jemalloc, tcmalloc, where installed); the evidence is minor page
faults per iteration, which must fall with the time. Where the workers read
glibc's state back (:mod:`benchctl.malloc_state`), the finding also says which
glibc mechanism it is (:mod:`.malloc_readback`: the mmap threshold, or the free
heap blocks another order of the workload left behind) and names the fixes a
user can apply, with the effect of those the run measured.
"""

from __future__ import annotations

from ... import alloc
from ...malloc_state import FIXING_TUNABLES
from ... import settings as _settings
from ...results import counter_evidence, queries
from ...results.comparison import Outcome
from ...results.counter_evidence import MINOR_FAULTS
from ...results.facts import Facts
from ...results.findings import Finding, Status
from ...results.rules import Context
from ...results.verdict import setting_text
from ..cause import Cause, faults_negligible, mechanism, probe_of
from .malloc_readback import PhaseReadback
from .malloc_readback import mechanism as glibc_mechanism

__all__ = ["UNMEASURED_FIXES", "Allocator"]

#: The fixes a user can apply that no cell of a run measures, by the allocator choice that stands for them
#: (None: none does): the same glibc thresholds through the environment, another allocator, a warm-up.
UNMEASURED_FIXES: dict[str | None, str] = {
    "retain": " ".join(f"{FIXING_TUNABLES[name]}={value}" for name, value in alloc.RETAIN_TUNABLES.items())
              + " (the environment spelling of alloc=retain's tunables)",
    "jemalloc": "jemalloc (LD_PRELOAD, alloc=jemalloc)",
    "tcmalloc": "tcmalloc (LD_PRELOAD, alloc=tcmalloc)",
    None: "a warm-up before the timed loop",
}


def _allocator(cell: dict) -> str:
    return cell.get("with", cell).get("alloc", "default")


def _label(cell: dict, other: dict | None, matrix: dict[str, list]) -> str:
    """``"order=eval_only"``: the workload parameters in which ``cell`` differs from ``other``; without
    ``other``, those the matrix varies (a seed's order, which none of explain's cells has)."""
    if other is not None:
        keys = [k for k in cell if cell[k] != other.get(k)]
    else:
        keys = [k for k in _settings.split_cell(cell)[1] if len(matrix.get(k, ())) > 1]
    return " ".join(setting_text(k, cell[k]) for k in keys) if keys else "the unchanged workload"


def _fewest_faults_alike(ctx: Context) -> dict | None:
    """The cell with the baseline's settings and other workload parameters (another ``order``) whose minor
    faults in this phase fall from the baseline's, the fewest of them; None when there is none."""
    settings_of = _settings.split_cell(ctx.baseline)[0]
    before = ctx.counter(ctx.baseline, MINOR_FAULTS)
    alike = [c for c in queries.cells(ctx.doc) if c != ctx.baseline and _settings.split_cell(c)[0] == settings_of
             and counter_evidence.moved_down(MINOR_FAULTS, before, ctx.counter(c, MINOR_FAULTS))]
    return min(alike, key=lambda c: ctx.counter(c, MINOR_FAULTS), default=None)


def _glibc_text(ctx: Context) -> tuple[str, dict, str]:
    """("; glibc readback: ..." or "", its evidence, what a warm-up would have to do): which glibc mechanism
    makes the baseline fault."""
    fast_cell = _fewest_faults_alike(ctx)
    slow = PhaseReadback.of(ctx.doc, ctx.baseline, ctx.phase, _label(ctx.baseline, fast_cell, ctx.matrix))
    if slow is None:
        return "", {}, ""
    faults = ctx.counter(ctx.baseline, MINOR_FAULTS)
    fast = None if fast_cell is None else PhaseReadback.of(ctx.doc, fast_cell, ctx.phase,
                                                           _label(fast_cell, ctx.baseline, ctx.matrix))
    found = None if fast is None else glibc_mechanism(slow, fast, faults)
    evidence = {"mechanism": None if found is None else found.kind,
                "threshold_bytes": {slow.label: slow.threshold}, "largest_free_bytes": {slow.label: slow.largest_free}}
    if fast is not None:
        evidence["threshold_bytes"][fast.label] = fast.threshold
        evidence["largest_free_bytes"][fast.label] = fast.largest_free
    if found is None:
        return f"; glibc readback: {slow.mapping_text(faults)}", evidence, ""
    return f"; {found.text()}", evidence, found.warmup_text()


def _fixes_text(tried: list, warmup: str) -> str:
    """``"; fixes measured here: alloc=retain (...) 1.52× faster; not measured here: MALLOC_MMAP_THRESHOLD_=..."``:
    each allocator the run tried with its outcome, then the fixes no cell measured."""
    measured = [f"{setting_text('alloc', _allocator(cell))} ({alloc.ALLOCATORS[_allocator(cell)].help}) "
                f"{cmp.headline()}" for cell, cmp in tried]
    # alloc=retain's tunables as variables and a warm-up are never a cell; another allocator may be.
    names = {_allocator(cell) for cell, _ in tried}
    unmeasured = [text + (f" ({warmup})" if name is None and warmup else "") for name, text in UNMEASURED_FIXES.items()
                  if not isinstance(alloc.ALLOCATORS.get(name), alloc.PreloadedAllocator) or name not in names]
    return f"; fixes measured here: {', '.join(measured)}; not measured here: {', '.join(unmeasured)}"


class Allocator(Cause):
    name = "allocator"
    title = "allocator"

    def probes(self, facts: Facts | None) -> list[dict]:
        preloads = [name for name, a in alloc.ALLOCATORS.items()
                    if isinstance(a, alloc.PreloadedAllocator) and a.find() is not None]
        return [probe_of("alloc")] + [{"alloc": name} for name in preloads]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        return faults_negligible(facts)

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
        faults_fell = counter_evidence.moved_down(MINOR_FAULTS, before, after)
        # The readback explains faults that fell with the probe, also while the time is still open.
        explain = faults_fell and (faster or cmp.outcome in (Outcome.UNRESOLVED, Outcome.ONE_PROCESS))
        glibc, readback, warmup = _glibc_text(ctx) if explain else ("", {}, "")
        if readback:
            fields["evidence"]["glibc"] = readback
        fixes = _fixes_text(tried, warmup) if glibc else ""
        if not faster:
            return self.not_found(ctx, cmp, setting, suffix=f"; {moved}{glibc}{fixes}", **fields)
        if faults_fell:
            return self.finding(ctx, cmp, f"with {setting} it is {cmp.effect_text()}; {moved}: {mechanism('alloc')}"
                                f"{glibc}{fixes}", Status.CAUSE, **fields)
        return self.finding(ctx, cmp, f"with {setting} it is {cmp.effect_text()}, yet {moved}: the mechanism is not "
                                      "the allocator's page faults", Status.UNCONFIRMED, **fields)
