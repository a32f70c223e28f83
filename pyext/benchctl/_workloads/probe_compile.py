"""What ``torch.compile`` did during the probe worker's timed iterations: frames compiled in each
iteration, the time the compiles took, and the guards whose failure made dynamo compile again.

Read after every timed iteration, outside its timing, from dynamo's own counters
(``torch._dynamo.utils``: ``counters["frames"]["total"]``, ``compilation_time_metrics`` and
``guard_failures``; private, so each is read only where it exists). Nothing is read, and dynamo
is never imported, when the workload has not imported it by the end of its timed iterations: then
nothing was compiled in them (the profiler of the probe call loads dynamo later, for itself).
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["MAX_GUARDS", "CompileWatch"]

#: The most distinct failed guards a probe note keeps (the latest).
MAX_GUARDS = 3
_COMPILE_TIMER = "_compile.compile_inner"  # dynamo's timer around each frame's compile
# A reason starts with the compile id of the cache entry whose guard failed: "0/7: start == 7 ...".
_ENTRY = re.compile(r"^\s*(\d+)/(\d+):")


def _entry(reason: str) -> int:
    """The cache entry a guard failure is about (later entries are the latest compiles); -1 if unsaid."""
    found = _ENTRY.match(reason)
    return int(found.group(2)) if found else -1


def _dynamo_utils() -> Any | None:
    return sys.modules.get("torch._dynamo.utils")


def _frames(utils: Any) -> int:
    return int(getattr(utils, "counters", {}).get("frames", {}).get("total", 0))


def _compile_s(utils: Any) -> float:
    return float(sum(getattr(utils, "compilation_time_metrics", {}).get(_COMPILE_TIMER, [])))


def _guard_counts(utils: Any | None) -> dict[Any, int]:
    """{code object: guard failures recorded for it so far}."""
    return {} if utils is None else {code: len(r) for code, r in getattr(utils, "guard_failures", {}).items()}


class CompileWatch:
    """Call :meth:`start` before the timed iterations and :meth:`after_iteration` after each; :meth:`note`
    is what it saw during them."""

    def __init__(self) -> None:
        self.compiles: list[int] = []
        self.compile_s: list[float] = []
        self.iteration_s: list[float] = []
        self._last: tuple[int, float] | None = None
        self.loaded = False  # dynamo was loaded by the end of an iteration
        self._guards_before: dict[Any, int] = {}
        self._guards_after: dict[Any, int] = {}

    def _read(self) -> tuple[int, float] | None:
        utils = _dynamo_utils()
        return None if utils is None else (_frames(utils), _compile_s(utils))

    def start(self) -> None:
        """Counters as they are before the first timed iteration (setup's compiles are not the iterations')."""
        self._last = self._read()
        self._guards_before = self._guards_after = _guard_counts(_dynamo_utils())

    def after_iteration(self, seconds: float) -> None:
        """Record the iteration that just ended (``seconds`` long): what dynamo compiled during it."""
        now = self._read()
        before = self._last or (0, 0.0)
        frames, spent = (0, 0.0) if now is None else (now[0] - before[0], now[1] - before[1])
        self.compiles.append(frames)
        self.compile_s.append(max(0.0, spent))
        self.iteration_s.append(seconds)
        self._last = now
        self.loaded = now is not None
        self._guards_after = _guard_counts(_dynamo_utils())

    def compiled_any(self) -> bool:
        """Whether dynamo compiled any frame in this process so far (loading it is not compiling: torch.optim's
        step loads it)."""
        utils = _dynamo_utils()
        return utils is not None and _frames(utils) > 0

    def compile_seconds(self) -> float:
        """dynamo's compile time so far in this process (0 when it is not loaded)."""
        utils = _dynamo_utils()
        return 0.0 if utils is None else _compile_s(utils)

    def note(self) -> dict:
        """``compiles`` (frames compiled in each timed iteration), ``compile_s`` (their compile time),
        ``iteration_s`` and ``guards`` (distinct guard failures that made dynamo recompile during them,
        each its first line, those of its latest cache entries first); {} when dynamo was not loaded during them."""
        utils = _dynamo_utils()
        if utils is None or not self.loaded:
            return {}
        failures = getattr(utils, "guard_failures", {})
        reasons = [reason for code, upto in self._guards_after.items()
                   for reason in failures.get(code, [])[self._guards_before.get(code, 0):upto]]
        guards: list[str] = []
        for reason in sorted(reasons, key=_entry, reverse=True):  # the latest cache entries' failures first
            first = reason.strip().splitlines()[0] if reason.strip() else ""
            if first and first not in guards:
                guards.append(first)
        return {"compiles": self.compiles, "compile_s": self.compile_s, "iteration_s": self.iteration_s,
                "guards": guards[:MAX_GUARDS]}
