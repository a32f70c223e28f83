"""What a workload reports to: timed iterations per phase, and notes.

A workload never times itself. It wraps each iteration it wants measured in
``with rec.iteration("eval"):`` and reports facts that explain a result with
``rec.note("weights_census", {...})``. The runner's worker supplies a recorder
that also reads counters around each iteration; :class:`Recorder` here is the
plain in-process one (ticks only), used directly by tests and simple scripts.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator

from . import clock


class Recorder:
    """Collects per-phase iteration ticks (read overhead subtracted) and notes."""

    def __init__(self) -> None:
        self.ticks: dict[str, list[int]] = {}
        self.notes: dict[str, Any] = {}

    @contextlib.contextmanager
    def iteration(self, phase: str) -> Iterator[None]:
        """Time one iteration of ``phase``. A raising iteration is not recorded."""
        with clock.Stopwatch() as sw:
            yield
        self.ticks.setdefault(phase, []).append(sw.ticks)

    def note(self, key: str, value: Any) -> None:
        """Attach a JSON-serialisable fact to the result (checked now, not at save time)."""
        json.dumps(value)
        self.notes[key] = value
