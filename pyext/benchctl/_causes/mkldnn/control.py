"""Keep torch's mkldnn (oneDNN) kernels on against the code's own calls, and count the calls that turned them off.

``torch.backends.mkldnn.flags(enabled=False)`` and ``set_flags`` call ``torch._C._set_mkldnn_enabled``,
looked up at call time; ``torch.backends.mkldnn.enabled = False`` calls the setter its ``enabled``
property took when torch was imported. Replacing both sees every call the code can make from Python.
:func:`counting` counts over a block and :func:`keep_on` refuses for the rest of the process (a worker's
``mkldnn=on`` cell), both giving torch's own functions back when released.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

__all__ = ["Guard", "Count", "counting", "keep_on", "release", "is_enabled", "available", "set_enabled", "state"]

# The function of torch._C that every call switching the kernels goes through (or a copy of it, the property's).
_SETTER = "_set_mkldnn_enabled"


@dataclass(eq=False)  # hashed by identity: dynamo keeps torch._C's functions in a dict
class Guard:
    """torch's own setter, the calls that asked to turn the kernels off (``asked``), and whether they are refused
    (``refusing``: the kernels are kept on; ``refused``: those calls since)."""

    original: Callable[[bool], Any]
    refusing: bool = False
    asked: int = 0
    refused: int = 0

    def __call__(self, enabled: bool) -> Any:
        if enabled:
            return self.original(enabled)
        self.asked += 1
        if not self.refusing:
            return self.original(enabled)
        self.refused += 1
        return self.original(True)


_guard: Guard | None = None


@dataclass
class Count:
    """The calls that asked to turn the kernels off since a block began (``asked``), read live."""

    guard: Guard
    since: int

    @property
    def asked(self) -> int:
        return self.guard.asked - self.since


def _property():
    # The descriptor behind torch.backends.mkldnn.enabled (on the module's class: reading it on the module calls it).
    import torch.backends.mkldnn

    return type(torch.backends.mkldnn).__dict__["enabled"]


def _install(refusing: bool) -> Guard:
    global _guard
    import torch

    if _guard is None:
        _guard = Guard(getattr(torch._C, _SETTER))
        setattr(torch._C, _SETTER, _guard)
        _property().setter = _guard
    _guard.refusing = _guard.refusing or refusing
    return _guard


def release() -> None:
    """Give torch's setter back (the kernels stay as they are)."""
    global _guard
    if _guard is not None:
        import torch

        setattr(torch._C, _SETTER, _guard.original)
        _property().setter = _guard.original
        _guard = None


def keep_on() -> dict[str, Any]:
    """Turn the kernels on now and refuse every later call that turns them off; what holds right after."""
    _install(refusing=True).original(True)
    return state()


@contextlib.contextmanager
def counting() -> Iterator[Count]:
    """Count the calls that turn the kernels off inside the block (nothing is refused); torch's setter as it was
    after it, also on an exception."""
    installed = _guard is None
    guard = _install(refusing=False)
    try:
        yield Count(guard, guard.asked)
    finally:
        if installed:
            release()


def is_enabled() -> bool:
    import torch

    return bool(torch._C._get_mkldnn_enabled())


def available() -> bool:
    """Whether this torch was built with mkldnn (without it the flag switches nothing)."""
    import torch

    return bool(torch.backends.mkldnn.is_available())


def set_enabled(enabled: bool) -> None:
    """Set the flag past the guard (putting back what the code had set)."""
    import torch

    (_guard.original if _guard is not None else getattr(torch._C, _SETTER))(enabled)


def state() -> dict[str, Any]:
    """``{"enabled": are the kernels on now, "kept_on": is the guard refusing, "refused": calls refused so far}``."""
    refusing = _guard is not None and _guard.refusing
    return {"enabled": is_enabled(), "kept_on": refusing, "refused": _guard.refused if refusing else 0}
