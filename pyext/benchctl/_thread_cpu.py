"""The CPU time each thread used over a stretch of code (the probe worker's timed iterations): the one
per-thread CPU watch of the competing-pools and OpenMP-wait probes, and the two readings they take.

:func:`thread_ns` reads each thread of this process on its own CPU-time clock (``clock_gettime``,
nanoseconds, up to date for a thread running as it is read); :func:`task_ns` reads the first field of
``/proc/*/task/*/schedstat`` of this process's threads and of its children's, which no clock of this
process can read. :class:`ThreadCpuWatch` takes one of them before and after the code it wraps.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from typing import Callable, Hashable

from . import _procfs

__all__ = ["REAPED", "thread_ns", "task_ns", "ThreadCpuWatch"]


def _cpu_clock(tid: int) -> int:
    """The clock id of thread ``tid``'s CPU time (Linux: ~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED)."""
    return ((~tid) << 3) | 6


def thread_ns() -> dict[int, int]:
    """{thread id: nanoseconds on a CPU} of this process's threads, each on its own CPU-time clock."""
    out = {}
    for tid in _procfs.task_ids():
        try:
            out[tid] = time.clock_gettime_ns(_cpu_clock(tid))
        except OSError:  # the thread exited between the listing and the read
            continue
    return out


def _tasks(pid: int | str) -> list[str]:
    try:
        return [f"/proc/{pid}/task/{tid}" for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:  # the process ended meanwhile
        return []


def _children(task: str) -> list[str]:
    return (_procfs.read_text(f"{task}/children") or "").split()


#: :func:`task_ns`'s key for the children that ended and were waited for (a subprocess, a DataLoader's workers of
#: one epoch): what they used is no longer in any task's schedstat.
REAPED = "children waited for"


def task_ns() -> dict[str, int]:
    """{task directory: nanoseconds on a CPU} of this process's threads and of its children's (schedstat), and
    {:data:`REAPED`: those} of its children that ended and were waited for (getrusage)."""
    own = _tasks("self")
    tasks = own + [t for task in own for child in _children(task) for t in _tasks(child)]
    out = {}
    for task in tasks:
        fields = (_procfs.read_text(f"{task}/schedstat") or "").split()
        if fields:
            out[task] = int(fields[0])
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    out[REAPED] = int((reaped.ru_utime + reaped.ru_stime) * 1e9)
    return out


class ThreadCpuWatch:
    """Around calls, in the thread that makes them: the CPU nanoseconds each thread used in them (``used``,
    keyed as ``read`` keys them: :func:`thread_ns` or :func:`task_ns`), their wall time (``wall_ns``) and the
    native ids of Python's own threads but the calling one (``python``: started by the workload or a
    library's Python code), read as the calls end."""

    def __init__(self, read: Callable[[], dict[Hashable, int]] = thread_ns) -> None:
        self._read = read
        self.used: dict = {}
        self.wall_ns = 0
        self.python: set[int] = set()

    def __enter__(self) -> "ThreadCpuWatch":
        self.before = self._read()
        self._started = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> None:
        self.wall_ns = time.perf_counter_ns() - self._started
        after = self._read()
        self.used = {key: ns - self.before.get(key, 0) for key, ns in after.items()}
        self.python = {t.native_id for t in threading.enumerate()} - {threading.get_native_id()}

    @property
    def wall_s(self) -> float:
        """The wall seconds of the calls (0 before they ended)."""
        return self.wall_ns / 1e9
