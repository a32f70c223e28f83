"""Probe evidence of a flush the code set itself: FTZ/DAZ on each thread of the unchanged workload, read after its
profiled call (:func:`benchctl.fpenv.census`), as :class:`FlushState`.

``torch.set_flush_denormal(True)`` sets the MXCSR of the thread that calls it and no other: torch's other threads
(its OpenMP team) go on computing on subnormals at full cost, so a flush set so helps a one-thread run and not a
team (a conv of subnormal inputs here: FTZ/DAZ on every thread 36x faster though the code had set it). The census
says how many threads flush and whether the calling thread is one of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import fpenv
from ..._probe import Probe, ProbedCall

__all__ = ["FlushState", "FlushStateProbe", "PROBE", "PROBES"]

# The probe note's key, written and read here only.
_FLUSH_STATE = "flush_state"


@dataclass(frozen=True)
class FlushState:
    """Of the unchanged workload's ``threads`` threads, ``reached`` read back, ``flushed`` of them with FTZ/DAZ on;
    ``caller``: whether the thread that runs its iterations is one of those."""

    threads: int
    reached: int
    flushed: int
    caller: bool

    @classmethod
    def from_note(cls, note: dict | None) -> "FlushState | None":
        return None if not note else cls(**note)

    @property
    def partial(self) -> bool:
        """Whether some threads flush and others do not: a flush set in one thread (the code's own)."""
        return 0 < self.flushed < self.reached

    def text(self) -> str:
        """``"unchanged, FTZ/DAZ was on in 1 of 3 threads, the calling thread among them"``."""
        among = ", the calling thread among them" if self.caller else ", not in the calling thread"
        return f"unchanged, FTZ/DAZ was on in {self.flushed} of {self.reached} threads{among}"


class FlushStateProbe(Probe):
    """Every thread's FTZ/DAZ once the workload's code has run (nothing where this CPU has no control to read)."""

    key = "flush_state"
    fact = FlushState

    def record(self, probed: ProbedCall) -> dict:
        if not fpenv.supported()[0]:
            return {}
        try:
            census = fpenv.census(scope="process")
        except (OSError, RuntimeError):  # a thread the signal could not reach in time: no fact, not a failed probe
            return {}
        reached = [t for t in census if t.get("reached", True)]
        return {_FLUSH_STATE: {"threads": len(census), "reached": len(reached),
                               "flushed": sum(fpenv.is_flushed(t) for t in reached),
                               "caller": fpenv.is_flushed(fpenv.thread_state())}}

    def read(self, note: dict) -> FlushState | None:
        return FlushState.from_note(note.get(_FLUSH_STATE))

    def from_json(self, data: dict) -> FlushState | None:
        return FlushState.from_note(data)


PROBE = FlushStateProbe()
PROBES = (PROBE,)
