"""``--benchctl-compare FILE``: this run's tests judged against a saved run, test by test.

Tests are matched by node id and phase. Where both sides have two or more
fresh processes (isolated tests), the ratio of the processes' geometric-mean
medians gets Welch's t interval over processes; otherwise the steady rounds
are compared with :func:`benchctl.results.stats.compare` (bootstrap CI of
the ratio of medians, Mann-Whitney test). Either way the verdict's rule
decides (:func:`benchctl.results.verdict.resolved`: significant, interval
clear of 1, and at least 5% apart), and each test is:

* ``slower`` / ``faster``: a difference the rule calls;
* ``unchanged``: none called, and the interval lies within 5% of 1;
* ``inconclusive``: none called, but the interval reaches past 5%, so a
  change that size cannot be ruled out.

Two in-process runs are one process a side: their interval carries no
process-to-process variation, which is why the 5% floor matters there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..results import document, queries, stats, verdict
from .intervals import welch_log_ratio
from .results_file import is_plugin_document

__all__ = ["CATEGORIES", "ONE_PROCESS_NOTE", "Judgement", "load_saved", "judge"]

CATEGORIES = ("slower", "faster", "unchanged", "inconclusive")
#: Said under a comparison that has a side measured in one process.
ONE_PROCESS_NOTE = ("one process a side: the interval holds the variation between rounds, not between processes "
                    "or sessions, which on a busy machine is larger; for a comparison that carries it, mark the "
                    "test @pytest.mark.benchctl(isolate=True, repeat=3) in both runs")


@dataclass
class Judgement:
    nodeid: str
    phase: str
    category: str            # one of CATEGORIES, or "new" (not in the saved file)
    comparison: dict | None  # ratio (current/saved), ci95, significant, p_value, method
    text: str
    processes: tuple = (1, 1)  # fresh processes measured on each side (current, saved)


def load_saved(path: str) -> dict:
    """The saved document; ResultsError when it is unreadable or not written by this plugin."""
    doc = document.load(path)
    if not is_plugin_document(doc):
        raise document.ResultsError(
            f"{path}: written for workload {doc['workload']!r} with matrix keys {list(doc['matrix'])}, not by "
            f"benchctl's pytest plugin; save a run with --benchctl-json to compare against it")
    return doc


def _compare(current: list[np.ndarray], saved: list[np.ndarray]) -> dict:
    if len(current) >= 2 and len(saved) >= 2:
        result = welch_log_ratio([float(np.median(r)) for r in current], [float(np.median(r)) for r in saved])
        p = 1.0 if result.p_value is None else result.p_value
        return {"ratio": result.centre, "ci95": [result.lo, result.hi], "p_value": p,
                "significant": p < 1.0 - stats.CONFIDENCE, "method": "Welch t over process medians"}
    cmp = stats.compare(np.concatenate(current), np.concatenate(saved), labels=("current", "saved"),
                        runs=(current, saved))
    method = "bootstrap over rounds, one process a side" if cmp["ci_method"] == "iterations" else \
        f"bootstrap ({cmp['ci_method']})"
    return {"ratio": cmp["ratio"], "ci95": cmp["ci95"], "p_value": cmp["p_value"],
            "significant": cmp["significant"], "method": method}


def _category(cmp: dict) -> str:
    if verdict.resolved(cmp):
        return "slower" if cmp["ratio"] > 1 else "faster"
    lo, hi = cmp["ci95"]
    band = 1.0 + verdict.MIN_EFFECT
    return "unchanged" if lo >= 1.0 / band and hi <= band else "inconclusive"


def judge(current: dict, saved: dict) -> list[Judgement]:
    """Every (test, phase) of ``current`` against ``saved``."""
    out = []
    for nodeid in current["matrix"].get("test", []):
        cell = {"test": nodeid}
        for phase in dict.fromkeys(p for run in queries.ok_runs(current, cell) for p in run["phases"]):
            now_runs = queries.steady_by_run(current, phase, cell)
            old_runs = queries.steady_by_run(saved, phase, cell)
            if not now_runs:
                continue
            if not old_runs:
                out.append(Judgement(nodeid, phase, "new", None, "not in the saved file"))
                continue
            try:
                cmp = _compare(now_runs, old_runs)
            except ValueError as e:  # e.g. medians of 0 ns: no ratio exists
                out.append(Judgement(nodeid, phase, "inconclusive", None, f"cannot compare: {e}"))
                continue
            out.append(Judgement(nodeid, phase, _category(cmp), cmp, f"{verdict.describe(cmp)} ({cmp['method']})",
                                 (len(now_runs), len(old_runs))))
    return out
