"""The worker's recorder: iteration ticks plus per-iteration counter deltas.

It extends :class:`benchctl.recorder.Recorder` (workloads see the same
``iteration``/``note`` interface) and reads a :class:`benchctl.counters.CounterGroup`
just outside each timed interval, so the counter reads cost nothing in the
time they bracket. A counter that cannot be read is kept as ``None`` per
iteration, never as a made-up zero.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from . import clock
from .recorder import Recorder

# All threads of the process: torch's OpenMP team may exist before the group opens.
COUNTER_SCOPE = "process"


def open_counter_group() -> tuple[Any, dict]:
    """(group or None, description) for the worker's per-iteration counters."""
    try:
        from . import counters
    except ImportError as e:
        return None, {"scope": None, "error": f"benchctl.counters is not available: {e}"}
    try:
        group = counters.CounterGroup(scope=COUNTER_SCOPE)
    except Exception as e:  # a counter never fails a measurement: record why instead
        return None, {"scope": COUNTER_SCOPE, "error": f"{type(e).__name__}: {e}"}
    return group, {
        "scope": group.scope,
        "available": dict(group.available),
        "unavailable": dict(group.unavailable),
    }


class CountedRecorder(Recorder):
    """Recorder whose ``counters[phase][event]`` holds one delta per recorded iteration."""

    def __init__(self, group: Any = None) -> None:
        super().__init__()
        self.counters: dict[str, dict[str, list]] = {}
        self._group = group

    @contextlib.contextmanager
    def iteration(self, phase: str) -> Iterator[None]:
        before = self._group.read() if self._group is not None else None
        with clock.Stopwatch() as sw:
            yield
        after = self._group.read() if self._group is not None else None
        self.ticks.setdefault(phase, []).append(sw.ticks)
        if before is None:
            return
        per_event = self.counters.setdefault(phase, {})
        for event, end in after.items():
            start = before.get(event)
            delta = None if start is None or end is None else end - start
            per_event.setdefault(event, []).append(delta)
