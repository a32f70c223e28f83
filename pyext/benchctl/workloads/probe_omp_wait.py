"""Evidence of the probe worker: the OpenMP runtime torch's team runs on, how its threads wait, and
whether anything else of the workload's own needed the CPUs while the team could spin.

An OpenMP team that finished a parallel region keeps spinning for a while before it sleeps
(libgomp: ``GOMP_SPINCOUNT``, 300,000 spins unless ``OMP_WAIT_POLICY`` says otherwise;
Intel's and LLVM's runtime: ``KMP_BLOCKTIME``, 200 ms). Spinning costs nothing on CPUs nobody
else wants; it costs time when the workload's other threads (a prefetching thread, another
pool) or its child processes (data-loading workers) need them. :class:`ThreadCpu` measures
what those used over the probe worker's timed iterations (where the profiler's threads, which start
only after them, take nothing): CPU time per thread from ``/proc/self/task/*/schedstat`` (and the
children's), in nanoseconds.
"""

from __future__ import annotations

import os
import sys
import time

from .. import _procfs, omp

__all__ = ["WAIT_VARIABLES", "ThreadCpu", "omp_wait_evidence"]

#: The variables that set how each runtime's idle team threads wait (libgomp; Intel's and LLVM's runtime).
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "KMP_LIBRARY")


def _tasks(pid: int | str) -> list[str]:
    try:
        return [f"/proc/{pid}/task/{tid}" for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:  # the process ended meanwhile
        return []


def _children(task: str) -> list[str]:
    return (_procfs.read_text(f"{task}/children") or "").split()


def _cpu_ns() -> dict[str, int]:
    """{task directory: nanoseconds on a CPU} of this process's threads and of its children's."""
    own = _tasks("self")
    tasks = own + [t for task in own for child in _children(task) for t in _tasks(child)]
    out = {}
    for task in tasks:
        fields = (_procfs.read_text(f"{task}/schedstat") or "").split()
        if fields:
            out[task] = int(fields[0])
    return out


class ThreadCpu:
    """Around calls: the CPU time each thread of this process and of its children used in them, and their wall
    time."""

    def __enter__(self) -> "ThreadCpu":
        self.before, self.started = _cpu_ns(), time.perf_counter()
        self.used: dict[str, int] = {}
        self.wall_s = 0.0
        return self

    def __exit__(self, *exc) -> None:
        self.wall_s = time.perf_counter() - self.started
        after = _cpu_ns()
        self.used = {task: ns - self.before.get(task, 0) for task, ns in after.items()}

    def beside_ms(self, team_tids: set[int]) -> float:
        """CPU milliseconds used during the call by threads outside ``team_tids`` (this process's other
        threads and every thread of its children)."""
        own = "/proc/self/task/"
        return sum(ns for task, ns in self.used.items()
                   if not (task.startswith(own) and int(task.rsplit("/", 1)[1]) in team_tids)) / 1e6

    def cpus_beside(self, team_tids: set[int]) -> float | None:
        """CPUs those threads kept busy on average during the call; None before the call ended."""
        return self.beside_ms(team_tids) / 1e3 / self.wall_s if self.wall_s else None


def omp_wait_evidence(watch: ThreadCpu | None) -> dict:
    """The probe note's keys: torch's OpenMP runtime (None: none loaded), its team size, the wait variables
    as this process saw them, and the CPUs (and CPU milliseconds) the workload's other threads and children
    used while ``watch`` watched, the timed iterations (None: not measured)."""
    torch = sys.modules.get("torch")
    runtime = omp.torch_runtime() if torch is not None else None
    team = [] if runtime is None else omp.team_census()
    tids = {member["tid"] for member in team}
    beside = None if watch is None else watch.cpus_beside(tids)
    return {"omp_runtime": None if runtime is None else runtime["kind"],
            "omp_team": len(team) or (torch.get_num_threads() if torch is not None else 0),
            "omp_wait_env": {name: os.environ[name] for name in WAIT_VARIABLES if name in os.environ},
            "cpus_beside_team": beside, "cpu_ms_beside_team": None if watch is None else watch.beside_ms(tids)}
