"""What the probe worker learns of Python's garbage collector: over its timed iterations, the collector's passes by
generation and their share of the time, the code's own ``gc.collect()`` calls apart, and as they ended whether the
collector was on and how many objects it tracked (:func:`benchctl._causes.gc_pauses.control.watching`), read back as
:class:`GcFacts`. The timed iterations, not the profiled call: the profiler's own allocations would add passes."""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, field

from ..._probe import Probe, ProbedCall
from .control import watching

__all__ = ["GcFacts", "GcProbe", "PROBE", "PROBES"]

#: The probe note's key, written and read here only.
_GC = "gc_passes"


@dataclass(frozen=True)
class GcFacts:
    """Over the probe worker's timed iterations (``window_s``): the collector's ``passes`` by generation (JSON keys:
    their numbers as text) and their ``seconds``, the code's own ``gc.collect()`` calls (``explicit``, in
    ``explicit_s``), and as they ended whether the collector was on (``enabled``) and the objects it tracked."""

    passes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    explicit: int = 0
    explicit_s: float = 0.0
    window_s: float = 0.0
    enabled: bool = True
    tracked: int = 0

    @property
    def automatic_s(self) -> float:
        """The seconds of the passes the collector started itself (the code's own gc.collect() calls left out)."""
        return max(0.0, self.seconds - self.explicit_s)

    @property
    def share(self) -> float:
        """The automatic passes' share of the timed iterations' time."""
        return self.automatic_s / self.window_s if self.window_s > 0 else 0.0

    @property
    def explicit_share(self) -> float:
        return self.explicit_s / self.window_s if self.window_s > 0 else 0.0

    def text(self) -> str:
        """``"over its timed iterations the collector ran 1,390 passes (12 of the oldest generation), 86% of their
        time, with 1,201,344 objects tracked"``."""
        own = max(0, sum(self.passes.values()) - self.explicit)  # each gc.collect() call is one pass
        oldest = max(0, self.passes.get("2", 0) - self.explicit)
        explicit = (f"; gc.collect() called in its calls ran {self.explicit:,} time{'s' * (self.explicit != 1)}, "
                    f"{self.explicit_share:.0%}") if self.explicit else ""
        return (f"over its timed iterations the collector ran {own:,} pass{'es' * (own != 1)} by itself ({oldest:,} "
                f"of the oldest generation), {self.share:.0%} of their time, with {self.tracked:,} objects "
                f"tracked{explicit}")


class GcProbe(Probe):
    """The collector's passes over the timed iterations (none for a workload that times itself: its own regions are
    not the window)."""

    key = "gc"
    fact = GcFacts

    def watch(self) -> contextlib.AbstractContextManager:
        return watching()

    def record(self, probed: ProbedCall) -> dict:
        seen = probed.watcher(self)
        if probed.call is None or seen is None:
            return {}
        return {_GC: {**asdict(seen), "passes": {str(k): v for k, v in seen.passes.items()}}}  # JSON keys: text

    def read(self, note: dict) -> GcFacts | None:
        data = note.get(_GC)
        return None if data is None else self.from_json(data)

    def from_json(self, data: dict) -> GcFacts | None:
        return GcFacts(**{k: v for k, v in data.items() if k in GcFacts.__dataclass_fields__})


PROBE = GcProbe()
PROBES = (PROBE,)
