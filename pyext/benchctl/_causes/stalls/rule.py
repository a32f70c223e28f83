"""Cause: a few calls taking most of the time.

Every comparison benchctl makes is of medians (per process, then across processes), which a call that is slow now
and then does not move: a full pass of the garbage collector, a cache rebuilt, a file written every so many calls,
memory handed back to the system and faulted in again. The total time a user measures does move with it. In the
unchanged workload's processes (its fresh ones and arm A of its paired ones), a steady call at :data:`STALL` times
its process's median or more, and :data:`STALL_OVER_MS` over it, is a stall; the cause is open (its mechanism is
not probed as such) where stalls are at most :data:`FEW` of the calls, took :data:`SHARE` or more of the time, and
came in :data:`MIN_PROCESSES` processes or more (one process's hiccup is the machine's as likely as the code's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._results import queries, wording
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause

__all__ = ["STALL", "STALL_OVER_MS", "FEW", "SHARE", "MIN_CALLS", "MIN_PROCESSES", "WHAT_STALLS", "Stalls", "stalls_of",
           "StallsCause", "CAUSES"]

#: A steady call at least this many times its process's median is a stall...
STALL = 3.0
#: ... and at least this many milliseconds over it: a call of a few microseconds runs 3-5× slow for an interrupt or a
#: page fault, which is the machine's (the lazy_init plant's 4.8 µs lookups: 13 of 97 calls up to 24 µs, 36% of
#: the time).
STALL_OVER_MS = 0.1
#: Stalls at most this share of the calls: a few (a workload whose calls take one of two times is not stalling).
FEW = 0.2
#: Stalls taking at least this share of the steady time: what a user's total time sees and the median does not.
SHARE = 0.25
#: A process with fewer steady calls tells no stalls.
MIN_CALLS = 8
#: Stalls in fewer processes than this are not named.
MIN_PROCESSES = 2
#: What can stall a call, said with the open finding: the probes that look at one of them are named.
WHAT_STALLS = ("a full pass of the garbage collector (the gc cause probes it), a cache rebuilt, a file written every "
               "so many calls, memory handed back to the system and faulted in again, another program's burst")


@dataclass(frozen=True)
class Stalls:
    """The stalls of a phase's processes: ``calls`` steady calls in ``processes`` processes, ``stalls`` of them
    at :data:`STALL`× their process's median or more (and :data:`STALL_OVER_MS` over it), in ``stalled_processes``
    processes; ``share`` the share of the steady time they took; ``median_ms`` the median of the processes' medians
    and ``slowest_ms`` the slowest call; ``mean_over_median`` the steady calls' mean over their process's median,
    over all processes."""

    processes: int
    calls: int
    stalls: int
    stalled_processes: int
    share: float
    median_ms: float
    slowest_ms: float
    mean_over_median: float

    @property
    def named(self) -> bool:
        return (self.stalls > 0 and self.stalls <= FEW * self.calls and self.share >= SHARE
                and self.stalled_processes >= MIN_PROCESSES)

    def text(self) -> str:
        """``"3 of its 120 steady calls (in 2 of 5 processes) ran 3× their process's median or more (0.1 ms over it at
        least) and took 64% of the time (the slowest 171 ms, against a median of 11.4 ms; the mean is 2.80× the
        median)"``."""
        return (f"{self.stalls} of its {self.calls} steady calls (in {self.stalled_processes} of {self.processes} "
                f"processes) ran {STALL:g}× their process's median or more ({STALL_OVER_MS:g} ms over it at least) and "
                f"took {self.share:.0%} of the time (the slowest {self.slowest_ms:.3g} ms, against a median of "
                f"{self.median_ms:.3g} ms; the mean is {wording.factor(self.mean_over_median)}× the median)")


def stalls_of(series: list[np.ndarray]) -> Stalls | None:
    """The stalls of ``series`` (each one process's steady ns, its first call left out: a slow first call is the
    warm-up cause's); None where fewer than :data:`MIN_PROCESSES` have :data:`MIN_CALLS` calls or more."""
    long_enough = [np.asarray(ns[1:], dtype=np.float64) for ns in series if len(ns) > MIN_CALLS]
    long_enough = [ns for ns in long_enough if np.median(ns) > 0]
    if len(long_enough) < MIN_PROCESSES:
        return None
    relative = [ns / np.median(ns) for ns in long_enough]
    stalled = [(rel >= STALL) & (ns - np.median(ns) >= STALL_OVER_MS * 1e6) for ns, rel in zip(long_enough, relative)]
    stall_time = sum(float(ns[mask].sum()) for ns, mask in zip(long_enough, stalled))
    total = sum(float(ns.sum()) for ns in long_enough)
    pooled = np.concatenate(relative)
    return Stalls(processes=len(long_enough), calls=len(pooled), stalls=int(sum(m.sum() for m in stalled)),
                  stalled_processes=sum(bool(m.any()) for m in stalled), share=stall_time / total,
                  median_ms=float(np.median([np.median(ns) for ns in long_enough])) / 1e6,
                  slowest_ms=max(float(ns.max()) for ns in long_enough) / 1e6,
                  mean_over_median=float(pooled.mean()))


class StallsCause(Cause):
    name = "stalls"
    order = 64
    title = "a few calls taking most of the time"

    def probes(self, facts) -> list[dict]:
        return []

    def precheck(self, facts, penalty: dict | None) -> str | None:
        return None  # the timed processes are its evidence

    def judge_phase(self, ctx: Context) -> Finding | None:
        series = [queries.steady_ns(data) for data in queries.baseline_series(ctx.doc, ctx.phase, ctx.baseline)]
        if not series:
            return None
        found = stalls_of(series)
        if found is None:
            long_enough = sum(len(ns) > MIN_CALLS for ns in series)
            return self.finding(ctx, None, f"too few calls to tell stalls: {long_enough} of its {len(series)} "
                                           f"processes ran {MIN_CALLS} or more steady calls after their first",
                                Status.NOT_CAUSE, evidence={"processes": len(series), "long_enough": long_enough})
        evidence = {"stalls": found.stalls, "calls": found.calls, "share": found.share,
                    "stalled_processes": found.stalled_processes, "slowest_ms": found.slowest_ms,
                    "median_ms": found.median_ms, "mean_over_median": found.mean_over_median}
        if found.named:
            return self.finding(ctx, None, f"{found.text()}: the medians every comparison here uses do not weigh "
                                           f"them, a total time does; what stalls is not probed as such "
                                           f"({WHAT_STALLS})", Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{found.text()}: not a few calls taking {SHARE:.0%} or more of the time in "
                                       f"{MIN_PROCESSES} processes or more", Status.NOT_CAUSE, evidence=evidence)


CAUSES = (StallsCause(),)
