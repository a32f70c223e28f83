"""The ``summary`` section of a results document, and the pooled samples behind it.

One summary entry per (workload, phase, cell): the cell's steady-state
iterations of every successful repetition pooled together (each worker's own
warm-up iterations left out, as :func:`benchctl.stats.detect_warmup` found
them when the run was recorded), summarised by :mod:`benchctl.stats`.
Scripts, the report and the verdict read this section; its keys are stable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .results import cell_id
from .schedule import expand

#: counter event -> summary key holding its per-iteration median.
COUNTER_FIELDS = {
    "minor_faults": "minor_faults_per_iter",
    "major_faults": "major_faults_per_iter",
    "context_switches": "context_switches_per_iter",
    "cpu_migrations": "cpu_migrations_per_iter",
}


def detect_warmup(ns: list[float]) -> int | None:
    """Warm-up length of one worker's series (None when benchctl.stats is not installed)."""
    try:
        from . import stats
    except ImportError:
        return None
    return int(stats.detect_warmup(np.asarray(ns, dtype=np.float64))) if len(ns) else 0


def phases(doc: dict) -> list[str]:
    """Phase names in order of first appearance among successful runs."""
    seen: dict[str, None] = {}
    for run in doc["runs"]:
        if run["status"] == "ok":
            seen.update(dict.fromkeys(run["phases"]))
    return list(seen)


def cells(doc: dict) -> list[dict]:
    """The document's cells in matrix order."""
    return expand(doc["matrix"])


def ok_runs(doc: dict, cell: dict) -> list[dict]:
    key = cell_id(cell)
    return [r for r in doc["runs"] if r["status"] == "ok" and cell_id(r["cell"]) == key]


def steady_samples(doc: dict, phase: str, cell: dict) -> tuple[np.ndarray, dict[str, list]]:
    """Pooled steady-state ns and per-iteration counters of ``cell`` in ``phase``."""
    ns: list[float] = []
    counters: dict[str, list] = {}
    runs = [r for r in ok_runs(doc, cell) if phase in r["phases"]]
    events = set().union(*(r["phases"][phase].get("counters", {}) for r in runs)) if runs else set()
    for run in runs:
        data = run["phases"][phase]
        start = data.get("warmup") or 0
        ns += data["ns"][start:]
        n = len(data["ns"][start:])
        for event in events:
            values = data.get("counters", {}).get(event)
            # A repetition without this event contributes "unknown", not zeros.
            counters.setdefault(event, []).extend(values[start:] if values else [None] * n)
    return np.asarray(ns, dtype=np.float64), counters


def steady_by_run(doc: dict, phase: str, cell: dict) -> list[np.ndarray]:
    """Steady-state ns of ``cell`` in ``phase``, one array per ok run (fresh process)."""
    out = []
    for run in ok_runs(doc, cell):
        data = run["phases"].get(phase)
        if data:
            steady = data["ns"][data.get("warmup") or 0:]
            if steady:
                out.append(np.asarray(steady, dtype=np.float64))
    return out


def per_iter_median(values: list | None) -> float | None:
    """Median of per-iteration counter deltas; None if any iteration could not be counted."""
    if not values or any(v is None for v in values):
        return None
    return float(np.median(np.asarray(values, dtype=np.float64)))


def summarize(doc: dict) -> list[dict[str, Any]]:
    """The summary entries of ``doc`` (requires :mod:`benchctl.stats`)."""
    from . import stats

    entries = []
    for phase in phases(doc):
        for cell in cells(doc):
            ns, counters = steady_samples(doc, phase, cell)
            if not len(ns):
                continue
            s = stats.Samples(ns, warmup=0).summary()
            by_run = steady_by_run(doc, phase, cell)
            if len(by_run) >= 2:  # the CI must carry the variation between processes
                s["ci95"] = list(stats.bootstrap_median_ci_by_run(by_run))
            runs = [r for r in ok_runs(doc, cell) if phase in r["phases"]]
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
                entry[field] = per_iter_median(counters.get(event))
            entries.append(entry)
    return entries


def find(summary: list[dict], phase: str, cell: dict) -> dict | None:
    key = cell_id(cell)
    for entry in summary:
        if entry["phase"] == phase and cell_id(entry["cell"]) == key:
            return entry
    return None
