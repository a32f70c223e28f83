"""Ctrl-C held over ``import torch``, then raised where Python can unwind it.

torch's import runs Python code from its C++ module init (pybind11): a KeyboardInterrupt raised
there escapes C++ that cannot pass it on, and the process aborts (SIGABRT, "terminate called after
throwing an instance of 'pybind11::error_already_set'") instead of saying "interrupted". A command
that needs torch imports it first through :func:`import_torch`.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["held", "import_torch"]


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Ctrl-C (SIGINT) noted, not raised, until the block ends; then KeyboardInterrupt if one came. Only the
    main thread can set a handler: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if came:
        raise KeyboardInterrupt


def import_torch() -> None:
    """``import torch`` with Ctrl-C held over it (a no-op once torch is imported)."""
    if "torch" in sys.modules:
        return
    with held():
        import torch  # noqa: F401
