"""Small readers of /proc and /sys shared by the modules that inspect this process.

Each returns None (not an exception) for a file that is gone or unreadable:
threads exit and sysfs files vary between kernels and containers.
"""

from __future__ import annotations

import os
import platform
import threading

__all__ = ["TASK_DIR", "read_text", "task_ids", "task_name", "cpuinfo_fields", "cpu_model"]

TASK_DIR = "/proc/self/task"


def read_text(path: str) -> str | None:
    """The file's text without surrounding whitespace, or None if it cannot be read."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def task_ids(caller_first: bool = False) -> list[int]:
    """Thread ids of this process (sorted; with ``caller_first`` the calling thread leads)."""
    tids = sorted(int(t) for t in os.listdir(TASK_DIR) if t.isdigit())
    if caller_first:
        own = threading.get_native_id()
        tids = [own] + [t for t in tids if t != own]
    return tids


def task_name(tid: int) -> str | None:
    """The thread's name (``comm``), or None once it has exited."""
    try:
        with open(f"{TASK_DIR}/{tid}/comm") as f:
            return f.read().rstrip("\n")
    except OSError:
        return None


def cpuinfo_fields() -> dict[str, str]:
    """The first processor's ``key: value`` fields from /proc/cpuinfo ({} where unreadable)."""
    fields: dict[str, str] = {}
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model(fields: dict[str, str] | None = None) -> str | None:
    """The CPU's model name (from ``fields``, default :func:`cpuinfo_fields`); else what ``platform``
    knows; None if nothing. x86 says "model name"; arm64 kernels "Model", or only "CPU part"."""
    fields = cpuinfo_fields() if fields is None else fields
    return (fields.get("model name") or fields.get("Model") or fields.get("CPU part")
            or platform.processor() or None)
