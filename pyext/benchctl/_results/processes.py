"""The process as the unit of every comparison between cells.

A cell's iterations inside one fresh process share that process's address
layout, page placement and core, so they say how long *that process* took;
the medians of the same cell differ between processes far more than
iterations do within one (up to ±25% here). So each process gives one value,
the median of its steady iterations, and a cell is described by the values
of its processes:

* :func:`cell_interval`: the cell's geometric mean over processes and a
  Student t interval of it (k-1 degrees of freedom, on log values);
* :func:`compare`: the ratio of two cells (geometric means) with a Welch t
  interval on log values, which stays valid at 3 processes a side (the
  A/A control's two arms, one cell, share a pooled variance); or, where
  :func:`pooled_spread` finds the phase's cells equally noisy, a Student t
  interval with the process variance pooled over all of them;
* :func:`judge`: whether the interval shows an effect beyond a no-effect
  band, lies inside it, or is unresolved;
* :func:`band_from_control`: that band from the A/A control's arms (how far
  identical processes disagree), and :func:`resolvable` the smallest
  difference a run then resolves;
* :func:`processes_to_resolve`: about how many processes per cell an
  unresolved comparison would need.

With one process on either side there is no estimate of how far processes
disagree, and no interval is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import _validate
from .comparison import CONFIDENCE, FLOOR, MAX_NO_EFFECT_BAND, Comparison, Outcome, outcome_of
from .tdist import f_sf, t_cdf, t_quantile

__all__ = ["CONFIDENCE", "FLOOR", "MAX_NO_EFFECT_BAND", "MAX_ESTIMATE", "HOMOGENEITY_ALPHA", "PooledSpread",
           "pooled_spread", "cell_interval", "compare", "paired_sd", "compare_paired", "band_from_paired_control",
           "judge", "band_from_control", "band_from_interval", "resolvable", "processes_to_resolve"]

#: Beyond this many processes per cell the estimate of how many would be needed is not worth giving.
MAX_ESTIMATE = 200
#: The cells of a phase share one process variance unless Levene's test rejects equal variances at this level.
HOMOGENEITY_ALPHA = 0.05


def _logs(values: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise _validate.ArgumentError(f"{name} must be a non-empty list of per-process values")
    if not np.all(np.isfinite(arr)) or arr.min() <= 0:
        raise _validate.ArgumentError(
            f"per-process medians must be finite and > 0 ({name}: {arr.tolist()}): a median of 0 ns means "
            "the work is below the clock's resolution; time more work per iteration")
    return np.log(arr)


def _pooled_variance(logs: Sequence[np.ndarray]) -> tuple[float, int]:
    """(the variance of log values pooled over groups, each about its own mean; its degrees of freedom)."""
    df = sum(g.size for g in logs) - len(logs)
    return sum(float(((g - g.mean()) ** 2).sum()) for g in logs) / df, df


@dataclass(frozen=True)
class PooledSpread:
    """How far the processes of one cell disagree, pooled over the cells of a phase (log values).

    At 3-4 processes a cell, each cell's own variance is a poor estimate (2-3 degrees of
    freedom) and Welch's interval pays for it twice: a wide variance and a t quantile of 3-4.
    Where the cells are equally noisy (Levene's test does not reject it) one variance pooled
    over all of them is the better estimate, with the degrees of freedom of all their processes.
    """

    log_var: float
    df: int
    cells: int
    levene_p: float

    @property
    def holds(self) -> bool:
        """Whether the comparisons of the phase may use this variance: two cells or more, equally noisy
        (False where the test could not be made: ``levene_p`` is NaN)."""
        return self.cells >= 2 and self.levene_p >= HOMOGENEITY_ALPHA

    def describe(self) -> str:
        return (f"process variance pooled over {self.cells} cells ({self.df} degrees of freedom; "
                f"Levene's test of equal variances p = {self.levene_p:.2f})")


def pooled_spread(groups: Sequence[Sequence[float]]) -> PooledSpread | None:
    """The variance of log per-process values pooled over ``groups`` (one per cell, or control arm),
    with Levene's test (absolute deviations from each group's mean) of whether they share it.
    Groups of one process carry no variance and are left out, as are those :func:`compare` refuses
    (a value that is not finite, or not above 0); None when no group is left. With a group of two the
    test says nothing (p is NaN) and the variance does not :attr:`~PooledSpread.holds`."""
    usable = (np.asarray(g, dtype=np.float64) for g in groups if len(g) >= 2)
    logs = [np.log(g) for g in usable if g.ndim == 1 and np.all(np.isfinite(g)) and g.min() > 0]
    if not logs:
        return None
    k = len(logs)
    log_var, df = _pooled_variance(logs)
    # Levene's test needs three processes a cell: two lie equally far from their mean, whatever the spread.
    if k < 2 or min(g.size for g in logs) < 3:
        return PooledSpread(log_var, df, k, math.nan)
    dev = [np.abs(g - g.mean()) for g in logs]
    grand = float(np.concatenate(dev).mean())
    between = sum(d.size * (float(d.mean()) - grand) ** 2 for d in dev) / (k - 1)
    within = sum(float(((d - d.mean()) ** 2).sum()) for d in dev) / df
    if within == 0.0:  # every group's deviations equal within it: equal spreads unless the groups' differ
        p = 1.0 if between == 0.0 else 0.0
    else:
        p = f_sf(between / within, k - 1, df)
    return PooledSpread(log_var, df, k, p)


def cell_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    """One cell from its per-process values: ``{"k", "value", "ci", "log_sd"}``.

    ``value`` is the geometric mean of the process values, ``ci`` its t
    interval (None with one process), ``log_sd`` the standard deviation of
    the log values (None with one process): how far processes disagree.
    """
    logs = _logs(values, "values")
    k = logs.size
    value = float(np.exp(logs.mean()))
    if k < 2:
        return {"k": 1, "value": value, "ci": None, "log_sd": None}
    sd = float(logs.std(ddof=1))
    half = t_quantile(0.5 + confidence / 2, k - 1) * sd / math.sqrt(k)
    return {"k": k, "value": value, "ci": [float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))],
            "log_sd": sd}


def _welch(la: np.ndarray, lb: np.ndarray) -> tuple[float, float]:
    """(standard error of the difference of means, Welch-Satterthwaite degrees of freedom)."""
    va, vb = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size
    se = math.sqrt(va + vb)
    if se == 0.0:  # identical values on both sides: the pooled df stands
        return 0.0, float(la.size + lb.size - 2)
    df = (va + vb) ** 2 / (va ** 2 / (la.size - 1) + vb ** 2 / (lb.size - 1))
    return se, df


def _pooled(la: np.ndarray, lb: np.ndarray) -> tuple[float, float]:
    """(standard error of the difference of means, degrees of freedom) with one variance for both sides."""
    var, df = _pooled_variance([la, lb])
    return math.sqrt(var * (1 / la.size + 1 / lb.size)), float(df)


def compare(a_values: Sequence[float], b_values: Sequence[float], confidence: float = CONFIDENCE,
            same_cell: bool = False, band: float = FLOOR, pooled: PooledSpread | None = None) -> Comparison:
    """Cell a against cell b from their per-process values (ns): a ratio > 1 means a is slower.

    ``ratio`` is the ratio of geometric means, ``ci95`` its Welch t interval
    (None when a side has one process), ``p_value`` the two-sided Welch t test
    of no difference; the comparison comes judged against ±``band``.
    ``same_cell``: a and b are the same cell run in the same rounds (the A/A
    control's arms), so their processes share one variance by construction;
    the pooled Student t interval (k_a + k_b - 2 degrees of freedom) is then
    exact, where Welch's, at 3 and 2 processes, can fall to about one degree
    of freedom and an interval many times wider than the noise.
    ``pooled``: the phase's process variance (:func:`pooled_spread`); where it
    :attr:`~PooledSpread.holds`, two different cells get the Student t interval
    with that variance and its degrees of freedom instead of Welch's.
    """
    la, lb = _logs(a_values, "a_values"), _logs(b_values, "b_values")
    d = float(la.mean() - lb.mean())
    common = dict(ratio=math.exp(d), k_a=int(la.size), k_b=int(lb.size), median_a=float(np.exp(la.mean())),
                  median_b=float(np.exp(lb.mean())), confidence=confidence)
    if la.size < 2 or lb.size < 2:
        return Comparison(ci95=None, method="one process on a side: how far processes disagree is unknown",
                          **common).judged(band)
    if same_cell:
        se, df = _pooled(la, lb)
        how = "pooled Student t interval (the same cell on both sides)"
    elif pooled is not None and pooled.holds:
        se, df = math.sqrt(pooled.log_var * (1 / la.size + 1 / lb.size)), float(pooled.df)
        how = f"Student t interval with the {pooled.describe()}"
    else:
        se, df = _welch(la, lb)
        how = "Welch t interval"
    half = t_quantile(0.5 + confidence / 2, df) * se
    p = 2.0 * (1.0 - t_cdf(abs(d) / se, df)) if se > 0 else (0.0 if d else 1.0)
    return Comparison(ci95=(math.exp(d - half), math.exp(d + half)), p_value=p, df=df, log_se=se,
                      method=f"{how} on the log of per-process medians", **common).judged(band)


def paired_sd(control: Comparison | None) -> float | None:
    """The per-process standard deviation of log ratios behind a paired comparison (the paired A/A control's:
    how far one process's ratio between identical arms strays), None without an interval."""
    if control is None or control.log_se is None:
        return None
    return control.log_se * math.sqrt(control.k_a)


def compare_paired(a_values: Sequence[float], b_values: Sequence[float], confidence: float = CONFIDENCE,
                   band: float = FLOOR, control: Comparison | None = None) -> Comparison:
    """Cell a against cell b from paired processes (:mod:`benchctl._run.paired`): ``a_values[i]`` and
    ``b_values[i]`` are one process's steady medians of each, taken inside it, so the machine's state while it
    ran cancels in their ratio. ``ratio`` is the geometric mean of the per-process ratios, ``ci95`` its
    Student t interval over processes (k-1 degrees of freedom, on log ratios; None with one process), judged
    against ±``band``; ``k_a`` = ``k_b`` = the processes, ``median_a``/``median_b`` each side's geometric mean.

    ``control``: the run's paired A/A control (:func:`paired_sd`); the ratios' spread is taken as at least its
    spread. A few processes can agree by chance far more closely than the machine lets identical arms agree
    (two ratios of 1.00045 and 1.00046 gave [1.00045, 1.00046] beside a control that strayed by 2%): an
    interval narrower than the noise the run measured between identical arms would claim what it did not see."""
    la, lb = _logs(a_values, "a_values"), _logs(b_values, "b_values")
    if la.size != lb.size:
        raise _validate.ArgumentError(f"paired values need one a and one b per process, got {la.size} and {lb.size}")
    logs = la - lb
    k, d = int(logs.size), float(logs.mean())
    common = dict(ratio=math.exp(d), k_a=k, k_b=k, median_a=float(np.exp(la.mean())),
                  median_b=float(np.exp(lb.mean())), confidence=confidence)
    if k < 2:
        return Comparison(ci95=None, method="one paired process: how far processes disagree is unknown",
                          **common).judged(band)
    own, floor = float(logs.std(ddof=1)), paired_sd(control)
    how = ("paired: Student t interval on the log of per-process ratios, each taken inside one process whose "
           "iterations alternated between both cells")
    sd = own
    if floor is not None and floor > own:
        sd = floor
        how += f"; their spread ({own:.3g}) taken as the paired A/A control's ({floor:.3g}), the larger"
    se, df = sd / math.sqrt(k), float(k - 1)
    half = t_quantile(0.5 + confidence / 2, df) * se
    p = 2.0 * (1.0 - t_cdf(abs(d) / se, df)) if se > 0 else (0.0 if d else 1.0)
    return Comparison(ci95=(math.exp(d - half), math.exp(d + half)), p_value=p, df=df, log_se=se,
                      method=how, **common).judged(band)


def band_from_paired_control(control: Comparison | None) -> float:
    """The no-effect band of paired comparisons, from the paired A/A control (the same schedule with nothing
    switched): the 5% floor, or one standard deviation of its per-process log ratios when wider, as
    :func:`band_from_control` does for processes."""
    sd = paired_sd(control)
    return FLOOR if sd is None else max(FLOOR, math.expm1(sd))


def judge(cmp: Comparison, band: float = FLOOR) -> Outcome:
    """Outcome of a comparison against the no-effect band ±``band`` (a share, e.g. 0.05).

    ``effect``: the interval lies wholly outside the band; ``no_effect``: wholly
    inside it, and the band is at most :data:`MAX_NO_EFFECT_BAND`;
    ``unresolved``: otherwise; ``one_process``: no interval.
    """
    return outcome_of(cmp.ci95, band)


def _process_sd(cmp: Comparison) -> float:
    """The per-process standard deviation (of log values) behind a comparison's standard error,
    as if both sides had it: exact for the pooled interval of the A/A control's arms."""
    return cmp.log_se / math.sqrt(1 / cmp.k_a + 1 / cmp.k_b)


def band_from_control(control: Comparison | None) -> float:
    """The no-effect band a run supports, from its A/A control (the comparison of the two arms):
    the 5% floor, or wider when identical processes disagree more: one standard deviation of
    the arms' process values (pooled), as a share.

    A difference within that band is smaller than how far one process of a cell strays from
    another of the same cell, and is not called whatever its interval says. The sampling
    error of each comparison is its own interval's business: the band is not a second
    interval (the A/A interval's reach, 2-3 standard deviations at 3 processes an arm, counted
    that error twice and left a 1.5x difference unresolved at 3 processes)."""
    if control is None or control.log_se is None:
        return FLOOR
    return max(FLOOR, math.expm1(_process_sd(control)))


def band_from_interval(cmp: Comparison | None) -> float:
    """The 5% floor, or the largest ratio ``cmp``'s interval allows (as a share) when wider: the
    band for a shift of the machine itself, where the whole interval may be moved by it."""
    if cmp is None or cmp.ci95 is None:
        return FLOOR
    lo, hi = cmp.ci95
    return max(FLOOR, hi - 1.0, 1.0 / lo - 1.0)


def resolvable(control: Comparison | None, band: float, confidence: float = CONFIDENCE) -> float | None:
    """About the smallest difference (a share) this run resolves between two cells with the control's
    arms' process counts, whose processes disagree as the arms' do: the band plus the half-width
    of their interval. None without a control interval."""
    if control is None or control.log_se is None:
        return None
    half = t_quantile(0.5 + confidence / 2, control.k_a + control.k_b - 2) * control.log_se
    return math.expm1(math.log1p(band) + half)


def processes_to_resolve(cmp: Comparison, band: float, confidence: float = CONFIDENCE) -> int | None:
    """About how many processes per cell (both cells alike) would resolve ``cmp``.

    Assumes the observed difference and the observed disagreement between
    processes stay as they are. None when no estimate exists (one process a
    side, or a difference right on the band's edge, which no count resolves);
    more than :data:`MAX_ESTIMATE` when even that many would not do.
    """
    if cmp.log_se is None:
        return None
    d = abs(math.log(cmp.ratio))
    margin = abs(d - math.log1p(band))
    k_a, k_b = cmp.k_a, cmp.k_b
    sd = _process_sd(cmp)
    if margin <= 1e-12:  # on the edge, to rounding
        return None
    for k in range(max(k_a, k_b) + 1, MAX_ESTIMATE + 1):
        if t_quantile(0.5 + confidence / 2, 2 * k - 2) * sd * math.sqrt(2 / k) < margin:
            return k
    return MAX_ESTIMATE + 1
