"""How busy the machine's CPUs were over an interval, from /proc/stat, and how much of it was us.

A timing taken while other work ran beside it is slower and noisier for
reasons the measured code does not own. :class:`BusySampler` samples the
kernel's per-CPU time accounting at the start and end of an interval; the
difference says how many CPUs were busy on average, how many this process
(and every process below it, running or waited for) kept busy, and how much time the hypervisor
gave to other guests (steal).
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

from ._procfs import read_text

__all__ = ["CpuTimes", "cpu_times", "BusySampler", "wait_for_quiet"]


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative clock ticks of one CPU (or of all, summed) as /proc/stat counts them."""

    total: int
    idle: int   # idle + iowait
    steal: int  # time the hypervisor ran someone else while this CPU wanted to run


def cpu_times(path: str = "/proc/stat") -> dict[str, CpuTimes]:
    """``{"cpu": all CPUs summed, "cpu0": ..., ...}``; {} where /proc/stat cannot be read."""
    out = {}
    for line in (read_text(path) or "").splitlines():
        if not line.startswith("cpu"):
            continue
        name, *fields = line.split()
        ticks = [int(v) for v in fields]
        # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
        # already inside user, so only the first eight fields add up to the total.
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
        steal = ticks[7] if len(ticks) > 7 else 0
        out[name] = CpuTimes(sum(ticks[:8]), idle, steal)
    return out


def _descendants_cpu_ticks(root: int) -> dict[int, int]:
    """{pid: user + system clock ticks} of every live process below ``root`` (its children, theirs, ...), from
    /proc/<pid>/stat; {} where /proc cannot be read."""
    parents, ticks = {}, {}
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        text = read_text(f"/proc/{pid}/stat")
        if not text:
            continue
        fields = text.rsplit(")", 1)[1].split()  # after the command, which may hold spaces
        parents[pid], ticks[pid] = int(fields[1]), int(fields[11]) + int(fields[12])
    below, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in below:
                below[pid] = ticks[pid]
                frontier.append(pid)
    return below


def _own_cpu_seconds() -> tuple[float, dict[int, int]]:
    """(CPU seconds of this process, every thread, and of the children it has waited for; the ticks of the
    processes below it still running): a workload's own child (a neighbour it starts, a data loader's
    workers) is its own load, not another program's."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime, _descendants_cpu_ticks(os.getpid())


class BusySampler:
    """Start at construction, :meth:`finish` at the end: what ran beside us meanwhile."""

    def __init__(self) -> None:
        self._ticks_per_s = os.sysconf("SC_CLK_TCK")
        self._start = cpu_times().get("cpu")
        self._own, self._below = _own_cpu_seconds()
        self._wall = time.monotonic()
        self._load = os.getloadavg()

    def finish(self) -> dict:
        """``{"cpus", "wall_s", "busy_cpus", "own_cpus", "other_cpus", "steal_cpus",
        "load_average_start", "load_average_end"}``: average CPUs busy in all (steal
        included), with our own processes, with other processes of this machine, and taken
        by the hypervisor for other guests. The CPU figures are None where /proc/stat could
        not be read."""
        end = cpu_times().get("cpu")
        wall = time.monotonic() - self._wall
        own_s, below = _own_cpu_seconds()
        # The processes below us still running at the end: what each took since the start (since it began,
        # for one started meanwhile); one that ended and was waited for is in own_s already.
        below_s = sum(v - self._below.get(pid, 0) for pid, v in below.items()) / self._ticks_per_s
        own = (own_s - self._own + max(0.0, below_s)) / wall if wall > 0 else None
        out = {"cpus": os.cpu_count(), "wall_s": wall, "busy_cpus": None, "own_cpus": own, "other_cpus": None,
               "steal_cpus": None, "load_average_start": list(self._load), "load_average_end": list(os.getloadavg())}
        if self._start is None or end is None or wall <= 0:
            return out
        seconds = self._ticks_per_s * wall
        busy = ((end.total - self._start.total) - (end.idle - self._start.idle)) / seconds
        steal = (end.steal - self._start.steal) / seconds
        out.update(busy_cpus=busy, steal_cpus=steal, other_cpus=max(0.0, busy - steal - own))
        return out


def wait_for_quiet(most_cpus: float, max_wait_s: float, sample_s: float, since: BusySampler | None = None) -> float:
    """Wait until other load (other processes and steal, over one look of at least ``sample_s``) is at most
    ``most_cpus``, for at most ``max_wait_s``; the seconds waited. ``since``: a sampler started earlier (when
    the last worker ended), whose span is the first look when it lasted a fifth of ``sample_s`` or more: a
    quiet machine then costs no wait at all. Where /proc/stat cannot be read nothing is waited for."""
    if most_cpus == float("inf"):  # no gate: nothing to wait for
        return 0.0
    started = time.monotonic()
    sampler = since
    while True:
        if sampler is None:
            sampler = BusySampler()
            time.sleep(sample_s)
        beside = sampler.finish()
        sampler = None
        waited = time.monotonic() - started
        if waited + sample_s > max_wait_s:
            return waited
        if beside["wall_s"] < sample_s / 5:
            continue  # too short a look to tell (the kernel counts CPU time in 10 ms ticks)
        if beside["other_cpus"] is None or beside["other_cpus"] + beside["steal_cpus"] <= most_cpus:
            return waited
