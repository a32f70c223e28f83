"""The ``summary`` section of a results document.

One entry per (workload, phase, cell), and one for the A/A control's second
arm (``"arm": "B"``) and for the paired A/A control (``"arm": "P"``; its arm-B iterations); a cell
timed paired with the baseline is described by its arm-B iterations, ``"paired": true``.
A cell is described process by process: each
successful process gives the median of its steady iterations (its own
warm-up left out, as :func:`benchctl._results.stats.detect_warmup` found it
when the run was recorded); the cell's ``median_ms`` is the geometric mean of
those, and ``ci95_ms`` its t interval over processes
(:func:`benchctl._results.processes.cell_interval`). With one process the
interval can only say how the iterations of that process varied, and
``ci_method`` says so. The pooled iterations still give the instability
flags and the per-iteration counter medians. A paired baseline with fewer
than two processes of its own (every cell paired: ``--repeat auto`` runs none
of its own) is also described by arm A of each paired cell's process,
the baseline's settings timed there (``from_paired_processes`` says how many).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import settings as _settings
from .document import CONTROL_ARM, PAIRED_ARM
from . import document, processes, queries, stats

__all__ = ["COUNTER_FIELDS", "MEAN_EVENTS", "ARM_LABEL", "PAIRED_CONTROL_LABEL", "PAIRED_LABEL", "slots", "label",
           "summarize"]

#: How every view names the A/A control's second arm, after its cell.
ARM_LABEL = f"[A/A arm {CONTROL_ARM}]"
#: How every view names the paired A/A control (:mod:`benchctl._run.paired`), after its cell.
PAIRED_CONTROL_LABEL = "[paired A/A]"
#: After a cell timed paired with the baseline, in every view.
PAIRED_LABEL = "(paired)"

#: counter event -> summary key holding its per-iteration median (its mean for those in :data:`MEAN_EVENTS`).
COUNTER_FIELDS = {
    "minor_faults": "minor_faults_per_iter",
    "major_faults": "major_faults_per_iter",
    "context_switches": "context_switches_per_iter",
    "cpu_migrations": "cpu_migrations_per_iter",
    "runqueue_wait_ns": "runqueue_wait_ns_per_iter",
}
#: The counters summarised by their mean: a wait for a CPU ends where the scheduler's tick lets a waiting thread in,
#: so an iteration reads 0 or a few ticks (multiples of 4 ms on an Intel Xeon VM at HZ=250) and its median is
#: either; the mean over iterations is its size.
MEAN_EVENTS = frozenset({"runqueue_wait_ns"})


def _within(by_run: list[np.ndarray]) -> float | None:
    """The median over processes of each process's IQR/median: how much iterations vary inside one."""
    shares = [float(np.subtract(*np.percentile(x, [75, 25])) / np.median(x)) for x in by_run if np.median(x) > 0]
    return float(np.median(shares)) if shares else None


def _interval(by_run: list[np.ndarray], pooled: np.ndarray) -> tuple[list, str, float | None]:
    """(95% CI of the cell in ns, how it was made, the log-sd between processes); ``pooled``: every steady
    iteration, whose median's interval is taken only where one process leaves nothing else to say."""
    values = [float(np.median(x)) for x in by_run]
    if len(values) >= 2 and min(values) > 0:
        cell = processes.cell_interval(values)
        return cell["ci"], "t interval over processes", cell["log_sd"]
    return (list(stats.median_ci(pooled)),
            "one process: its iterations only (no between-process variation)", None)


def _series(doc: dict, phase: str, cell: dict, arm: str | None) -> tuple[list[dict], int]:
    """(each process's data in ``phase`` that describes ``cell`` and ``arm``, how many of them are arm A of a paired
    cell's process): its own runs', and for a paired baseline with fewer than two of its own, arm A of each
    paired process (one process of its own gave an interval of its iterations only, which held the median
    of 20 A/A runs of `bench/aa_calibration.py --paired` in 68% of the cells' intervals; 82% with arm A in)."""
    own = [r["phases"][phase] for r in queries.ok_runs(doc, cell, arm) if phase in r["phases"]]
    spec = doc.get("paired")
    if arm is not None or not spec or len(own) >= 2 or document.cell_id(cell) != document.cell_id(spec["baseline"]):
        return own, 0
    extra = queries.paired_baseline_series(doc, phase)
    return own + extra, len(extra)


def _entry(doc: dict, phase: str, cell: dict, arm: str | None) -> dict[str, Any] | None:
    series, from_paired = _series(doc, phase, cell, arm)
    ns, counters = queries.pool_steady(series)
    if not len(ns):
        return None
    pooled = stats.Samples(ns, warmup=0).summary(interval=False)
    by_run = [x for x in map(queries.steady_ns, series) if len(x)]
    medians = [float(np.median(x)) for x in by_run]
    ci, method, between = _interval(by_run, np.asarray(ns))
    value = processes.cell_interval(medians)["value"] if min(medians) > 0 else pooled["median"]
    entry = {
        "workload": doc["workload"],
        "phase": phase,
        "cell": cell,
        "arm": arm,
        "n": int(pooled["n"]),
        "processes": len(by_run),
        "process_medians_ms": [m / 1e6 for m in medians],
        "median_ms": value / 1e6,
        "ci95_ms": [v / 1e6 if v is not None else None for v in ci],
        "ci_method": method,
        "between_process_log_sd": between,
        "within_iqr_over_median": _within(by_run),
        "iqr_over_median": pooled["iqr_over_median"],
        "repetitions": len(series),
        "warmup": [d.get("warmup") for d in series],
        "from_paired_processes": from_paired,
        "flags": list(pooled.get("flags", [])),
        "paired": arm == PAIRED_ARM or (arm is None and queries.is_paired(doc, cell)),
    }
    for event, field in COUNTER_FIELDS.items():
        of = queries.per_iter_mean if event in MEAN_EVENTS else queries.per_iter_median
        entry[field] = of(counters.get(event))
    return entry


def slots(doc: dict) -> list[tuple[dict, str | None]]:
    """(cell, arm) of everything a view describes: each cell in matrix order (arm None), then the A/A
    control's second arm (arm ``"B"``)."""
    control, paired = doc.get("control"), doc.get("paired")
    return ([(cell, None) for cell in queries.cells(doc)] + ([(control["cell"], CONTROL_ARM)] if control else [])
            + ([(paired["baseline"], PAIRED_ARM)] if paired else []))


def label(cell: dict, arm: str | None) -> str:
    """``"n=32"``, or ``"n=32 [A/A arm B]"`` for the control's second arm (``"[paired A/A]"`` for the paired
    control's runs)."""
    return _settings.cell_label(cell) + {CONTROL_ARM: f" {ARM_LABEL}", PAIRED_ARM: f" {PAIRED_CONTROL_LABEL}"}.get(
        arm or "", "")


def summarize(doc: dict) -> list[dict[str, Any]]:
    """The summary entries of ``doc``, phase by phase, cells in matrix order, the control's arm B last."""
    entries = (_entry(doc, phase, cell, arm) for phase in queries.phases(doc) for cell, arm in slots(doc))
    return [e for e in entries if e is not None]
