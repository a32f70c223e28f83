"""Evidence of the probe worker: the OpenMP runtime torch's team runs on, how its threads wait, and
whether anything else of the workload's own needed the CPUs while the team could spin, read back as
:class:`TeamWait`.

An OpenMP team that finished a parallel region keeps spinning for a while before it sleeps
(libgomp: ``GOMP_SPINCOUNT``, 300,000 spins unless ``OMP_WAIT_POLICY`` says otherwise;
Intel's and LLVM's runtime: ``KMP_BLOCKTIME``, 200 ms). Spinning costs nothing on CPUs nobody
else wants; it costs time when the workload's other threads (a prefetching thread, another
pool) or its child processes (data-loading workers) need them. The probe's watch measures
what those used over the probe worker's timed iterations (where the profiler's threads, which start
only after them, take nothing): CPU time per thread from ``/proc/self/task/*/schedstat`` (and the
children's), in nanoseconds (:mod:`benchctl._thread_cpu`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from ... import _thread_cpu, omp
from ..._probe import Probe, ProbedCall
from .setting import PASSIVE_WAIT, RUNTIME_WAIT_VARIABLES, WAIT_VARIABLES

__all__ = ["WAITING_CPUS", "TeamWait", "OmpWaitProbe", "beside_ms", "cpus_beside", "omp_wait_evidence", "waited",
           "PROBE", "PROBES"]

# The probe note's keys, written and read here only.
_RUNTIME, _TEAM, _ENV = "omp_runtime", "omp_team", "omp_wait_env"
_CPUS_BESIDE, _MS_BESIDE, _CPUS_USED = "cpus_beside_team", "cpu_ms_beside_team", "cpus_used"
#: Under this many CPUs kept busy on average over the timed iterations by the process and its children, the calls
#: mostly waited (a sleep, I/O, a lock, another machine): what changes the CPUs' work changes at most that share of
#: their time. (A step of random 1 or 4 ms sleeps kept 0.06 here; one thread of arithmetic keeps about 1.)
WAITING_CPUS = 0.1


@dataclass(frozen=True)
class TeamWait:
    """How torch's OpenMP team waits between parallel regions, in the probe worker: its ``runtime``
    ("libgomp", "libiomp5", "libomp"; None: no runtime loaded), its ``team`` size, the wait ``variables``
    it started with, and the CPUs the workload's other threads and child processes kept busy over the
    probe's timed iterations (``beside_cpus``) and the CPU milliseconds that was (``beside_ms``; None: not
    measured); ``used_cpus``: the CPUs the whole process and its children kept busy over them."""

    runtime: str | None
    team: int
    variables: dict[str, str] = field(default_factory=dict)
    beside_cpus: float | None = None
    beside_ms: float | None = None
    used_cpus: float | None = None

    @classmethod
    def from_probe(cls, probe: dict) -> "TeamWait | None":
        """From the probe note's keys (:func:`omp_wait_evidence`); None where they are missing."""
        if _TEAM not in probe:
            return None
        return cls(probe.get(_RUNTIME), probe[_TEAM], dict(probe.get(_ENV) or {}),
                   probe.get(_CPUS_BESIDE), probe.get(_MS_BESIDE), probe.get(_CPUS_USED))

    def waited_text(self) -> str | None:
        """Why what changes the CPUs' work cannot explain the time, where the timed calls mostly waited (under
        :data:`WAITING_CPUS` kept busy); None where they did not, or it was not measured."""
        if self.used_cpus is None or self.used_cpus >= WAITING_CPUS:
            return None
        return (f"its timed calls kept {self.used_cpus:.2f} CPUs busy on average (the process and its children): "
                "they mostly waited (a sleep, I/O, a lock, another process), and what changes the CPUs' work changes "
                "at most that share of their time")

    @property
    def passive(self) -> str | None:
        """The variable that already makes this runtime's threads sleep at once (``"GOMP_SPINCOUNT=0"``), or None."""
        for name in RUNTIME_WAIT_VARIABLES.get(self.runtime, ()):
            if self.variables.get(name, "").strip().lower() == PASSIVE_WAIT[name].lower():
                return f"{name}={self.variables[name]}"
        return None


def beside_ms(watch: _thread_cpu.ThreadCpuWatch, team_tids: set[int]) -> float:
    """CPU milliseconds used while ``watch`` (of :func:`~benchctl._thread_cpu.task_ns`) watched by threads
    outside ``team_tids`` (this process's other threads and every thread of its children)."""
    own = "/proc/self/task/"
    return sum(ns for task, ns in watch.used.items()
               if not (task.startswith(own) and int(task.rsplit("/", 1)[1]) in team_tids)) / 1e6


def cpus_beside(watch: _thread_cpu.ThreadCpuWatch, team_tids: set[int]) -> float | None:
    """CPUs those threads kept busy on average while it watched; None before the calls ended."""
    return beside_ms(watch, team_tids) / 1e3 / watch.wall_s if watch.wall_s else None


def omp_wait_evidence(watch: _thread_cpu.ThreadCpuWatch | None) -> dict:
    """The probe note's keys: torch's OpenMP runtime (None: none loaded), its team size, the wait variables
    as this process saw them, the CPUs (and CPU milliseconds) the workload's other threads and children
    used while ``watch`` watched, the timed iterations, and the CPUs the whole process and its children used
    then (None: not measured)."""
    torch = sys.modules.get("torch")
    runtime = omp.torch_runtime() if torch is not None else None
    team = [] if runtime is None else omp.team_census()
    tids = {member["tid"] for member in team}
    beside = None if watch is None else cpus_beside(watch, tids)
    used = sum(watch.used.values()) / 1e9 / watch.wall_s if watch is not None and watch.wall_s else None
    return {_RUNTIME: None if runtime is None else runtime["kind"],
            _TEAM: len(team) or (torch.get_num_threads() if torch is not None else 0),
            _ENV: {name: os.environ[name] for name in WAIT_VARIABLES if name in os.environ},
            _CPUS_BESIDE: beside, _MS_BESIDE: None if watch is None else beside_ms(watch, tids), _CPUS_USED: used}


class OmpWaitProbe(Probe):
    """Watches the timed iterations (:meth:`watch`: every thread of this process and of its children, on a
    :class:`~benchctl._thread_cpu.ThreadCpuWatch`); :meth:`record` is :func:`omp_wait_evidence`."""

    key = "omp_wait"
    fact = TeamWait

    def watch(self) -> _thread_cpu.ThreadCpuWatch:
        return _thread_cpu.ThreadCpuWatch(_thread_cpu.task_ns)

    def record(self, probed: ProbedCall) -> dict:
        return omp_wait_evidence(probed.watcher(self))

    def read(self, note: dict) -> TeamWait | None:
        return TeamWait.from_probe(note)


PROBE = OmpWaitProbe()
PROBES = (PROBE,)


def waited(facts: Any) -> str | None:
    """:meth:`TeamWait.waited_text` of the probe worker's facts (a cause of the CPUs' work is out where it says
    something); None where it says nothing or the timed iterations were not watched."""
    team = facts.of(PROBE) if facts is not None else None
    return team.waited_text() if team is not None else None
