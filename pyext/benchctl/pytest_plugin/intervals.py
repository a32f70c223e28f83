"""Student-t intervals on logarithms: for rounds of an interleaved comparison and for fresh processes.

Times are compared as ratios, so they are averaged as logarithms: the centre
is a geometric mean and the interval is symmetric in log space. With k
values the interval uses k-1 degrees of freedom (Welch's for two groups),
which keeps a 95% interval honest with 3 to 20 values, where the normal
quantile would be far too narrow.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Sequence

import numpy as np

from ..results.stats import CONFIDENCE
from ..results.tdist import t_cdf, t_quantile

__all__ = ["LogInterval", "log_mean_interval", "welch_log_ratio"]


class LogInterval(NamedTuple):
    """A geometric mean (or ratio) with its interval, and the two-sided p-value of "it is 1"
    (None where one value gives no spread to test with)."""

    centre: float
    lo: float
    hi: float
    p_value: Optional[float]


def _logs(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"{name}: needs a non-empty 1-D sequence")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"{name}: every value must be a finite number > 0 to take its logarithm")
    return np.log(x)


def _interval(mean: float, se: float, df: float, confidence: float) -> LogInterval:
    if se == 0.0:  # identical values: no spread to build an interval from
        return LogInterval(math.exp(mean), math.exp(mean), math.exp(mean), 1.0 if mean == 0 else 0.0)
    q = t_quantile(0.5 + confidence / 2.0, df)
    p = 2.0 * (1.0 - t_cdf(abs(mean) / se, df))
    return LogInterval(math.exp(mean), math.exp(mean - q * se), math.exp(mean + q * se), p)


def log_mean_interval(values: Sequence[float], confidence: float = CONFIDENCE,
                      name: str = "values") -> LogInterval:
    """Geometric mean of ``values`` with its t interval (k-1 df); one value gives no interval
    (lo = hi = the value, p None)."""
    logs = _logs(values, name)
    mean = float(np.mean(logs))
    if logs.size < 2:
        return LogInterval(math.exp(mean), math.exp(mean), math.exp(mean), None)
    se = float(np.std(logs, ddof=1)) / math.sqrt(logs.size)
    return _interval(mean, se, logs.size - 1, confidence)


def welch_log_ratio(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> LogInterval:
    """Ratio of the geometric means of ``a`` and ``b`` with Welch's t interval; both need 2 values or more."""
    la, lb = _logs(a, "a"), _logs(b, "b")
    if la.size < 2 or lb.size < 2:
        raise ValueError("welch_log_ratio needs two or more values on each side")
    va, vb = float(np.var(la, ddof=1)) / la.size, float(np.var(lb, ddof=1)) / lb.size
    se = math.sqrt(va + vb)
    mean = float(np.mean(la) - np.mean(lb))
    if se == 0.0:
        return _interval(mean, 0.0, 1.0, confidence)
    df = (va + vb) ** 2 / (va ** 2 / (la.size - 1) + vb ** 2 / (lb.size - 1)) if va + vb > 0 else 1.0
    return _interval(mean, se, max(df, 1.0), confidence)
