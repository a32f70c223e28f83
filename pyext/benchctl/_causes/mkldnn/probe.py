"""What the probe worker learns of torch's mkldnn (oneDNN) kernels over its timed iterations: whether this torch
has them, whether they were off as the iterations began and as they ended, and the calls of the code that
turned them off in them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from ..._probe import Probe, ProbedCall
from . import control

__all__ = ["MkldnnFacts", "MkldnnProbe", "PROBE", "PROBES"]

# The probe note's keys, written and read here only.
_AVAILABLE, _OFF_BEFORE, _OFF_AFTER, _ASKED = ("mkldnn_available", "mkldnn_off_before", "mkldnn_off_after",
                                               "mkldnn_asked_off")


@dataclass(frozen=True)
class MkldnnFacts:
    """Whether this torch was built with mkldnn (``available``); over the probe worker's timed iterations, the
    kernels off as they began (``off_before``) and ended (``off_after``), the code's calls that turned them off
    in them (``asked``)."""

    available: bool = True
    off_before: bool = False
    off_after: bool = False
    asked: int = 0

    @property
    def seen_off(self) -> bool:
        return self.available and (self.off_before or self.off_after or self.asked > 0)

    def text(self) -> str:
        """``"mkldnn was off as the timed iterations began"``."""
        if not self.available:
            return "this torch was built without mkldnn: nothing to probe"
        if self.off_before:
            return "mkldnn was off as the timed iterations began"
        if self.asked:
            return f"the code turned mkldnn off {self.asked} time{'s' * (self.asked != 1)} over its timed iterations"
        if self.off_after:
            return "mkldnn was off as the timed iterations ended"
        return "mkldnn on over the probe worker's timed iterations, nothing to probe"


@dataclass
class _Watched:
    off_before: bool
    off_after: bool = False
    asked: int = 0


class MkldnnProbe(Probe):
    key = "mkldnn"
    fact = MkldnnFacts

    @contextlib.contextmanager
    def watch(self) -> Iterator[_Watched]:
        seen = _Watched(not control.is_enabled())
        with control.counting() as count:
            try:
                yield seen
            finally:
                seen.asked, seen.off_after = count.asked, not control.is_enabled()

    def record(self, probed: ProbedCall) -> dict:
        seen = probed.watcher(self)
        if seen is None:  # a workload that times itself: its iterations were not watched
            return {}
        return {_AVAILABLE: control.available(), _OFF_BEFORE: seen.off_before, _OFF_AFTER: seen.off_after,
                _ASKED: seen.asked}

    def read(self, note: dict) -> MkldnnFacts | None:
        if _ASKED not in note:
            return None
        return MkldnnFacts(bool(note.get(_AVAILABLE, True)), bool(note.get(_OFF_BEFORE)), bool(note.get(_OFF_AFTER)),
                           int(note[_ASKED]))


PROBE = MkldnnProbe()
PROBES = (PROBE,)
