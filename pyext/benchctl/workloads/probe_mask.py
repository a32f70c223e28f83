"""Probe evidence of threads beyond the usable CPUs: torch's team, the CPUs its threads may run on, the quota.

Read after the profiled call, once the workload's own code has set its mask and its thread count: the
team's threads (each one's ``sched_getaffinity``, :func:`benchctl.threads.census`), the CPUs they may
use together, the tightest cgroup CPU quota (v2 and v1, :mod:`benchctl.cpu_quota`) and the periods the
process's groups were throttled during the call.
"""

from __future__ import annotations

from .. import cpu_quota, threads

__all__ = ["CpuFitWatch"]


class CpuFitWatch:
    """Use as a context manager around the call; :meth:`note` is the probe note's ``cpu_fit``."""

    def __enter__(self) -> "CpuFitWatch":
        self._throttled = cpu_quota.throttled_periods()
        return self

    def __exit__(self, *exc) -> None:
        self._throttled = cpu_quota.throttled_periods() - self._throttled

    def note(self) -> dict:
        """``{"cpu_fit": {"threads", "team", "team_cpus", "quota", "groups", "throttled"}}``."""
        import torch

        team = [t for t in threads.census() if t.get("omp_thread") is not None]
        cpus = sorted({c for t in team for c in (t.get("allowed_cpus") or [])})
        found = cpu_quota.quotas()
        return {"cpu_fit": {"threads": torch.get_num_threads(), "team": len(team), "team_cpus": cpus,
                            "quota": cpu_quota.quota_cpus(found), "groups": [q.text for q in found],
                            "throttled": self._throttled}}
