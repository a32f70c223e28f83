"""Cause: warm-up and lazy initialisation.

No setting probes it: every process already shows it. Its first iteration
is compared with its own steady median (a ratio per process, judged over the
processes like any comparison), and the warm-up the runner detected says how
many iterations it took; the first worker of each cell is also compared with
its later ones (a first process can pay for cold caches and lazy loading
that later ones find done).
"""

from __future__ import annotations

import math

import numpy as np

from ...results import processes, queries
from ...results.verdict import Finding
from .base import CAUSE, NOT_CAUSE, UNRESOLVED, Cause, Context

__all__ = ["Warmup"]


def _first_over_steady(doc: dict, phase: str) -> tuple[list[float], list[int]]:
    """Per successful process of any cell: first iteration / steady median, and its detected warm-up."""
    ratios, warmups = [], []
    for run in doc["runs"]:
        data = run["phases"].get(phase) if run["status"] == "ok" else None
        if not data or len(data["ns"]) < 2:
            continue
        steady = np.median(data["ns"][max(1, data.get("warmup") or 0):])
        if steady > 0 and data["ns"][0] > 0:
            ratios.append(data["ns"][0] / steady)
            warmups.append(data.get("warmup") or 0)
    return ratios, warmups


def _first_process(doc: dict, phase: str) -> dict | None:
    """Each cell's first process against its later ones, as an interval over the cells."""
    ratios = []
    for cell in queries.cells(doc):
        medians = {r["repetition"]: float(np.median(r["phases"][phase]["ns"][r["phases"][phase].get("warmup") or 0:]))
                   for r in queries.ok_runs(doc, cell) if phase in r["phases"]}
        later = [v for rep, v in medians.items() if rep > 0]
        if 0 in medians and later:
            ratios.append(medians[0] / math.exp(np.mean(np.log(later))))
    return processes.cell_interval(ratios) if len(ratios) >= 2 else None


class Warmup(Cause):
    name = "warmup"
    title = "warm-up and lazy initialisation"

    def judge(self, ctx: Context, phase: str) -> Finding | None:
        ratios, warmups = _first_over_steady(ctx.doc, phase)
        if len(ratios) < 2:
            return None
        first = processes.cell_interval(ratios)
        band = ctx.comparisons.band(phase)
        cmp = {"ratio": first["value"], "ci95": first["ci"], "outcome": processes.judge({"ci95": first["ci"]}, band),
               "band": band, "p_value": None}
        lo, hi = first["ci"]
        slow_first = cmp["outcome"] == processes.EFFECT and first["value"] > 1
        evidence = {"first_over_steady": ratios, "warmup_iterations": warmups, "first_process": None}
        message = (f"the first iteration of each process takes {first['value']:.2f}× its steady "
                   f"median [95% CI {lo:.2f}, {hi:.2f}] over {len(ratios)} processes")
        if slow_first:
            message += (f", and the series settles after {int(np.median(warmups))} iteration(s) (median): something "
                        "initialises on first use; benchctl leaves the warm-up out of every comparison, and a "
                        "warm-up call before timing (or eager initialisation) removes it from your own timings")
        else:
            message += f": no warm-up beyond ±{band:.0%}" if cmp["outcome"] == processes.NO_EFFECT else \
                ": whether there is a warm-up is unresolved"
        later = _first_process(ctx.doc, phase)
        if later is not None and later["ci"] is not None:
            evidence["first_process"] = later
            if processes.judge({"ci95": later["ci"]}, band) == processes.EFFECT:
                message += (f"; the first process of each cell ran {later['value']:.2f}× its later ones "
                            f"[95% CI {later['ci'][0]:.2f}, {later['ci'][1]:.2f}] (cold caches or lazy loading "
                            "that later processes find done)")
        status = CAUSE if slow_first else (NOT_CAUSE if cmp["outcome"] == processes.NO_EFFECT else UNRESOLVED)
        return self.finding(phase, cmp, message, status, evidence=evidence)
