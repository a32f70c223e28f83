"""Marker settings applied in the running process around the measured calls, and undone after.

``threads`` goes through :func:`benchctl.threads.set_num_threads` (every
pool's previous count is saved first and put back), ``pin`` through
:func:`benchctl.threads.pinned` and ``ftz`` through
:func:`benchctl.fpenv.flush_denormals` (``off`` clears FTZ/DAZ on every
thread for the block: a test asking for it must not inherit a flushed
process). Each is read back with the same readback the isolated workers use
(:mod:`benchctl.settings`). The changes are undone in reverse order on
exit, also when the block raises.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator

from .. import fpenv, threads
from .. import settings as _settings

__all__ = ["Applied", "applied", "thread_count"]


@contextlib.contextmanager
def thread_count(n: int) -> Iterator[dict]:
    """``n`` threads in torch and every BLAS/OpenMP pool for the block; each count restored after."""
    import torch
    from threadpoolctl import ThreadpoolController

    before_torch = torch.get_num_threads()
    before_pools = [(lib, lib.get_num_threads()) for lib in ThreadpoolController().lib_controllers]
    readback = threads.set_num_threads(n)  # on failure it restores what it changed itself
    try:
        yield readback
    finally:
        failed = []
        try:
            torch.set_num_threads(before_torch)
        except Exception as e:  # every count gets its chance to be restored
            failed.append(f"torch: {e}")
        for lib, count in before_pools:
            if count is None:
                continue
            try:
                lib.set_num_threads(count)
            except Exception as e:
                failed.append(f"{lib.filepath}: {e}")
        if failed:
            warnings.warn(f"benchctl could not restore thread counts: {'; '.join(failed)}", RuntimeWarning,
                          stacklevel=3)


class Applied:
    """The settings in force for a block: what applying each returned, and :meth:`read_back`."""

    def __init__(self, wanted: list[tuple[str, Any]]) -> None:
        self.wanted = wanted
        self.applied: dict[str, Any] = {}

    def read_back(self) -> dict[str, dict]:
        """``{name: {"requested", "applied", "observed"}}``, as an isolated worker records it."""
        return {name: {"requested": value, "applied": self.applied.get(name),
                       "observed": _settings.SETTINGS[name].readback(value)} for name, value in self.wanted}


def _enter(stack: contextlib.ExitStack, name: str, value: Any) -> Any:
    if name == "threads":
        return stack.enter_context(thread_count(value))
    if name == "pin":
        return stack.enter_context(threads.pinned(value))
    if name == "ftz":
        on = value != "off"
        return stack.enter_context(fpenv.flush_denormals(on, "process" if not on else value))
    raise ValueError(f"{name} cannot be applied in a running process")


@contextlib.contextmanager
def applied(wanted: list[tuple[str, Any]]) -> Iterator[Applied]:
    """Apply ``wanted`` (canonical ``(name, value)`` in application order) for the block."""
    state = Applied(wanted)
    with contextlib.ExitStack() as stack:
        for name, value in wanted:
            state.applied[name] = _enter(stack, name, value)
        yield state
