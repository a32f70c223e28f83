"""Cause: warm-up and lazy initialisation.

No setting probes it: every process already shows it. What matters is how
much of a process's timed series the first iterations cost beyond its
steady median: a first call 50× slower distorts a mean over 30 iterations
by 160%, a first call 1.6× slower (caches, the thread pool's first start)
by 2%. That share, one value per process, is judged over the processes like
any comparison. Every torch program pays a start of a few iterations (its
thread pool, first-touch pages): warm-up is named as a cause only when it
also costs at least :data:`LAZY_MIN_ITERATIONS` steady iterations, which is
what lazy initialisation looks like. The first worker of each cell is also
compared with its later ones (a first process can pay for cold caches and
lazy loading that later ones find done).
"""

from __future__ import annotations

import math

import numpy as np

from ..._results import processes, queries
from ..._results.comparison import Comparison, Outcome
from ..._results.facts import warmup_extra
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause

__all__ = ["LAZY_MIN_ITERATIONS", "Warmup", "CAUSES"]

#: A warm-up that costs fewer steady iterations than this is the ordinary start of a torch program.
LAZY_MIN_ITERATIONS = 10.0


def _start_series(run: dict, phase: str) -> tuple[list[float], int, int] | None:
    """(a process's series from its start, the warm-up iterations detected in it, the iterations the process
    recorded in ``phase``) of one successful run, or None. An unpaired run: its phase. A paired one: the
    iterations left out after its first switch (the process's first) and then the iterations of the arm it
    switched to (its schedule's first letter; the other arms' blocks run under other settings and are not that
    series). Each process is read once: from the run that holds that arm (arm A's: the cell's run, not the
    paired control's run a cell's worker carried). Where every cell is paired, the baseline has one process of
    its own, and the paired ones give the rest."""
    data = run["phases"].get(phase) if run["status"] == "ok" else None
    if not data:
        return None
    if "pair" not in run:
        return data["ns"], data.get("warmup") or 0, len(data["ns"])
    pair = run["pair"]
    schedule = (pair.get("schedule") or {}).get(phase, "")
    first = schedule[:1].upper()
    if not first or first not in ("A", pair.get("letter", "B")) or (first == "A" and "carried_by" in run):
        return None
    series = (pair.get("phases") or {}).get(phase) if first == "A" else data
    if not series:
        return None
    lead = len(schedule) - len(schedule.lstrip(first.lower()))  # left out before the first block
    settled = list((pair.get("settling_ns") or {}).get(phase, [])[:lead])
    return settled + list(series["ns"]), lead + (series.get("warmup") or 0), len(schedule)


def _warmup_cost(doc: dict, phase: str) -> tuple[list[float], list[float], list[float], list[int]]:
    """Per successful process of any cell (:func:`_start_series`): (its series' time over what it would take
    at its steady median, what the warm-up cost in steady iterations, the first iteration over that median,
    the warm-up iterations the runner detected)."""
    costs, extras, firsts, warmups = [], [], [], []
    for run in doc["runs"]:
        got = _start_series(run, phase)
        if got is None or len(got[0]) < 2:
            continue
        ns, warmup, recorded = got
        warm = max(1, warmup)
        steady = float(np.median(ns[warm:])) if len(ns) > warm else 0.0
        extra = warmup_extra(ns, warmup)  # the warm-up beyond steady iterations, in them
        if extra is not None and ns[0] > 0 and steady > 0:
            # Over every iteration the process recorded: what the warm-up adds to a series of that length.
            costs.append(max(1.0 + extra / recorded, 1e-9))
            extras.append(extra)
            firsts.append(ns[0] / steady)
            warmups.append(warmup)
    return costs, extras, firsts, warmups


def _first_process(doc: dict, phase: str) -> dict | None:
    """Each cell's first unpaired process against its later ones, as an interval over the cells."""
    ratios = []
    for cell in queries.cells(doc):
        medians = {run["repetition"]: float(np.median(ns)) for run, ns in queries.steady_runs(doc, phase, cell)
                   if "pair" not in run}
        later = [v for rep, v in medians.items() if rep > 0]
        if 0 in medians and later:
            ratios.append(medians[0] / math.exp(np.mean(np.log(later))))
    return processes.cell_interval(ratios) if len(ratios) >= 2 else None


class Warmup(Cause):
    name = "warmup"
    order = 60
    title = "warm-up and lazy initialisation"

    def judge_phase(self, ctx: Context) -> Finding | None:
        costs, extras, firsts, warmups = _warmup_cost(ctx.doc, ctx.phase)
        if len(costs) < 2:
            return None
        cost = processes.cell_interval(costs)
        # The series against its own steady time, one value per process, judged as any comparison.
        cmp = Comparison(ratio=cost["value"], ci95=tuple(cost["ci"]), k_a=cost["k"], k_b=cost["k"],
                         median_a=cost["value"], median_b=1.0, log_se=None,
                         method="t interval over processes of series time / steady time").judged(ctx.band())
        band = cmp.band
        lo, hi = cost["ci"]
        slows = cmp.slower
        extra = float(np.median(extras))
        shown = max(extra, 0.0) + 0.0  # a warm-up faster than steady costs nothing; + 0.0 drops the sign of -0.0
        lazy_sized = extra >= LAZY_MIN_ITERATIONS
        evidence = {"series_over_steady": costs, "extra_iterations": extras, "first_over_steady": firsts,
                    "warmup_iterations": warmups, "first_process": None}
        message = (f"the first iteration of each process takes {float(np.median(firsts)):.2f}× its steady median "
                   f"and the warm-up costs {shown:.1f} steady iterations (medians of {len(costs)} "
                   f"processes); it makes a series {cost['value'] - 1:+.1%} [95% CI {lo - 1:+.1%}, {hi - 1:+.1%}] "
                   "longer than at its steady median")
        if not lazy_sized:
            message += (f": under {LAZY_MIN_ITERATIONS:.0f} iterations is the ordinary start of a torch program "
                        "(its thread pool, first-touch pages), not lazy initialisation")
        elif slows:
            # The first iteration is the warm-up at least, where the detector found no steady band to leave.
            settled = int(np.median([max(1, w) for w in warmups]))
            message += (f", and it settles after {settled} iteration(s) (median): something "
                        "initialises on first use; benchctl leaves the warm-up out of every comparison, and a "
                        "warm-up call before timing (or eager initialisation) removes it from your own timings")
        else:
            message += f": no warm-up worth ±{band:.0%}" if cmp.outcome is Outcome.NO_EFFECT else \
                ": whether the warm-up matters is unresolved"
        later = _first_process(ctx.doc, ctx.phase)
        if later is not None and later["ci"] is not None:
            evidence["first_process"] = later
            first = Comparison(ratio=later["value"], ci95=tuple(later["ci"]), k_a=later["k"], k_b=later["k"],
                               median_a=later["value"], median_b=1.0, log_se=None,
                               method="t interval over cells of first process / later ones").judged(band)
            if first.beyond_band:
                message += (f"; the first process of each cell ran {first.ratio_text()} its later ones (cold caches "
                            "or lazy loading that later processes find done)")
        status = (Status.NOT_CAUSE if not lazy_sized or cmp.outcome is Outcome.NO_EFFECT else
                  Status.CAUSE if slows else Status.UNRESOLVED)
        return self.finding(ctx, cmp, message, status, evidence=evidence)


CAUSES = (Warmup(),)
