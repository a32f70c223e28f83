"""Probe evidence of competing thread pools: the CPU time each kind of thread took over the timed iterations.

Torch's OpenMP team (the calling thread is its thread 0) against the other native threads of the
process: numpy's OpenBLAS workers, a BLIS pool, another OpenMP runtime's team. Threads that Python's
``threading`` started (a prefetching thread, DataLoader's pin-memory thread) are the workload's own,
not a pool, and are left out; so is the profiler's thread, which only runs in the profiled call
after the timed iterations. Native threads that take a share of the iterations' CPU time are a pool
at work beside torch's; a pool that is loaded (numpy is, by ``import torch``) but never runs takes
none, and the cause is ruled out before any cell runs. Each thread's CPU clock is read with
nanosecond resolution (``clock_gettime`` on the thread's CPU-time clock).
"""

from __future__ import annotations

import threading
import time

from .. import _procfs, omp, other_pools

__all__ = ["ThreadCpuWatch"]


def _cpu_clock(tid: int) -> int:
    """The clock id of thread ``tid``'s CPU time (Linux: ~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED)."""
    return ((~tid) << 3) | 6


def _cpu_ns() -> dict[int, int]:
    out = {}
    for tid in _procfs.task_ids():
        try:
            out[tid] = time.clock_gettime_ns(_cpu_clock(tid))
        except OSError:  # the thread exited between the listing and the read
            continue
    return out


class ThreadCpuWatch:
    """Use as a context manager around the timed iterations, in the thread that runs them; :meth:`note`
    is the probe note's ``thread_cpu``."""

    def __enter__(self) -> "ThreadCpuWatch":
        self._before = _cpu_ns()
        self._started = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> None:
        self._wall = time.perf_counter_ns() - self._started
        self._after = _cpu_ns()
        # Python's own threads (started by the workload or a library's Python code), but not this one.
        self._python = {t.native_id for t in threading.enumerate()} - {threading.get_native_id()}

    def note(self) -> dict:
        """``{"thread_cpu": {"wall_ms", "team_ms", "other_ms", "other_threads", "others", "others_threads"}}``:
        CPU milliseconds of torch's team (with the calling thread) and of every other native thread that ran
        while it was watched, and the pools loaded beside torch's own (``"libscipy_openblas blas x2"``)."""
        team = {m["tid"] for m in omp.team_census()} if omp.torch_runtime() is not None else set()
        team.add(threading.get_native_id())
        spent = {tid: ns - self._before.get(tid, 0) for tid, ns in self._after.items()}
        others = {tid: ns for tid, ns in spent.items() if tid not in team and tid not in self._python and ns > 0}
        self.counted = sorted(others)  # the threads it counted beside the team (for tests and debugging)
        return {"thread_cpu": {"wall_ms": self._wall / 1e6,
                               "team_ms": sum(ns for tid, ns in spent.items() if tid in team) / 1e6,
                               "other_ms": sum(others.values()) / 1e6, "other_threads": len(others),
                               "others": [p.text for p in other_pools.others()],
                               "others_threads": max([p.num_threads for p in other_pools.others()], default=0)}}
