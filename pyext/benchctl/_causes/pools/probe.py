"""Probe evidence of competing thread pools: the CPU time each kind of thread took over the timed iterations,
read back as :class:`ThreadCpu`.

Torch's OpenMP team (the calling thread is its thread 0) against the other native threads of the
process: numpy's OpenBLAS workers, a BLIS pool, another OpenMP runtime's team. Threads that Python's
``threading`` started (a prefetching thread, DataLoader's pin-memory thread) are the workload's own,
not a pool, and are left out; so is the profiler's thread, which only runs in the profiled call
after the timed iterations. Native threads that take a share of the iterations' CPU time are a pool
at work beside torch's; a pool that is loaded (numpy is, by ``import torch``) but never runs takes
none, and the cause is ruled out before any cell runs. Each thread's CPU clock is read with
nanosecond resolution (``clock_gettime`` on the thread's CPU-time clock: :mod:`benchctl._thread_cpu`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ... import _thread_cpu, omp
from ..._probe import Probe, ProbedCall
from . import control

__all__ = ["BUSY_SHARE", "ThreadCpu", "CompetingPoolsProbe", "PROBE", "PROBES"]

# The probe note's key, written and read here only.
_THREAD_CPU = "thread_cpu"

#: Native threads outside torch's team taking less CPU than this share of the timed iterations' wall time:
#: no other pool at work. Measured over the timed iterations, where the profiler's threads (6-10% of short
#: profiled calls here) do not run, and without the workload's own Python threads; a pool that competes
#: took 17% of a profiled call on competing_pools.py on a quiet machine, 33% on a loaded one.
BUSY_SHARE = 0.05


@dataclass(frozen=True)
class ThreadCpu:
    """CPU milliseconds over the probe worker's timed iterations (``wall_ms`` of them): torch's team (with the
    calling thread) and every other native thread; ``others``: the pools loaded beside torch's own,
    ``others_threads`` the largest of their sizes."""

    wall_ms: float
    team_ms: float
    other_ms: float
    other_threads: int
    others: list[str] = field(default_factory=list)
    others_threads: int = 0

    @classmethod
    def from_note(cls, note: dict | None) -> "ThreadCpu | None":
        return None if not note else cls(**note)

    @property
    def others_pooled(self) -> bool:
        """Whether a pool beside torch's own has more than one thread."""
        return self.others_threads > 1

    @property
    def others_busy(self) -> bool:
        """Whether native threads outside torch's team took a share of the iterations' time (a pool at work)."""
        return self.wall_ms > 0 and self.other_ms >= BUSY_SHARE * self.wall_ms


class CompetingPoolsProbe(Probe):
    """Watches the timed iterations, in the thread that runs them (:meth:`watch`, a
    :class:`~benchctl._thread_cpu.ThreadCpuWatch` of this process's threads); :meth:`record` is the probe
    note's ``thread_cpu`` (none where nothing was watched: a workload that times itself)."""

    key = "thread_cpu"
    fact = ThreadCpu

    def watch(self) -> _thread_cpu.ThreadCpuWatch:
        return _thread_cpu.ThreadCpuWatch(_thread_cpu.thread_ns)

    def record(self, probed: ProbedCall) -> dict:
        watch = probed.watcher(self)
        return {} if watch is None else note(watch)

    def read(self, note: dict) -> ThreadCpu | None:
        return ThreadCpu.from_note(note.get(_THREAD_CPU))

    def from_json(self, data: dict) -> ThreadCpu | None:
        return ThreadCpu.from_note(data)


def note(watch: _thread_cpu.ThreadCpuWatch) -> dict:
    """``{"thread_cpu": {"wall_ms", "team_ms", "other_ms", "other_threads", "others", "others_threads"}}``:
    CPU milliseconds of torch's team (with the calling thread) and of every other native thread that ran
    while ``watch`` watched, and the pools loaded beside torch's own (``"libscipy_openblas blas x2"``); the
    threads it counted beside the team are left on the watch as ``counted`` (for tests and debugging)."""
    team = {m["tid"] for m in omp.team_census()} if omp.torch_runtime() is not None else set()
    team.add(threading.get_native_id())
    spent = watch.used
    others = {tid: ns for tid, ns in spent.items() if tid not in team and tid not in watch.python and ns > 0}
    watch.counted = sorted(others)
    return {_THREAD_CPU: {"wall_ms": watch.wall_ns / 1e6,
                          "team_ms": sum(ns for tid, ns in spent.items() if tid in team) / 1e6,
                          "other_ms": sum(others.values()) / 1e6, "other_threads": len(others),
                          "others": [p.text for p in control.others()],
                          "others_threads": max([p.num_threads for p in control.others()], default=0)}}


PROBE = CompetingPoolsProbe()
PROBES = (PROBE,)
