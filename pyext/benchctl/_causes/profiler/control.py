"""Count, or refuse, the starts of torch's autograd profiler, whatever the code starts it with.

``torch.profiler.profile``, ``torch.autograd.profiler.profile`` and ``emit_nvtx`` all start their
session through one module-level function, ``torch.autograd.profiler._enable_profiler``, looked up at
call time (after ``_prepare_profiler``, which readies the trace). Wrapping those two counts every
start, also of a context the code imported before; refusing them keeps the profiler off (the
session's exit then finds nothing to stop, and its results are empty). :func:`counting` counts
over a block and :func:`keep_off` refuses for the rest of the process (a worker's ``profiler=off``
cell), both giving torch's own functions back when released; :func:`keep_off` also stops a session
already recording as it is applied (one the code started at its import, before a worker applies its
settings), which no later switch can start again. :func:`nested_off` refuses inside
another session (the probe worker's own profiled call): there the code's exit would stop the
outer session too, so its ``_disable_profiler`` is refused as well (the code's context then holds
no results).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

__all__ = ["Guard", "Count", "counting", "nested_off", "keep_off", "release", "is_on", "state"]

# The two functions of torch.autograd.profiler every profiler context starts its session through.
_ENTRY_POINTS = ("_prepare_profiler", "_enable_profiler", "_disable_profiler")


@dataclass
class Guard:
    """torch's own entry points, how many sessions the code started (``starts``), whether they are
    refused (``refusing``: the profiler is kept off; ``nested``: and their stops too, inside a session of
    benchctl's own), and the sessions :func:`keep_off` found recording and stopped (``stopped``)."""

    originals: dict[str, Callable[..., Any]]
    refusing: bool = False
    nested: bool = False
    starts: int = 0
    stopped: int = 0

    def wrapper(self, name: str) -> Callable[..., Any]:
        original = self.originals[name]

        def entry(*args: Any, **kwargs: Any) -> Any:
            if name == "_enable_profiler":
                self.starts += 1
            if name == "_disable_profiler":
                return None if self.nested else original(*args, **kwargs)
            return None if self.refusing or self.nested else original(*args, **kwargs)

        return entry


_guard: Guard | None = None


@dataclass
class Count:
    """The profiler sessions the code started since a block began (``starts``), read live."""

    guard: Guard
    since: int

    @property
    def starts(self) -> int:
        return self.guard.starts - self.since


def _install(refusing: bool) -> Guard:
    global _guard
    import torch.autograd.profiler as profiler

    if _guard is None:
        _guard = Guard({name: getattr(profiler, name) for name in _ENTRY_POINTS})
        for name in _ENTRY_POINTS:
            setattr(profiler, name, _guard.wrapper(name))
    _guard.refusing = _guard.refusing or refusing
    return _guard


def release() -> None:
    """Give torch's entry points back (a session running stays as it is)."""
    global _guard
    if _guard is not None:
        import torch.autograd.profiler as profiler

        for name, original in _guard.originals.items():
            setattr(profiler, name, original)
        _guard = None


def keep_off() -> dict[str, Any]:
    """Refuse every later profiler start in this process, and stop a session recording now (started before the
    guard went in: at the code's import); what holds right after. torch's stop of a session no longer running
    returns nothing to the code, as for a refused start."""
    guard = _install(refusing=True)
    if is_on():
        guard.originals["_disable_profiler"]()
        guard.stopped += 1
    return state()


@contextlib.contextmanager
def counting() -> Iterator[Count]:
    """Count the profiler sessions the code starts inside the block (nothing is refused); torch's entry
    points as they were after it, also on an exception."""
    installed = _guard is None
    guard = _install(refusing=False)
    try:
        yield Count(guard, guard.starts)
    finally:
        if installed:
            release()


@contextlib.contextmanager
def nested_off() -> Iterator[Count]:
    """Inside a profiler session of benchctl's own: the code's sessions refused, starts and stops, so that
    its profiler neither takes the session over nor ends it; counted in the yielded ``starts``. torch's
    entry points as they were after it, also on an exception."""
    installed = _guard is None
    guard = _install(refusing=False)
    guard.nested = True
    try:
        yield Count(guard, guard.starts)
    finally:
        guard.nested = False
        if installed:
            release()


def is_on() -> bool:
    """Whether a profiler session is recording now (the C++ profiler's own state: the Python-side flag is set
    on entering a context even when its start was refused)."""
    import torch

    return bool(torch._C._autograd._profiler_enabled())


def state() -> dict[str, Any]:
    """``{"enabled": is a session on now, "kept_off": are starts refused, "refused": starts refused so far,
    "stopped": sessions found recording and stopped as the guard went in}``."""
    refusing = _guard is not None and _guard.refusing
    return {"enabled": is_on(), "kept_off": refusing, "refused": _guard.starts if refusing else 0,
            "stopped": _guard.stopped if refusing else 0}
