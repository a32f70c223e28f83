"""The ``alloc`` setting: which malloc the worker runs with, and glibc's state read where each phase ends."""

from __future__ import annotations

from typing import Any

from ... import alloc as _alloc
from ..._setting import Setting, SettingUnavailable
from . import control

__all__ = ["Allocator", "ALLOCATOR", "SETTINGS"]


class Allocator(Setting):
    """``alloc``: which malloc the worker runs with (environment only), observed from inside."""

    name = "alloc"
    help = "default | retain | jemalloc | tcmalloc: glibc tunables or LD_PRELOAD of a system allocator"
    order = 0
    in_process = False  # glibc reads its tunables, and the loader the preload, once at start

    def canonical(self, value: Any) -> str:
        return self._choice(value, tuple(_alloc.ALLOCATORS))

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        try:
            return _alloc.get(value).environment(env)
        except _alloc.AllocatorError as e:
            raise SettingUnavailable(str(e)) from None

    def owns(self, value: str) -> tuple[str, ...]:
        return _alloc.OWNED_VARIABLES

    probe = "retain"  # and each preloadable allocator installed here (the allocator cause's probes)
    evidence_counter = "minor_faults_per_iter"
    mechanism = "memory returned to the OS and faulted back in"

    def facts(self, observed: dict) -> dict:
        return {"large_block_mapping": observed.get("large_block_mapping"),
                "preload_mapped": observed.get("preload_mapped")}

    def facts_phrase(self, facts: dict) -> str:
        where = facts.get("large_block_mapping")
        return f"a 64 MiB malloc read back from {where}" if where else ""

    def readback(self, value: str) -> dict:
        return _alloc.observe()

    #: Each phase of a worker's result holds glibc malloc's state where it ended under this key (its
    #: error, where it could not be read, under ``malloc_error``).
    phase_key = "malloc"

    def phase_ended(self, phase: str, last: bool) -> control.MallocState:
        """glibc malloc's state where ``phase`` ended, in every cell (the baseline's is read too). The first
        time a phase ends (another phase's first iteration starts, outside its time) ``mallinfo2()`` alone
        is read: the full probe forks, and the fork would cost the next phase one fault per page it writes.
        After the timed work (``last``) the phase that ran last is probed in full (threshold, largest free
        block)."""
        return control.read(probe=last)


ALLOCATOR = Allocator()
SETTINGS = (ALLOCATOR,)
