"""Cause: time that grows with each call.

A call that works through state the calls before it left (a list appended to and never cleared, a cache that
grows, an autograd graph kept alive by a running total) takes longer the more calls ran before it: its timing
depends on how many iterations were run, not only on what one call does. No setting probes it: every process of
the unchanged workload shows it, as a trend of its iterations' time against their number. Per process (the
baseline's fresh processes, and its arm A in paired ones), the median of the last third of its iterations after
the first is set against the first third's, and their ranks against the iteration number are correlated; it is
named where every process grew by :data:`GROWTH` or more and the correlation's median is :data:`TREND` or more (a
machine whose speed wanders moves a series up and down, not up in every process).
"""

from __future__ import annotations

import numpy as np

from ..._results import queries
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import EVIDENCE_ONLY, Cause

__all__ = ["GROWTH", "TREND", "MIN_ITERATIONS", "MIN_PROCESSES", "MECHANISM", "FIX", "growth_of", "Growth",
           "CAUSES"]

#: The last third of a process's iterations at least this many times its first third: grown.
GROWTH = 1.5
#: The median over processes of the rank correlation of time with the iteration number at least this: a trend.
TREND = 0.7
#: A process with fewer iterations (after its first) tells no trend (a paired process's arm A holds 9-12).
MIN_ITERATIONS = 6
#: Fewer processes tell no trend either.
MIN_PROCESSES = 2
MECHANISM = ("the code carries state from one call to the next that each call then works through (a list appended "
             "to and never cleared, a cache that grows, an autograd graph kept alive by a running total): a timing "
             "of it depends on how many calls ran before")
FIX = "keep each call's work independent of the calls before it (clear or bound what it accumulates)"


def _ranks(x: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(x))
    ranks[np.argsort(x, kind="stable")] = np.arange(len(x))
    return ranks


def growth_of(ns: list[float]) -> tuple[float, float] | None:
    """(the last third's median over the first third's, the rank correlation of time with the iteration number)
    of one process's series after its first iteration, or None where it is too short."""
    series = np.asarray(ns[1:], dtype=np.float64)
    if len(series) < MIN_ITERATIONS or np.all(series == series[0]):
        return None
    third = len(series) // 3
    first = float(np.median(series[:third]))
    if first <= 0:
        return None
    rho = float(np.corrcoef(_ranks(series), np.arange(len(series)))[0, 1])
    return float(np.median(series[-third:])) / first, rho


class Growth(Cause):
    name = "growth"
    order = 62
    title = "time that grows with each call"

    def probes(self, facts) -> list[dict]:
        return []

    def precheck(self, facts, penalty: dict | None) -> str | None:
        return None  # the timed processes are its evidence

    def judge_phase(self, ctx: Context) -> Finding | None:
        series = [data["ns"] for data in queries.baseline_series(ctx.doc, ctx.phase, ctx.baseline)]
        if not series:
            return None
        grown = [g for ns in series if (g := growth_of(ns)) is not None]
        if len(grown) < MIN_PROCESSES:
            return self.finding(ctx, None, f"too few iterations to tell a trend: {len(grown)} of its {len(series)} "
                                           f"processes ran {MIN_ITERATIONS} or more after their first",
                                Status.NOT_CAUSE, evidence={"processes": len(series), "long_enough": len(grown)})
        ratios, rhos = [g[0] for g in grown], [g[1] for g in grown]
        trend = float(np.median(rhos))
        evidence = {"last_over_first_third": ratios, "rank_correlation": rhos}
        said = (f"the last third of each process's calls ran {float(np.median(ratios)):.2f}× its first third "
                f"(median of {len(grown)} processes, {min(ratios):.2f}-{max(ratios):.2f}×; rank correlation of "
                f"time with the call's number {trend:.2f})")
        if min(ratios) >= GROWTH and trend >= TREND:
            return self.finding(ctx, None, f"{said}: {MECHANISM}; the fix: {FIX}; {EVIDENCE_ONLY}", Status.CAUSE,
                                evidence=evidence)
        return self.finding(ctx, None, f"{said}: not a growth of {GROWTH}× in every process with a trend of "
                                       f"{TREND}", Status.NOT_CAUSE, evidence=evidence)


CAUSES = (Growth(),)
