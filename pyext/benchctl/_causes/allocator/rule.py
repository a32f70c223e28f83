"""Cause: memory returned to the OS and faulted back in (the allocator).

glibc gives large blocks back to the OS on ``free`` and trims the heap, so a
loop that frees and reallocates big tensors page-faults them in again on
every iteration. The probes keep freed memory (``alloc=retain``) or swap the
allocator (jemalloc, tcmalloc, where installed); the evidence is minor page
faults per iteration, which must fall with the time. Where the workers read
glibc's state back (:mod:`.control`), the finding also says which
glibc mechanism it is (:class:`PhaseReadback` and :func:`glibc_mechanism`, below: the mmap
threshold, or the free heap blocks another order of the workload left behind) and names the
fixes a user can apply, with the effect of those the run measured.

Which glibc mechanism makes one cell fault where another does not, from the malloc readback:
every worker reads glibc malloc's state where each phase ends (the allocator setting's
``phase_ended``). A request is mapped, and unmapped again on free, when it is at or above the
mmap threshold and no free heap block holds it: so in a phase, every block larger than
``max(threshold, largest free block)`` is faulted in anew each time it is allocated.
:class:`PhaseReadback` is that state for one cell in one phase: each process's where the phase
ended (probed in full: only the last phase is) and where the phase before it ended (often
``mallinfo2()`` alone). :func:`glibc_mechanism` compares the cell that faults with one that does
not and says why, in the two ways the readback tells apart: a threshold raised by freeing mapped
blocks, or the free heap blocks an earlier phase left behind. A threshold a tunable fixed is
named where it is read.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ... import alloc
from ... import settings as _settings
from ..._results import counter_evidence, queries, wording
from ..._results.comparison import Outcome
from ..._results.counter_evidence import MINOR_FAULTS
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._results.verdict import setting_text
from ..python_time.probe import quoted as split_quoted
from ..._cause import Cause, faults_negligible, mechanism, probe_of
from .control import DYNAMIC_THRESHOLD_MAX, FIXING_TUNABLES, TRIM_PER_MMAP, MallocState, size_text
from .setting import ALLOCATOR

__all__ = ["UNMEASURED_FIXES", "CLEARLY", "PhaseReadback", "Mechanism", "glibc_mechanism", "Allocator", "CAUSES"]

#: One cell's mapping size counts as different from another's when it is this many times larger.
CLEARLY = 2.0


def _median(values: list[int]) -> int:
    return int(statistics.median(values))


def malloc_states(doc: dict, cell: dict, phase: str, at_start: bool = False) -> list[MallocState]:
    """glibc malloc's state in each successful process of ``cell`` where ``phase`` ended; with ``at_start``,
    where the phase before it ended (what ``phase`` started from; processes that ran nothing before it
    started fresh and give none)."""
    states = []
    for run in queries.ok_runs(doc, cell):
        read_at = queries.phase_before(run, phase) if at_start else (phase if phase in run["phases"] else None)
        data = run["phases"].get(read_at, {}).get("malloc") if read_at is not None else None
        if data is not None:
            states.append(MallocState.from_json(data))
    return states


@dataclass(frozen=True)
class PhaseReadback:
    """glibc's state in ``cell``'s processes in ``phase``: ``ended`` where it ended, ``started`` where the
    phase before it ended (``before``: that phase's name; empty where it ran first), one per process."""

    label: str
    phase: str
    ended: tuple[MallocState, ...]
    started: tuple[MallocState, ...] = ()
    before: str | None = None

    @classmethod
    def of(cls, doc: dict, cell: dict, phase: str, label: str) -> "PhaseReadback | None":
        ended = tuple(s for s in malloc_states(doc, cell, phase) if s.is_glibc and s.probed)
        if not ended:
            return None
        started = tuple(s for s in malloc_states(doc, cell, phase, at_start=True) if s.is_glibc)
        runs = [r for r in queries.ok_runs(doc, cell) if phase in r["phases"]]
        before = queries.phase_before(runs[0], phase) if runs and started else None
        return cls(label, phase, ended, started, before)

    @staticmethod
    def _threshold(states: tuple[MallocState, ...]) -> int | None:
        """The median process's threshold; None (above the probe) counts as the largest."""
        known = [s.threshold_bytes for s in states]
        if sum(t is None for t in known) * 2 >= len(known):
            return None
        return _median([t if t is not None else states[0].probe_max_bytes for t in known])

    @property
    def threshold(self) -> int | None:
        return self._threshold(self.ended)

    @property
    def largest_free(self) -> int:
        return _median([s.largest_free_bytes for s in self.ended])

    @property
    def free(self) -> int:
        return _median([s.free_bytes for s in self.ended])

    @property
    def maps_above(self) -> int | None:
        """Blocks larger than this get their own mapping in this phase (None: none up to the probe's maximum)."""
        return None if self.threshold is None else max(self.threshold, self.largest_free)

    @property
    def fixed(self) -> tuple[str, ...]:
        return self.ended[0].fixed

    def threshold_text(self) -> str:
        return self.ended[0].threshold_text() if self.threshold is None else size_text(self.threshold)

    def mapping_text(self, faults: float | None) -> str:
        """``"in order=eval_only glibc's mmap threshold stands at 24.5 MiB ..., so each eval iteration maps and
        unmaps every block above 29.9 MiB, and glibc trims its heap top beyond 49 MiB free: 314k minor faults
        per iteration"``."""
        fixed = f" (fixed by {', '.join(self.fixed)})" if self.fixed else ""
        ceiling = "" if self.fixed else f", the most glibc raises it to is {size_text(DYNAMIC_THRESHOLD_MAX)}"
        if self.maps_above is None:
            what = f"maps no block up to {size_text(self.ended[0].probe_max_bytes)}"
        else:
            what = f"maps and unmaps every block above {size_text(self.maps_above)}"
        if not self.fixed and self.threshold is not None:
            # glibc sets the trim threshold to twice the mmap threshold whenever it raises the latter.
            what += f", and glibc trims its heap top beyond {size_text(TRIM_PER_MMAP * self.threshold)} free"
        return (f"in {self.label} glibc's mmap threshold stands at {self.threshold_text()}{fixed}{ceiling}, and its "
                f"largest free heap block is {size_text(self.largest_free)}, so each {self.phase} iteration {what}: "
                f"{wording.count(faults)} minor faults per iteration")


@dataclass(frozen=True)
class Mechanism:
    """Why ``slow`` faults in its phase where ``fast`` does not: ``kind`` is ``"free_heap"`` (fast's heap
    holds free blocks bigger than its threshold, which serve the phase's large requests) or
    ``"threshold"`` (fast's mmap threshold stands above slow's)."""

    kind: str
    slow: PhaseReadback
    fast: PhaseReadback
    faults: float | None

    def warmup_text(self) -> str:
        """What a warm-up before the timed loop would have to leave behind, by this mechanism."""
        if self.kind == "free_heap":
            source = f", as {self.fast.before} does in {self.fast.label}" if self.fast.before else ""
            return f"one that leaves free heap blocks larger than the loop's biggest{source}"
        return (f"one that frees a mapped block as large as the loop's biggest raises the threshold above them, "
                f"for blocks up to {size_text(DYNAMIC_THRESHOLD_MAX)}")

    def text(self) -> str:
        """``"glibc readback: in order=train_then_eval train left 1.2 GiB free in the heap, ...``"."""
        f = self.fast
        left = f"{f.phase} keeps {size_text(f.free)} free in the heap"
        if f.started:
            left = f"{f.before} left {size_text(_median([s.free_bytes for s in f.started]))} free in the heap"
            if all(s.probed for s in f.started):
                left += f" (blocks up to {size_text(_median([s.largest_free_bytes for s in f.started]))})"
        if self.kind == "free_heap":
            head = (f"in {f.label} {left}, and at the end of {f.phase} its largest free block is "
                    f"{size_text(f.largest_free)}: {f.phase}'s large blocks come from the heap")
        else:
            how = f"fixed by {', '.join(f.fixed)}" if f.fixed else "raised by freeing mapped blocks larger than it"
            head = f"in {f.label} glibc's mmap threshold stands at {f.threshold_text()} at the end of {f.phase} ({how})"
        return f"glibc readback: {head}; {self.slow.mapping_text(self.faults)}"


def _larger(a: int | None, b: int | None) -> bool:
    """Whether mapping size ``a`` is clearly larger than ``b`` (None: above the probe, the largest)."""
    if b is None:
        return False
    return a is None or a >= CLEARLY * b


def glibc_mechanism(slow: PhaseReadback, fast: PhaseReadback, faults: float | None) -> Mechanism | None:
    """The mechanism that makes ``slow`` map blocks ``fast`` keeps, or None when the readback shows none
    (both map the same sizes: the faults come from elsewhere)."""
    if slow.maps_above is None or not _larger(fast.maps_above, slow.maps_above):
        return None
    if fast.threshold is not None and fast.largest_free >= fast.threshold:
        return Mechanism("free_heap", slow, fast, faults)  # its free blocks, not its threshold, keep blocks unmapped
    return Mechanism("threshold", slow, fast, faults)


#: The fixes a user can apply that no cell of a run measures, by the allocator choice that stands for them
#: (None: none does): the same glibc thresholds through the environment, another allocator, a warm-up.
UNMEASURED_FIXES: dict[str | None, str] = {
    "retain": " ".join(f"{FIXING_TUNABLES[name]}={value}" for name, value in alloc.RETAIN_TUNABLES.items())
              + f" (the environment spelling of {ALLOCATOR.name}=retain's tunables)",
    "jemalloc": f"jemalloc (LD_PRELOAD, {ALLOCATOR.name}=jemalloc)",
    "tcmalloc": f"tcmalloc (LD_PRELOAD, {ALLOCATOR.name}=tcmalloc)",
    None: "a warm-up before the timed loop",
}


def _allocator(cell: dict) -> str:
    return cell.get("with", cell).get(ALLOCATOR.name, "default")


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
    measured = [f"{setting_text(ALLOCATOR.name, _allocator(cell))} ({alloc.ALLOCATORS[_allocator(cell)].help}) "
                f"{cmp.headline()}" for cell, cmp in tried]
    # alloc=retain's tunables as variables and a warm-up are never a cell; another allocator may be.
    names = {_allocator(cell) for cell, _ in tried}
    unmeasured = [text + (f" ({warmup})" if name is None and warmup else "") for name, text in UNMEASURED_FIXES.items()
                  if not isinstance(alloc.ALLOCATORS.get(name), alloc.PreloadedAllocator) or name not in names]
    return f"; fixes measured here: {', '.join(measured)}; not measured here: {', '.join(unmeasured)}"


class Allocator(Cause):
    name = "allocator"
    order = 20
    title = "allocator"

    def probes(self, facts: Facts | None) -> list[dict]:
        preloads = [name for name, a in alloc.ALLOCATORS.items()
                    if isinstance(a, alloc.PreloadedAllocator) and a.find() is not None]
        return [probe_of(ALLOCATOR)] + [{ALLOCATOR.name: name} for name in preloads]

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
        setting = setting_text(ALLOCATOR.name, _allocator(cell))
        moved = counter_evidence.change_text(MINOR_FAULTS, before, after)
        fields = dict(a=cell, b=ctx.baseline, setting=setting,
                      evidence={"faults_per_iter": {_allocator(ctx.baseline): before, _allocator(cell): after},
                                "tried": {setting_text(ALLOCATOR.name, _allocator(c)): cmp.outcome.value
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
            return self.finding(ctx, cmp, f"with {setting} it is {cmp.effect_text()}; {moved}: {mechanism(ALLOCATOR)}"
                                f"{glibc}{split_quoted(ctx.facts)}{fixes}", Status.CAUSE, **fields)
        return self.finding(ctx, cmp, f"with {setting} it is {cmp.effect_text()}, yet {moved}: the mechanism is not "
                                      "the allocator's page faults", Status.UNCONFIRMED, **fields)


CAUSES = (Allocator(),)
