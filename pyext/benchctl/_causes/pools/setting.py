"""The ``pools`` setting: every thread pool other than torch's own held at one thread."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control

__all__ = ["CapOtherPools", "CAP_OTHER_POOLS", "SETTINGS"]


class CapOtherPools(Setting):
    """``pools``: every thread pool other than torch's own held at one thread (:mod:`.control`)."""

    name = "pools"
    help = ("off | capped: hold every pool but torch's own (numpy's OpenBLAS, BLIS, an MKL of its own) at one "
            "thread: OPENBLAS_NUM_THREADS/BLIS_NUM_THREADS=1 at start, threadpoolctl after import")
    order = 15  # after threads (which sizes every pool), before pin
    needs_torch = True  # torch's own pools must be loaded to be told apart
    in_process = True
    unapplied = "off"
    # Switchable, but not paired: a switch does not undo the effect at once. The other pool's threads, woken by
    # arm A's calls, spin on into arm B's blocks, and capped at start they never exist at all. Paired on
    # tests/planted/competing_pools.py (Intel Xeon, CI) it gave a bimodal 0.61x [0.35, 1.04] over 20 processes
    # where fresh processes give ~0.06x.
    carries_over = True

    def __init__(self) -> None:
        self._capped: list = []  # the controllers capped at apply: read cheaply during the iterations
        self._sizes: dict[str, int] = {}  # each pool's size (by library path) from before it was first capped

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "capped"))

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, **control.START_ENV} if value == "capped" else env

    def owns(self, value: str) -> tuple[str, ...]:
        return tuple(control.START_ENV) if value == "capped" else ()

    def apply(self, value: str) -> Any:
        return self.switch(value) if value == "capped" else None  # off: a fresh process has nothing to undo

    def switch(self, value: str) -> Any:
        # capped: every pool but torch's own at one thread, each one's size remembered the first time it is
        # capped; off: the pools remembered put back at those sizes (a pool never capped is left as it is).
        # If a pool refuses, those changed so far get their sizes back. The pools read back after it.
        libs = control.controllers(torch_own=False)
        if value == "capped":
            for lib in libs:
                self._sizes.setdefault(lib.filepath, lib.get_num_threads())
            wanted = {lib.filepath: 1 for lib in libs}
        else:
            wanted = {lib.filepath: self._sizes[lib.filepath] for lib in libs if lib.filepath in self._sizes}
        changed: list = []
        try:
            for lib in libs:
                size, now = wanted.get(lib.filepath), lib.get_num_threads()
                if size is not None and size != now:
                    changed.append((lib, now))
                    lib.set_num_threads(size)
        except BaseException:
            for lib, size in reversed(changed):
                lib.set_num_threads(size)
            raise
        self._capped = libs if value == "capped" else []
        return [p.text for p in control.pools()]

    probe = "capped"
    evidence_counter = "context_switches_per_iter"
    mechanism = "another library's thread pool competing with torch's for the same CPUs"

    def facts(self, observed: dict) -> dict:
        return {"others": observed.get("others"), "capped": observed.get("capped")}

    def facts_phrase(self, facts: dict) -> str:
        others = facts.get("others")
        return f"read back at one thread each: {', '.join(others)}" if others and facts.get("capped") else ""

    def during(self, value: str) -> str | None:
        if value != "capped":
            return None
        sizes = [lib.get_num_threads() for lib in self._capped]
        return value if all(n == 1 for n in sizes) else "off"

    def readback(self, value: str) -> dict:
        others = control.others()
        return {"others": [p.text for p in others], "capped": control.capped(others)}


CAP_OTHER_POOLS = CapOtherPools()
SETTINGS = (CAP_OTHER_POOLS,)
