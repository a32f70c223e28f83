"""What the probe worker learns of torch's deterministic mode over its timed iterations: whether it was on as
they began and as they ended, the calls of the code that turned it on in them, and whether new memory was
filled (``torch.utils.deterministic.fill_uninitialized_memory``)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from ..._probe import Probe, ProbedCall
from . import control

__all__ = ["DeterminismFacts", "DeterminismProbe", "PROBE", "PROBES"]

# The probe note's keys, written and read here only.
_ON_BEFORE, _ON_AFTER, _ASKED = "deterministic_on_before", "deterministic_on_after", "deterministic_asked"
_WARN_ONLY, _FILLS = "deterministic_warn_only", "deterministic_fills"


@dataclass(frozen=True)
class DeterminismFacts:
    """Over the probe worker's timed iterations: the mode on as they began (``on_before``) and ended
    (``on_after``), the code's calls that turned it on in them (``asked``); as they ended, whether it only
    warns of an op without a deterministic kernel (``warn_only``) and whether new memory is filled (``fills``)."""

    on_before: bool = False
    on_after: bool = False
    asked: int = 0
    warn_only: bool = False
    fills: bool = True

    @property
    def seen_on(self) -> bool:
        return self.on_before or self.on_after or self.asked > 0

    def text(self) -> str:
        """``"torch's deterministic mode was on as the timed iterations began, filling new memory"``."""
        if not self.seen_on:
            return "torch's deterministic mode was off over the probe worker's timed iterations"
        if self.on_before:
            seen = "torch's deterministic mode was on as the timed iterations began"
        elif self.asked:
            seen = (f"the code turned torch's deterministic mode on {self.asked} time{'s' * (self.asked != 1)} "
                    "over its timed iterations")
        else:
            seen = "torch's deterministic mode was on as the timed iterations ended"
        fill = ("filling new memory (fill_uninitialized_memory on)" if self.fills
                else "new memory left unfilled (fill_uninitialized_memory off)")
        return f"{seen}{' (warn_only)' * self.warn_only}, {fill}"


@dataclass
class _Watched:
    on_before: bool
    on_after: bool = False
    asked: int = 0
    warn_only: bool = False
    fills: bool = True


class DeterminismProbe(Probe):
    key = "determinism"
    fact = DeterminismFacts

    @contextlib.contextmanager
    def watch(self) -> Iterator[_Watched]:
        seen = _Watched(control.is_on())
        with control.counting() as count:
            try:
                yield seen
            finally:
                seen.asked, seen.on_after = count.asked, control.is_on()
                seen.warn_only, seen.fills = control.warn_only(), control.fills()

    def record(self, probed: ProbedCall) -> dict:
        seen = probed.watcher(self)
        if seen is None:  # a workload that times itself: its iterations were not watched
            return {}
        return {_ON_BEFORE: seen.on_before, _ON_AFTER: seen.on_after, _ASKED: seen.asked,
                _WARN_ONLY: seen.warn_only, _FILLS: seen.fills}

    def read(self, note: dict) -> DeterminismFacts | None:
        if _ASKED not in note:
            return None
        return DeterminismFacts(bool(note.get(_ON_BEFORE)), bool(note.get(_ON_AFTER)), int(note[_ASKED]),
                                bool(note.get(_WARN_ONLY)), bool(note.get(_FILLS, True)))


PROBE = DeterminismProbe()
PROBES = (PROBE,)
