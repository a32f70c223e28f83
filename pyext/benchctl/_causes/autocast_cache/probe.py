"""What the probe worker learns of autocast's cache: over its profiled call, how often it was cleared (each time the
code's outermost autocast block exited: :func:`benchctl._causes.autocast_cache.control.counting_clears`), read back
as :class:`AutocastFacts`. It counts during the profiled call rather than in a call of its own."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from ..._probe import Probe, ProbedCall
from .control import counting_clears

__all__ = ["AutocastFacts", "AutocastProbe", "PROBE", "PROBES"]

#: The probe note's key, written and read here only.
_CLEARS = "autocast_cache_clears"


@dataclass(frozen=True)
class AutocastFacts:
    """In the profiled call: ``clears``, how often autocast's cache of cast weights was cleared."""

    clears: int = 0

    @property
    def cleared(self) -> bool:
        return self.clears > 0

    def text(self) -> str:
        """``"in its profiled call autocast's cache of cast weights was cleared 1 time, as its outermost autocast
        block exited"``."""
        times = f"{self.clears:,} time{'s' * (self.clears != 1)}"
        return f"in its profiled call autocast's cache of cast weights was cleared {times}, as its outermost " \
               "autocast block exited"

    @staticmethod
    def none_text() -> str:
        return ("autocast's cache was not cleared in its profiled call (no autocast block ran in it, or one stayed "
                "open from before it: the casts already live from one call to the next)")


class AutocastProbe(Probe):
    """The clears of autocast's cache over the profiled call (none for a workload that times itself)."""

    key = "autocast_cache"
    fact = AutocastFacts

    def watch_call(self) -> contextlib.AbstractContextManager:
        return counting_clears()

    def record(self, probed: ProbedCall) -> dict:
        clears = probed.call_watcher(self)
        if probed.call is None or clears is None:
            return {}  # a @benchctl.workload function times its own iterations: no call was watched
        return {_CLEARS: clears.count}

    def read(self, note: dict) -> AutocastFacts | None:
        clears = note.get(_CLEARS)
        return None if clears is None else AutocastFacts(clears=int(clears))

    def from_json(self, data: dict) -> AutocastFacts | None:
        return AutocastFacts(**{k: v for k, v in data.items() if k in AutocastFacts.__dataclass_fields__})


PROBE = AutocastProbe()
PROBES = (PROBE,)
