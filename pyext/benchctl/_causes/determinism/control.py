"""Keep torch's deterministic mode off against the code's own calls, and count the calls that turned it on.

Every Python way to switch the mode (``torch.use_deterministic_algorithms``,
``torch.set_deterministic_debug_mode``, Lightning's ``Trainer(deterministic=True)`` through the first)
goes through ``torch._C._set_deterministic_algorithms``, looked up on ``torch._C`` at call time, so
replacing that one function sees every call, also of a function the code imported before. With the mode
on, ops take their deterministic kernels, and ``torch.empty`` and its kin fill every new tensor
(``torch.utils.deterministic.fill_uninitialized_memory``, on by default; it does nothing with the mode
off, so keeping the mode off removes both). :func:`counting` counts over a block and :func:`keep_off`
refuses for the rest of the process (a worker's ``deterministic=off`` cell), both giving torch's own
function back when released.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

__all__ = ["Guard", "Count", "counting", "keep_off", "release", "is_on", "warn_only", "fills", "state",
           "code_state", "restore"]

# The one function of torch._C every Python call that switches the mode goes through.
_SETTER = "_set_deterministic_algorithms"


def _inductor_off() -> None:
    # use_deterministic_algorithms sets inductor's own flag before the refused call: compiled code would follow it.
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.deterministic = False


@dataclass(eq=False)  # hashed by identity: dynamo keeps torch._C's functions in a dict
class Guard:
    """torch's own setter, the calls that asked to turn the mode on (``asked``), and whether they are refused
    (``refusing``: the mode is kept off; ``refused``: those calls since)."""

    original: Callable[..., Any]
    refusing: bool = False
    asked: int = 0
    refused: int = 0

    def __call__(self, mode: bool, *args: Any, **kwargs: Any) -> Any:
        if not mode:
            return self.original(mode, *args, **kwargs)
        self.asked += 1
        if not self.refusing:
            return self.original(mode, *args, **kwargs)
        self.refused += 1
        _inductor_off()
        return self.original(False)


_guard: Guard | None = None


@dataclass
class Count:
    """The calls that asked to turn the mode on since a block began (``asked``), read live."""

    guard: Guard
    since: int

    @property
    def asked(self) -> int:
        return self.guard.asked - self.since


def _install(refusing: bool) -> Guard:
    global _guard
    import torch

    if _guard is None:
        _guard = Guard(getattr(torch._C, _SETTER))
        setattr(torch._C, _SETTER, _guard)
    _guard.refusing = _guard.refusing or refusing
    return _guard


def release() -> None:
    """Give torch's setter back (the mode stays as it is)."""
    global _guard
    if _guard is not None:
        import torch

        setattr(torch._C, _SETTER, _guard.original)
        _guard = None


def keep_off() -> dict[str, Any]:
    """Turn the mode off now and refuse every later call that turns it on; what holds right after."""
    guard = _install(refusing=True)
    _inductor_off()
    guard.original(False)
    return state()


@contextlib.contextmanager
def counting() -> Iterator[Count]:
    """Count the calls that turn the mode on inside the block (nothing is refused); torch's setter as it was
    after it, also on an exception."""
    installed = _guard is None
    guard = _install(refusing=False)
    try:
        yield Count(guard, guard.asked)
    finally:
        if installed:
            release()


def is_on() -> bool:
    import torch

    return bool(torch.are_deterministic_algorithms_enabled())


def warn_only() -> bool:
    import torch

    return bool(torch.is_deterministic_algorithms_warn_only_enabled())


def fills() -> bool:
    """Whether new memory is filled while the mode is on (``torch.utils.deterministic.fill_uninitialized_memory``)."""
    import torch

    return bool(torch._C._get_deterministic_fill_uninitialized_memory())


def code_state() -> tuple[bool, bool]:
    """(on, warn_only) as the code left the mode: what :func:`keep_off` turns off."""
    return is_on(), warn_only()


def restore(saved: tuple[bool, bool]) -> None:
    """Put back what :func:`code_state` read (the guard already out), inductor's flag with it."""
    import torch

    if saved[0]:
        torch.use_deterministic_algorithms(True, warn_only=saved[1])


def state() -> dict[str, Any]:
    """``{"enabled": is it on now, "kept_off": is the guard refusing, "refused": calls refused so far}``."""
    refusing = _guard is not None and _guard.refusing
    return {"enabled": is_on(), "kept_off": refusing, "refused": _guard.refused if refusing else 0}
