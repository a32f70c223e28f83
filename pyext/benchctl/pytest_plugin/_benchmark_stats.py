"""pytest-benchmark's statistics fields, computed from benchctl's measurement: what ``benchmark.stats`` gives a
test under ``--benchctl-as-benchmark`` and what ``--benchmark-json`` writes.

Every figure is per call, in seconds, over the steady rounds benchctl's own
:class:`~.stats.Stats` uses (warm-up rounds left out). ``min``, ``max``,
``mean``, ``median``, ``iqr``, ``stddev`` and ``rounds`` are benchctl's own
(for an isolated test the median is the geometric mean of the processes'
medians); the fields pytest-benchmark adds (quartiles, outlier counts, the
data within 1.5 IQR, ``total``, ``data``) are taken from the same rounds.
benchctl's own figures are under ``benchctl`` (the median's 95% interval,
warm-up rounds, flags).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ._session import PHASE, TestRecord
from ._stats import Stats

__all__ = ["FIELDS", "BenchmarkStats", "steady_ns"]

#: pytest-benchmark's statistics fields, in its order.
FIELDS = ("min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3", "iqr_outliers", "stddev_outliers",
          "outliers", "ld15iqr", "hd15iqr", "ops", "total")
_NS = 1e-9


def steady_ns(record: TestRecord) -> np.ndarray:
    """The per-call ns of a test's steady rounds, every process's pooled (the rounds its Stats were taken over)."""
    phases = [r["phases"][PHASE] for r in record.runs if r["phases"].get(PHASE, {}).get("ns")]
    stats = record.stats
    warmups = [p.warmup for p in stats.processes] if stats.processes else [stats.warmup] * len(phases)
    return np.concatenate([np.asarray(p["ns"], dtype=np.float64)[w:] for p, w in zip(phases, warmups)])


@dataclass(frozen=True)
class BenchmarkStats:
    """``benchmark.stats``: ``stats["mean"]``, ``stats.median`` and ``stats.stats.median`` all work."""

    min: float
    max: float
    mean: float
    stddev: float
    rounds: int
    median: float
    iqr: float
    q1: float
    q3: float
    iqr_outliers: int
    stddev_outliers: int
    ld15iqr: float
    hd15iqr: float
    total: float
    data: tuple
    iterations: int
    #: benchctl's own statistics of the same rounds (ci95, warmup, flags, advice, processes).
    benchctl: Stats

    @property
    def ops(self) -> Optional[float]:
        """Calls per second (1 / mean), as pytest-benchmark's ``ops`` (rounds over total)."""
        return self.benchctl.ops

    @property
    def outliers(self) -> str:
        """pytest-benchmark's ``"stddev_outliers;iqr_outliers"``."""
        return f"{self.stddev_outliers};{self.iqr_outliers}"

    @property
    def stats(self) -> "BenchmarkStats":
        """The object itself, for code written against ``benchmark.stats.stats``."""
        return self

    def __getitem__(self, key: str) -> Any:
        if key in FIELDS or key in ("data", "iterations", "benchctl"):
            return getattr(self, key)
        raise KeyError(f"benchmark.stats[{key!r}]: the fields are {', '.join(FIELDS)}, data and iterations")

    def as_dict(self, include_data: bool = True) -> dict:
        """pytest-benchmark's ``stats`` object of a JSON benchmark entry."""
        out: dict[str, Any] = {name: getattr(self, name) for name in FIELDS}
        if include_data:
            out["data"] = list(self.data)
        out["iterations"] = self.iterations
        return out

    @classmethod
    def of(cls, steady: Sequence[float], stats: Stats) -> "BenchmarkStats":
        """From the steady rounds' per-call ns (:func:`steady_ns`) and benchctl's Stats of them."""
        ns = np.asarray(steady, dtype=np.float64)
        q1, q3 = (float(v) for v in np.percentile(ns, [25, 75]))
        iqr = q3 - q1
        low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr
        mean, sd = float(ns.mean()), float(np.std(ns, ddof=1)) if ns.size > 1 else 0.0
        inside = ns[(ns >= low) & (ns <= high)]
        return cls(
            min=stats.min, max=stats.max, mean=stats.mean, stddev=stats.stddev, rounds=stats.rounds,
            median=stats.median, iqr=iqr * _NS, q1=q1 * _NS, q3=q3 * _NS,
            iqr_outliers=int(ns.size - inside.size),
            stddev_outliers=int(np.count_nonzero((ns < mean - sd) | (ns > mean + sd))),
            ld15iqr=float(inside.min()) * _NS, hd15iqr=float(inside.max()) * _NS, total=float(ns.sum()) * _NS,
            data=tuple(float(v) * _NS for v in ns), iterations=stats.iterations, benchctl=stats)

    @classmethod
    def of_record(cls, record: TestRecord) -> "BenchmarkStats":
        return cls.of(steady_ns(record), record.stats)
