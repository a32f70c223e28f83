"""The ``thp`` setting: torch's large CPU buffers on transparent huge pages."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting, SettingUnavailable
from . import control

__all__ = ["HugePages", "HUGE_PAGES", "SETTINGS"]


class HugePages(Setting):
    """``thp``: torch's large CPU buffers on transparent huge pages (``THP_MEM_ALLOC_ENABLE=1`` at start,
    which torch reads once), read back from the mapping of a buffer the worker writes after the run."""

    name = "thp"
    help = (f"default | on: torch's buffers of 2 MiB or more on transparent huge pages ({control.TORCH_ENV}=1 "
            "at start), read back from /proc/self/smaps")
    order = 0
    needs_torch = True
    in_process = False  # torch reads its variable once, at its first large allocation

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("default", "on"))

    def check_available(self) -> None:
        if control.kernel_mode() == "never":
            raise SettingUnavailable(f"thp: the kernel's transparent huge pages are off ({control.KERNEL_MODE_PATH}"
                                     " reads never): torch's allocator cannot get huge pages here")

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, control.TORCH_ENV: "1"} if value == "on" else env

    def owns(self, value: str) -> tuple[str, ...]:
        return (control.TORCH_ENV,) if value == "on" else ()

    probe = "on"
    evidence_counter = "minor_faults_per_iter"
    mechanism = "large buffers faulted in one 4 KiB page at a time"

    def facts(self, observed: dict) -> dict:
        return {"huge_bytes": observed.get("huge_bytes"), "probe_bytes": observed.get("probe_bytes")}

    def facts_phrase(self, facts: dict) -> str:
        huge, size = facts.get("huge_bytes"), facts.get("probe_bytes")
        if huge is None or not size:
            return ""
        return f"a {size >> 20} MiB torch buffer read back on {huge >> 20} MiB of huge pages"

    def readback(self, value: str) -> dict:
        return control.observe()


HUGE_PAGES = HugePages()
SETTINGS = (HUGE_PAGES,)
