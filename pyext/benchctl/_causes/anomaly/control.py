"""Keep torch's autograd anomaly detection off against the code's own calls, and count what they asked.

Anomaly detection (``torch.autograd.set_detect_anomaly(True)``, ``with torch.autograd.detect_anomaly():``,
Lightning's ``Trainer(detect_anomaly=True)``) records a Python traceback for every op autograd records
and checks every gradient for NaN: training runs several times (reports say up to thousands of times)
slower. Every one of those Python entry points switches it through ``torch.set_anomaly_enabled``,
looked up on ``torch`` at call time, so replacing that one function keeps the mode off whatever the
code calls, even a ``detect_anomaly`` it imported before. :func:`keep_off` does that for the rest of
the process (a worker's ``anomaly=off`` cell); :func:`kept_off` for a block, restoring torch's own
function after it, also on an exception.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

__all__ = ["Guard", "keep_off", "release", "kept_off", "is_on", "state"]


@dataclass
class Guard:
    """The replaced ``torch.set_anomaly_enabled``: torch's own function, and how many calls asked to turn it on."""

    original: Callable[..., Any]
    refused: int = 0

    def __call__(self, enabled: bool, check_nan: bool = True) -> None:
        if enabled:
            self.refused += 1
        self.original(False, check_nan)


_guard: Guard | None = None


def keep_off() -> dict[str, Any]:
    """Turn anomaly detection off now and keep it off against every later call; what holds right after."""
    global _guard
    import torch

    if _guard is None:
        _guard = Guard(torch.set_anomaly_enabled)
        torch.set_anomaly_enabled = _guard
    _guard.original(False)
    return state()


def release() -> None:
    """Give ``torch.set_anomaly_enabled`` back (the mode stays as it is)."""
    global _guard
    if _guard is not None:
        import torch

        torch.set_anomaly_enabled = _guard.original
        _guard = None


@contextlib.contextmanager
def kept_off() -> Iterator[Guard]:
    """Anomaly detection kept off inside the block; after it, torch's function and the mode as they were."""
    import torch

    before = torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()
    installed = _guard is None
    keep_off()
    try:
        yield _guard
    finally:
        if installed:
            release()
            torch.set_anomaly_enabled(*before)


def is_on() -> bool:
    import torch

    return bool(torch.is_anomaly_enabled())


def state() -> dict[str, Any]:
    """``{"enabled": is it on now, "kept_off": is the guard in place, "refused": calls that asked to turn it on}``."""
    return {"enabled": is_on(), "kept_off": _guard is not None, "refused": _guard.refused if _guard else 0}
