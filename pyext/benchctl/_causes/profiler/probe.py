"""What the probe worker learns of torch's autograd profiler over its timed iterations: the sessions the
code started in them, and whether one was recording as they began (started in setup, never stopped)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from ..._probe import Probe, ProbedCall
from . import control

__all__ = ["ProfilerFacts", "ProfilerProbe", "PROBE", "PROBES"]

# The probe note's keys, written and read here only.
_STARTS, _ON_BEFORE = "profiler_starts", "profiler_on_before"


@dataclass(frozen=True)
class ProfilerFacts:
    """Profiler sessions the code started during the probe worker's timed iterations (``starts``), and
    whether one was already recording when they began (``on_before``)."""

    starts: int = 0
    on_before: bool = False

    @property
    def seen_on(self) -> bool:
        return self.starts > 0 or self.on_before

    def text(self) -> str:
        """``"the code started the profiler 30 times over its timed iterations"``."""
        if self.on_before:
            return "a profiler session was already recording when the timed iterations began"
        return f"the code started the profiler {self.starts} time{'s' * (self.starts != 1)} over its timed iterations"


@dataclass
class _Watched:
    on_before: bool
    starts: int = 0


class ProfilerProbe(Probe):
    key = "profiler"
    fact = ProfilerFacts

    @contextlib.contextmanager
    def watch(self) -> Iterator[_Watched]:
        seen = _Watched(control.is_on())
        with control.counting() as guard:
            try:
                yield seen
            finally:
                seen.starts = guard.starts

    def watch_call(self) -> contextlib.AbstractContextManager:
        # The probe's own profiled call: a profiler the code starts inside it would take the session over.
        return control.nested_off()

    def record(self, probed: ProbedCall) -> dict:
        seen = probed.watcher(self)
        if seen is None:  # a workload that times itself: its iterations were not watched
            return {}
        return {_STARTS: seen.starts, _ON_BEFORE: seen.on_before}

    def read(self, note: dict) -> ProfilerFacts | None:
        if _STARTS not in note:
            return None
        return ProfilerFacts(int(note[_STARTS]), bool(note.get(_ON_BEFORE)))


PROBE = ProfilerProbe()
PROBES = (PROBE,)
