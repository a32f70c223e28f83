"""Which glibc mechanism makes one cell fault where another does not, from the malloc readback.

Every worker reads glibc malloc's state where each phase ends (:mod:`benchctl.malloc_state`).
A request is mapped, and unmapped again on free, when it is at or above the mmap threshold and
no free heap block holds it: so in a phase, every block larger than ``max(threshold, largest
free block)`` is faulted in anew each time it is allocated. :class:`PhaseReadback` is that
state for one cell in one phase: each process's where the phase ended (probed in full: only
the last phase is) and where the phase before it ended (often ``mallinfo2()`` alone).
:func:`mechanism` compares the cell that faults with one that does not and says why, in the
two ways the readback tells apart: a threshold raised by freeing mapped blocks, or the free
heap blocks an earlier phase left behind. A threshold a tunable fixed is named where it is read.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ...malloc_state import DYNAMIC_THRESHOLD_MAX, TRIM_PER_MMAP, MallocState, size_text
from ...results import queries, wording

__all__ = ["CLEARLY", "PhaseReadback", "Mechanism", "mechanism"]

#: One cell's mapping size counts as different from another's when it is this many times larger.
CLEARLY = 2.0


def _median(values: list[int]) -> int:
    return int(statistics.median(values))


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
        ended = tuple(s for s in queries.malloc_states(doc, cell, phase) if s.is_glibc and s.probed)
        if not ended:
            return None
        started = tuple(s for s in queries.malloc_states(doc, cell, phase, at_start=True) if s.is_glibc)
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


def mechanism(slow: PhaseReadback, fast: PhaseReadback, faults: float | None) -> Mechanism | None:
    """The mechanism that makes ``slow`` map blocks ``fast`` keeps, or None when the readback shows none
    (both map the same sizes: the faults come from elsewhere)."""
    if slow.maps_above is None or not _larger(fast.maps_above, slow.maps_above):
        return None
    if fast.threshold is not None and fast.largest_free >= fast.threshold:
        return Mechanism("free_heap", slow, fast, faults)  # its free blocks, not its threshold, keep blocks unmapped
    return Mechanism("threshold", slow, fast, faults)
