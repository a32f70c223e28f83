"""Probe evidence of threads beyond the usable CPUs: torch's team, the CPUs its threads may run on, the quota,
read back as :class:`CpuFit`.

Read after the profiled call, once the workload's own code has set its mask and its thread count: the
team's threads (each one's ``sched_getaffinity``, :func:`benchctl.threads.census`), the CPUs they may
use together, the tightest cgroup CPU quota (v2 and v1, :mod:`.control`) and the periods the
process's groups were throttled during the call (:meth:`CpuFitProbe.watch_call`); and the counts the
workload's own code gave ``torch.set_num_threads`` from its ``setup()`` on (:class:`ThreadCalls`): code
that sets its own count undoes a thread-count probe applied before it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ... import threads
from ..._thread_calls import ThreadCalls
from ..._probe import Probe, ProbedCall
from . import control

__all__ = ["COUNT_VARIABLES", "CpuFitWatch", "CpuFit", "CpuFitProbe", "PROBE", "PROBES"]

# The probe note's key, written and read here only.
_CPU_FIT = "cpu_fit"
#: The environment variables that size torch's team when the code does not (``torchrun`` sets OMP_NUM_THREADS=1
#: for every process it starts with more than one per node).
COUNT_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


class CpuFitWatch:
    """Use as a context manager around the call; :meth:`note` is the probe note's ``cpu_fit``."""

    def __init__(self, calls: ThreadCalls | None = None) -> None:
        self._calls = calls or ThreadCalls()

    def __enter__(self) -> "CpuFitWatch":
        self._throttled = control.throttled_periods()
        return self

    def __exit__(self, *exc) -> None:
        self._throttled = control.throttled_periods() - self._throttled

    def note(self, calls: ThreadCalls | None = None) -> dict:
        """``{"cpu_fit": {"threads", "team", "team_cpus", "quota", "groups", "throttled", "asked", "asked_calls",
        "environment"}}``; ``asked`` and ``asked_calls`` from ``calls`` where given (default: those it was made
        with); ``environment``: the :data:`COUNT_VARIABLES` the process has."""
        calls = calls or self._calls
        import torch

        team = [t for t in threads.census() if t.get("omp_thread") is not None]
        cpus = sorted({c for t in team for c in (t.get("allowed_cpus") or [])})
        found = control.quotas()
        return {_CPU_FIT: {"threads": torch.get_num_threads(), "team": len(team), "team_cpus": cpus,
                           "quota": control.quota_cpus(found), "groups": [q.text for q in found],
                           "throttled": self._throttled, "asked": list(calls.asked), "asked_calls": calls.calls,
                           "environment": {k: os.environ[k] for k in COUNT_VARIABLES if k in os.environ}}}


@dataclass(frozen=True)
class CpuFit:
    """torch's thread count, its team's size and the CPUs the team's threads may use together, the tightest
    cgroup quota (CPUs; None: none), the groups read, the periods throttled during the profiled call, and
    the counts the workload's own code gave ``torch.set_num_threads`` (``asked``: a count repeated at once kept
    once; ``asked_calls``: its calls, 0 in a results file from before they were counted) and the variables of
    :data:`COUNT_VARIABLES` in its environment (``environment``; none in a results file from before they were
    read)."""

    threads: int
    team: int
    team_cpus: list[int]
    quota: float | None
    groups: list[str] = field(default_factory=list)
    throttled: int = 0
    asked: list = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    asked_calls: int = 0

    @property
    def environment_count(self) -> tuple[str, int] | None:
        """(the variable, its count) where the environment sizes torch's team at the count torch runs: the first of
        :data:`COUNT_VARIABLES` that holds it; None otherwise."""
        for name in COUNT_VARIABLES:
            value = str(self.environment.get(name, "")).strip()
            if value.isdigit() and int(value) == self.threads:
                return name, int(value)
        return None

    @classmethod
    def from_note(cls, note: dict | None) -> "CpuFit | None":
        return None if not note else cls(**note)

    @property
    def usable(self) -> int:
        """CPUs the team can run on at once: its threads' masks together, cut to the quota."""
        mask = len(self.team_cpus) or self.team
        return mask if self.quota is None else max(1, min(mask, math.ceil(self.quota)))

    @property
    def over(self) -> bool:
        """Whether the team is larger than the CPUs it may use, or its group was throttled."""
        return max(self.threads, self.team) > self.usable or self.throttled > 0

    @property
    def sets_own_count(self) -> bool:
        """Whether the workload's own code sets torch's thread count to more than one thread (it undoes a
        thread-count probe applied before it)."""
        return any(n != 1 for n in self.asked)

    @property
    def asked_text(self) -> str:
        """``"torch.set_num_threads(2)"``: the code's own calls; ``"torch.set_num_threads(1), 31 calls"`` where it
        gave a count again (in each call, say)."""
        text = ", ".join(f"torch.set_num_threads({n})" for n in self.asked)
        return text if self.asked_calls <= len(self.asked) else f"{text}, {self.asked_calls} calls"

    @property
    def text(self) -> str:
        """``"a team of 2 threads on CPUs [0] (no cgroup quota), 0 periods throttled"``."""
        quota = "no cgroup quota" if self.quota is None else f"a cgroup quota of {self.quota:g} CPUs"
        return (f"a team of {max(self.threads, self.team)} threads on CPUs {self.team_cpus} ({quota}), "
                f"{self.throttled} period(s) throttled in the profiled call")


class CpuFitProbe(Probe):
    """Watches the profiled call (:meth:`watch_call`: the periods throttled in it); :meth:`record` is the probe
    note's ``cpu_fit``, with the counts the code gave ``torch.set_num_threads`` (``probed.thread_calls``);
    none where no call was profiled (a workload that times itself)."""

    key = "cpu_fit"
    fact = CpuFit

    def watch_call(self) -> CpuFitWatch:
        return CpuFitWatch()

    def record(self, probed: ProbedCall) -> dict:
        watch = probed.call_watcher(self)
        return {} if watch is None else watch.note(probed.thread_calls)

    def read(self, note: dict) -> CpuFit | None:
        return CpuFit.from_note(note.get(_CPU_FIT))

    def from_json(self, data: dict) -> CpuFit | None:
        return CpuFit.from_note(data)


PROBE = CpuFitProbe()
PROBES = (PROBE,)
