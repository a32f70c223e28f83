"""Probe evidence of threads beyond the usable CPUs: torch's team, the CPUs its threads may run on, the quota.

Read after the profiled call, once the workload's own code has set its mask and its thread count: the
team's threads (each one's ``sched_getaffinity``, :func:`benchctl.threads.census`), the CPUs they may
use together, the tightest cgroup CPU quota (v2 and v1, :mod:`benchctl.cpu_quota`) and the periods the
process's groups were throttled during the call; and the counts the workload's own code gave
``torch.set_num_threads`` from its ``setup()`` on (:class:`ThreadCalls`): code that sets its own count
undoes a thread-count probe applied before it.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from .. import cpu_quota, threads

__all__ = ["ThreadCalls", "thread_calls", "CpuFitWatch"]


class ThreadCalls:
    """The counts given to ``torch.set_num_threads`` while :func:`thread_calls` records them (passed on unchanged)."""

    def __init__(self) -> None:
        self.asked: list[Any] = []


@contextlib.contextmanager
def thread_calls(active: bool = True) -> Iterator[ThreadCalls]:
    """Record the workload's own ``torch.set_num_threads`` calls for the block (none when not ``active``);
    torch's function is put back after it, also after an exception."""
    calls = ThreadCalls()
    if not active:
        yield calls
        return
    import torch

    original = torch.set_num_threads

    def recorded(n: Any) -> None:
        calls.asked.append(n)
        original(n)

    torch.set_num_threads = recorded
    try:
        yield calls
    finally:
        torch.set_num_threads = original


class CpuFitWatch:
    """Use as a context manager around the call; :meth:`note` is the probe note's ``cpu_fit``."""

    def __init__(self, calls: ThreadCalls | None = None) -> None:
        self._calls = calls or ThreadCalls()

    def __enter__(self) -> "CpuFitWatch":
        self._throttled = cpu_quota.throttled_periods()
        return self

    def __exit__(self, *exc) -> None:
        self._throttled = cpu_quota.throttled_periods() - self._throttled

    def note(self) -> dict:
        """``{"cpu_fit": {"threads", "team", "team_cpus", "quota", "groups", "throttled", "asked"}}``."""
        import torch

        team = [t for t in threads.census() if t.get("omp_thread") is not None]
        cpus = sorted({c for t in team for c in (t.get("allowed_cpus") or [])})
        found = cpu_quota.quotas()
        return {"cpu_fit": {"threads": torch.get_num_threads(), "team": len(team), "team_cpus": cpus,
                            "quota": cpu_quota.quota_cpus(found), "groups": [q.text for q in found],
                            "throttled": self._throttled, "asked": list(self._calls.asked)}}
