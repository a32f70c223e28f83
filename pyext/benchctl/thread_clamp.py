"""Hold torch's intra-op thread count at the CPUs the process may use, against its own code's calls.

A workload that cuts its CPU mask (``os.sched_setaffinity(0, {0})``) and then sizes torch's team past
it (``torch.set_num_threads(2)``) runs two threads on one CPU: every parallel region waits for a
descheduled thread. Setting the count once before the workload runs is undone by that call, so
:class:`ThreadClamp` replaces ``torch.set_num_threads`` for as long as it is installed: each call is
recorded as asked, and the count given to torch is the smaller of the asked one and the CPUs usable
at that moment (the calling thread's mask, cut to the cgroup quota: :mod:`benchctl.cpu_quota`).
Code that imported the function itself before the clamp was installed is not reached; the per-iteration
check (:meth:`ThreadClamp.holds`) sees what it set.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from . import cpu_quota

__all__ = ["ThreadClamp", "clamped"]


class ThreadClamp:
    """torch's thread count held at the usable CPUs while installed; ``asked`` lists the code's own calls."""

    def __init__(self) -> None:
        import torch  # the clamp replaces torch's own function

        self._torch = torch
        self._original = None
        self.quota = cpu_quota.quota_cpus()  # a quota does not change under a running process
        self.asked: list[int] = []

    @property
    def installed(self) -> bool:
        return self._original is not None

    def usable(self) -> int:
        return cpu_quota.usable_cpus(self.quota)

    def _set(self, n: Any) -> None:
        self.asked.append(n)
        count = min(int(n), self.usable()) if isinstance(n, int) and n > 0 else n  # torch refuses bad values itself
        self._original(count)

    def install(self) -> dict:
        """Replace ``torch.set_num_threads`` and cut the current count to the usable CPUs; what ran after it."""
        if self.installed:
            raise RuntimeError("the thread clamp is installed already")
        self._original = self._torch.set_num_threads
        before = self._torch.get_num_threads()
        try:
            self._original(min(before, self.usable()))
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
        """Whether torch runs no more threads than the CPUs usable now."""
        return self._torch.get_num_threads() <= self.usable()

    def state(self) -> dict:
        """``{"usable", "ran", "asked", "quota"}``: the usable CPUs now, torch's count, the code's own calls."""
        return {"usable": self.usable(), "ran": self._torch.get_num_threads(), "asked": list(self.asked),
                "quota": self.quota}


@contextlib.contextmanager
def clamped() -> Iterator[ThreadClamp]:
    """The clamp installed for the block; torch's function and thread count restored after it, also after errors."""
    clamp = ThreadClamp()
    before = clamp._torch.get_num_threads()
    clamp.install()
    try:
        yield clamp
    finally:
        clamp.remove()
        clamp._torch.set_num_threads(before)
