"""The ``sync`` setting: whether the worker's clock waits for the GPU before each read."""

from __future__ import annotations

from typing import Any, Callable

from ..._setting import Setting
from . import control as cuda_state

__all__ = ["SyncClock", "SYNC", "SETTINGS"]


class SyncClock(Setting):
    """``sync``: whether the worker's clock waits for the GPU before each read
    (:mod:`benchctl._causes.async_clock.control`)."""

    name = "sync"
    help = "off | cuda: torch.cuda.synchronize() before each clock read of a timed iteration (once CUDA is in use)"
    order = 60
    needs_torch = True
    in_process = True  # the clock's wait is switched on and off in a running process
    unapplied = "off"

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "cuda"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def switch(self, value: str) -> Any:
        # The clock's wait put in (cuda, counted from zero) or taken out (off); the one held is left as it is (its
        # counts go on). The recorder's clock_wait() reads the switch at each call, so it follows at once.
        if (value == "cuda") != cuda_state.sync_state()["on"]:
            return cuda_state.synchronizing(value == "cuda")
        return cuda_state.sync_state()

    # No counter shows it: the async-clock cause reads one call's host clock against its CUDA events.
    probe = "cuda"
    mechanism = ("asynchronous CUDA launches: a host clock read without waiting for the GPU measures the "
                 "launches, not the GPU's work")

    def facts(self, observed: dict) -> dict:
        return {"synced": observed.get("synced")}

    def facts_phrase(self, facts: dict) -> str:
        synced = facts.get("synced")
        return f"{synced} clock reads waited for the GPU" if synced else ""

    def readback(self, value: str) -> dict:
        return cuda_state.sync_state()

    def clock_wait(self) -> Callable[[], None]:
        return cuda_state.wait


SYNC = SyncClock()
SETTINGS = (SYNC,)
