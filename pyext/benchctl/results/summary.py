"""The ``summary`` section of a results document.

One entry per (workload, phase, cell): the cell's steady-state iterations of
every successful repetition pooled together (each worker's own warm-up
iterations left out, as :func:`benchctl.results.stats.detect_warmup` found
them when the run was recorded), summarised by :mod:`benchctl.results.stats`.
Scripts, the report and the verdict read this section; its keys are stable.
"""

from __future__ import annotations

from typing import Any

from . import queries, stats

__all__ = ["COUNTER_FIELDS", "summarize"]

#: counter event -> summary key holding its per-iteration median.
COUNTER_FIELDS = {
    "minor_faults": "minor_faults_per_iter",
    "major_faults": "major_faults_per_iter",
    "context_switches": "context_switches_per_iter",
    "cpu_migrations": "cpu_migrations_per_iter",
}


def _entry(doc: dict, phase: str, cell: dict) -> dict[str, Any] | None:
    ns, counters = queries.steady_samples(doc, phase, cell)
    if not len(ns):
        return None
    s = stats.Samples(ns, warmup=0).summary()
    by_run = queries.steady_by_run(doc, phase, cell)
    if len(by_run) >= 2:  # the CI must carry the variation between processes
        s["ci95"] = list(stats.bootstrap_median_ci_by_run(by_run))
    runs = [r for r in queries.ok_runs(doc, cell) if phase in r["phases"]]
    entry = {
        "workload": doc["workload"],
        "phase": phase,
        "cell": cell,
        "n": int(s["n"]),
        "median_ms": s["median"] / 1e6,
        "ci95_ms": [v / 1e6 if v is not None else None for v in s["ci95"]],
        "iqr_over_median": s["iqr_over_median"],
        "repetitions": len(runs),
        "warmup": [r["phases"][phase].get("warmup") for r in runs],
        "flags": list(s.get("flags", [])),
    }
    for event, field in COUNTER_FIELDS.items():
        entry[field] = queries.per_iter_median(counters.get(event))
    return entry


def summarize(doc: dict) -> list[dict[str, Any]]:
    """The summary entries of ``doc``, phase by phase, cells in matrix order."""
    entries = (_entry(doc, phase, cell) for phase in queries.phases(doc) for cell in queries.cells(doc))
    return [e for e in entries if e is not None]
