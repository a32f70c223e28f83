"""What the probe worker learnt of the process's threads: the pools at work beside torch's team, and
whether torch's team fits the CPUs it may use (the typed parts of :class:`benchctl.results.facts.Facts`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import wording

__all__ = ["BUSY_SHARE", "ThreadCpu", "CpuFit"]

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

    @property
    def text(self) -> str:
        """``"3 native threads outside torch's team took 120 ms of CPU over 140 ms of timed iterations (torch's
        team 150 ms)"``."""
        return (f"{self.other_threads} native thread(s) outside torch's team took {wording.count(self.other_ms)} ms "
                f"of CPU over {wording.count(self.wall_ms)} ms of timed iterations (torch's team "
                f"{wording.count(self.team_ms)} ms)")


@dataclass(frozen=True)
class CpuFit:
    """torch's thread count, its team's size and the CPUs the team's threads may use together, the tightest
    cgroup quota (CPUs; None: none), the groups read, the periods throttled during the profiled call, and
    the counts the workload's own code gave ``torch.set_num_threads`` (``asked``)."""

    threads: int
    team: int
    team_cpus: list[int]
    quota: float | None
    groups: list[str] = field(default_factory=list)
    throttled: int = 0
    asked: list = field(default_factory=list)

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
        """``"torch.set_num_threads(2)"``: the code's own calls."""
        return ", ".join(f"torch.set_num_threads({n})" for n in self.asked)

    @property
    def text(self) -> str:
        """``"a team of 2 threads on CPUs [0] (no cgroup quota), 0 periods throttled"``."""
        quota = "no cgroup quota" if self.quota is None else f"a cgroup quota of {self.quota:g} CPUs"
        return (f"a team of {max(self.threads, self.team)} threads on CPUs {self.team_cpus} ({quota}), "
                f"{self.throttled} period(s) throttled in the profiled call")
