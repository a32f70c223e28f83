"""``benchctl.stats``: what a test's measured calls came to, per call, in seconds.

Built from one in-process series (:meth:`Stats.from_rounds`) or from the
series of several fresh worker processes (:meth:`Stats.from_processes`).
The fields carry pytest-benchmark's names (``min``, ``max``, ``mean``,
``median``, ``iqr``, ``stddev``, ``rounds``, ``iterations``, ``ops``) and
benchctl's additions: ``ci95`` (the interval of the median), ``warmup``
(rounds set apart as warm-up), ``flags`` and ``advice``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from .._results.processes import cell_interval
from .._results.stats import UNSTABLE_IQR_OVER_MEDIAN, Samples

__all__ = ["Stats"]

_NS = 1e-9


@dataclass(frozen=True)
class Stats:
    """Per-call times in seconds over the steady rounds (warm-up rounds left out).

    ``ci95`` is the 95% interval of the median: a bootstrap over the rounds of
    one process (from 1000 rounds the order-statistic interval it converges
    to), or, for isolated tests, a t interval over the processes'
    medians (``median`` is then their geometric mean, and ``processes`` holds
    each one's own figures). ``stats["median"]`` works as well as
    ``stats.median``; ``stats.stats`` is the object itself, for code written
    against pytest-benchmark's ``benchmark.stats.stats``.
    """

    min: float
    max: float
    mean: float
    median: float
    iqr: float
    stddev: float
    rounds: int
    iterations: int
    ci95: tuple
    warmup: int
    flags: tuple = ()
    advice: tuple = ()
    processes: tuple = field(default=())
    unit: str = "s"

    @property
    def ops(self) -> Optional[float]:
        """Calls per second (1 / mean)."""
        return 1.0 / self.mean if self.mean > 0 else None

    @property
    def iqr_over_median(self) -> Optional[float]:
        return self.iqr / self.median if self.median > 0 else None

    @property
    def stats(self) -> "Stats":
        return self

    def __getitem__(self, key: str) -> Any:
        if key in ("ops", "iqr_over_median") or key in self.__dataclass_fields__:
            return getattr(self, key)
        raise KeyError(key)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["ops"], out["iqr_over_median"] = self.ops, self.iqr_over_median
        return out

    @classmethod
    def from_rounds(cls, ns_per_call: Sequence[float], iterations: int, warmup: Optional[int] = None,
                    seed: int = 0) -> "Stats":
        """From one series: per-call ns, one value per round; ``warmup`` None detects the warm-up."""
        ns = np.asarray(ns_per_call, dtype=np.float64)
        if warmup is not None:
            warmup = min(int(warmup), ns.size - 1)  # a warm-up may not swallow every round
        samples = Samples(ns, warmup=warmup)
        s = samples.summary(seed=seed)
        steady = samples.steady_ns
        return cls(
            min=float(steady.min()) * _NS, max=float(steady.max()) * _NS, mean=s["mean"] * _NS,
            median=s["median"] * _NS, iqr=s["iqr"] * _NS, stddev=_stddev(steady) * _NS,
            rounds=int(steady.size), iterations=int(iterations),
            ci95=(s["ci95"][0] * _NS, s["ci95"][1] * _NS), warmup=int(samples.warmup),
            flags=tuple(s["flags"]), advice=tuple(s["advice"]))

    @classmethod
    def from_processes(cls, series: Sequence[tuple[Sequence[float], int, Optional[int]]]) -> "Stats":
        """From fresh processes: ``(per-call ns per round, calls per round, warm-up rounds)`` each.

        The median is the geometric mean of the processes' medians and its
        interval a t interval over them (k-1 df, :func:`benchctl._results.processes.cell_interval`):
        rounds within a process are not independent draws of what a fresh process measures.
        """
        if not series:
            raise ValueError("no process measured anything")
        per_process = [cls.from_rounds(ns, iterations, warmup) for ns, iterations, warmup in series]
        pooled = np.concatenate([np.asarray(ns, dtype=np.float64)[p.warmup:]
                                 for (ns, _, _), p in zip(series, per_process)])
        medians = [p.median for p in per_process]
        flags = sorted({f for p in per_process for f in p.flags})
        advice = [a for p in per_process for a in p.advice]
        if len(per_process) == 1:
            flags.append("one_process")
            advice.append("one process measured: the interval carries no process-to-process variation; "
                          "use repeat=3 or more")
            centre, (lo, hi) = medians[0], per_process[0].ci95
        else:
            interval = cell_interval(medians)
            centre, (lo, hi) = interval["value"], interval["ci"]
            spread = max(medians) / min(medians) - 1.0
            if spread > UNSTABLE_IQR_OVER_MEDIAN:
                flags.append("processes_differ")
                advice.append(f"the processes' medians differ by {spread:.0%}: fresh processes do not agree; "
                              "add repetitions and look for what differs between them (placement, allocator)")
        q1, q3 = np.percentile(pooled, [25, 75])
        return cls(
            min=float(pooled.min()) * _NS, max=float(pooled.max()) * _NS, mean=float(pooled.mean()) * _NS,
            median=centre, iqr=float(q3 - q1) * _NS, stddev=_stddev(pooled) * _NS,
            rounds=int(pooled.size), iterations=int(per_process[0].iterations), ci95=(lo, hi),
            warmup=sum(p.warmup for p in per_process), flags=tuple(flags), advice=tuple(advice),
            processes=tuple(per_process))


def _stddev(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1)) if x.size > 1 else 0.0
