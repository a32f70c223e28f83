"""The CPUs this process may run on at once (its CPU mask and its cgroups' CPU quota), and torch's thread
count held at them against its own code's calls.

A CPU mask (``sched_getaffinity``) says which CPUs a thread may run on; a cgroup's CPU quota
(v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``) says how much CPU time per period
the whole group may take, whatever the mask: 8 CPUs' worth on a 192-CPU machine runs a team of
192 threads in bursts and then stops it (``nr_throttled`` in ``cpu.stat`` counts those periods).
Both hierarchies are read where mounted, and every ancestor of the process's group: the
tightest quota on the way up applies. OpenMP runtimes size their teams from the mask alone.

A workload that cuts its CPU mask (``os.sched_setaffinity(0, {0})``) and then sizes torch's team past
it (``torch.set_num_threads(2)``) runs two threads on one CPU: every parallel region waits for a
descheduled thread. Setting the count once before the workload runs is undone by that call, so
:class:`ThreadClamp` replaces ``torch.set_num_threads`` for as long as it is installed: each call is
recorded as asked, and the count given to torch is the smaller of the asked one and the CPUs usable
at that moment (the calling thread's mask, cut to the cgroup quota: :func:`usable_cpus`).
Code that imported the function itself before the clamp was installed is not reached; the per-iteration
check (:meth:`ThreadClamp.holds`) sees what it set.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from typing import Any, Iterator

from ... import _procfs

__all__ = ["CpuQuota", "quotas", "quota_cpus", "throttled_periods", "usable_cpus", "ThreadClamp", "clamped"]

_MOUNTINFO = "/proc/self/mountinfo"
_OWN_GROUPS = "/proc/self/cgroup"


@dataclass(frozen=True)
class CpuQuota:
    """One cgroup's CPU limit: ``cpus`` the CPUs' worth of time it may take per period (None: no limit),
    ``throttled`` the periods it was stopped in so far (None where not counted)."""

    version: int
    path: str
    cpus: float | None
    throttled: int | None

    @property
    def text(self) -> str:
        limit = "no CPU quota" if self.cpus is None else f"a quota of {self.cpus:g} CPUs"
        return f"cgroup v{self.version} {self.path}: {limit}"


def _mounts() -> list[tuple[int, str, str]]:
    """(version, mount point, root inside the hierarchy) of the cgroup v2 mount and the v1 ``cpu`` one."""
    found = []
    for line in (_procfs.read_text(_MOUNTINFO) or "").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        kind, options = tail[0], tail[2].split(",")
        if kind == "cgroup2":
            found.append((2, fields[4], fields[3]))
        elif kind == "cgroup" and "cpu" in options:
            found.append((1, fields[4], fields[3]))
    return found


def _own_path(version: int) -> str | None:
    """This process's group in hierarchy ``version`` (v1: the one holding the ``cpu`` controller)."""
    for line in (_procfs.read_text(_OWN_GROUPS) or "").splitlines():
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if version == 2 and number == "0" and controllers == "":
            return path
        if version == 1 and "cpu" in controllers.split(","):
            return path
    return None


