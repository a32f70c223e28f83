"""Student's t distribution (CDF and quantiles), for intervals over a few processes, and F's tail.

With 3 to 10 fresh processes per cell the normal quantile (1.96) would make
intervals far too narrow; t with k-1 (or Welch's) degrees of freedom is what
keeps a 95% interval at 95%. numpy only: the runtime needs no scipy. The CDF
comes from the regularized incomplete beta function, evaluated with Lentz's
continued fraction; quantiles invert it by bisection. F's upper tail (:func:`f_sf`), from the
same function, is the p value of Levene's test that decides whether a phase's cells may share one
process variance (:func:`benchctl._results.processes.pooled_spread`).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from .. import _validate

__all__ = ["t_cdf", "t_quantile", "f_sf"]

_CF_MAX_TERMS = 300
_CF_EPS = 1e-15
_TINY = 1e-300
# Above this many degrees of freedom t and the normal distribution agree to ~1e-7.
_NORMAL_DF = 1e7


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz method)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _CF_MAX_TERMS + 1):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                          -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _CF_EPS:
            break
    return h


def _regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    # The fraction converges fast only on this side of the mean; use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def _check_df(df) -> float:
    if isinstance(df, bool) or not isinstance(df, (int, float)) or not df > 0:
        raise _validate.ArgumentError(f"degrees of freedom must be a number > 0, got {df!r}")
    return float(df)


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (``df`` may be fractional)."""
    df = _check_df(df)
    if df > _NORMAL_DF:
        return NormalDist().cdf(t)
    tail = 0.5 * _regularized_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``df`` may be fractional)."""
    df = _check_df(df)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p < 1.0:
        raise _validate.ArgumentError(f"p must be a probability strictly between 0 and 1, got {p!r}")
    if df > _NORMAL_DF:
        return NormalDist().inv_cdf(p)
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:  # t's tails are heavy at small df: widen until the quantile is inside
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def f_sf(f: float, df1: float, df2: float) -> float:
    """P(F > f) for the F distribution with ``df1`` and ``df2`` degrees of freedom."""
    df1, df2 = _check_df(df1), _check_df(df2)
    if f <= 0.0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return _regularized_beta(df2 / 2.0, df1 / 2.0, df2 / (df2 + df1 * f))