def _stat_throttled(directory: str) -> int | None:
    for line in (_procfs.read_text(os.path.join(directory, "cpu.stat")) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "nr_throttled" and value.strip().isdecimal():
            return int(value)
    return None


def _limit(version: int, directory: str) -> float | None:
    """The group's CPUs' worth of quota, None when unlimited or unreadable."""
    if version == 2:
        parts = (_procfs.read_text(os.path.join(directory, "cpu.max")) or "max").split()
        quota, period = parts[0], parts[1] if len(parts) > 1 else "100000"
    else:
        quota = _procfs.read_text(os.path.join(directory, "cpu.cfs_quota_us")) or "-1"
        period = _procfs.read_text(os.path.join(directory, "cpu.cfs_period_us")) or "100000"
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:  # "max": no limit
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def quotas() -> list[CpuQuota]:
    """Every group between this process's own and its hierarchy's root, in both hierarchies where mounted."""
    out = []
    for version, mount, root in _mounts():
        own = _own_path(version)
        if own is None:
            continue
        relative = os.path.relpath(own, root) if own.startswith(root) else own.lstrip("/")
        parts = [] if relative in (".", "") else relative.strip("/").split("/")
        for depth in range(len(parts), -1, -1):
            directory = os.path.join(mount, *parts[:depth])
            if os.path.isdir(directory):
                out.append(CpuQuota(version, "/" + "/".join(parts[:depth]), _limit(version, directory),
                                    _stat_throttled(directory)))
    return out


def quota_cpus(found: list[CpuQuota] | None = None) -> float | None:
    """The tightest quota in CPUs over ``found`` (default :func:`quotas`), None when none limits it."""
    limits = [q.cpus for q in (quotas() if found is None else found) if q.cpus is not None]
    return min(limits) if limits else None


def throttled_periods(found: list[CpuQuota] | None = None) -> int:
    """Periods the process's groups were throttled in so far (summed; 0 where none counts them)."""
    return sum(q.throttled or 0 for q in (quotas() if found is None else found))


def usable_cpus(quota: float | None = None) -> int:
    """CPUs the calling thread can run on at once: its mask, cut to the quota (rounded up) when one is given."""
    mask = len(os.sched_getaffinity(0))
    return mask if quota is None else max(1, min(mask, math.ceil(quota)))


class ThreadClamp:
    """torch's thread count held at the usable CPUs while installed; ``asked`` lists the code's own calls.
    ``fill``: held *at* them, also where the code asks fewer (its own ``torch.set_num_threads(1)`` on a machine
    of more CPUs); without it, cut to them and never raised."""

    def __init__(self, fill: bool = False) -> None:
        import torch  # the clamp replaces torch's own function

        self._torch = torch
        self._original = None
        self.fill = fill
        self.quota = quota_cpus()  # a quota does not change under a running process
        self.asked: list[int] = []

    @property
    def installed(self) -> bool:
        return self._original is not None

    def usable(self) -> int:
        return usable_cpus(self.quota)

    def _set(self, n: Any) -> None:
        self.asked.append(n)
        if isinstance(n, int) and n > 0:
            n = self.usable() if self.fill else min(n, self.usable())
        self._original(n)  # torch refuses bad values itself

    def install(self) -> dict:
        """Replace ``torch.set_num_threads`` and cut the current count to the usable CPUs (with ``fill``: set it to
        them); what ran after it."""
        if self.installed:
            raise RuntimeError("the thread clamp is installed already")
        self._original = self._torch.set_num_threads
        before = self._torch.get_num_threads()
        try:
            self._original(self.usable() if self.fill else min(before, self.usable()))
            self._torch.set_num_threads = self._set
        except BaseException:
            self._original(before)
            self._original = None
            raise
        return self.state()

    def remove(self) -> None:
        """Put torch's own function back (the count the code last set stays)."""
        if self.installed:
            self._torch.set_num_threads = self._original
            self._original = None

    def holds(self) -> bool:
        """Whether torch runs no more threads than the CPUs usable now (with ``fill``: as many)."""
        ran, usable = self._torch.get_num_threads(), self.usable()
        return ran == usable if self.fill else ran <= usable

    def state(self) -> dict:
        """``{"usable", "ran", "asked", "quota"}``: the usable CPUs now, torch's count, the code's own calls."""
        return {"usable": self.usable(), "ran": self._torch.get_num_threads(), "asked": list(self.asked),
                "quota": self.quota}


@contextlib.contextmanager
def clamped(fill: bool = False) -> Iterator[ThreadClamp]:
    """The clamp installed for the block; torch's function and thread count restored after it, also after errors."""
    clamp = ThreadClamp(fill)
    before = clamp._torch.get_num_threads()
    clamp.install()
    try:
        yield clamp
    finally:
        clamp.remove()
        clamp._torch.set_num_threads(before)
