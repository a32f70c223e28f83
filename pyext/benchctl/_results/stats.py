"""Statistics that say how sure a timing is.

* :class:`Samples`: per-iteration durations (and counters), warm-up kept but
  separated from the steady state, and a :meth:`Samples.summary` with robust
  statistics, a bootstrap CI of the median, and flags that say what to do.
* :func:`detect_warmup`: where a series reaches its steady state.
* :func:`bootstrap_median_ci`: seeded, vectorised percentile bootstrap.
* :func:`mann_whitney_u`: two-sided U test (normal approximation, tie and
  continuity corrections), vectorised over a batch of comparisons.
* :func:`compare`: ratio of medians with its CI, the U test's p-value and a
  plain verdict, for two sets of iterations measured in *one* process.

Between cells of a matrix, each cell measured in several fresh processes,
the process is the unit: :mod:`benchctl._results.processes`. numpy only: the
runtime needs no scipy.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from .. import _validate
from .wording import factor as _fmt_ratio

__all__ = ["CONFIDENCE", "BOOTSTRAP_RESAMPLES", "WARMUP_BAND_SIGMAS", "UNSTABLE_IQR_OVER_MEDIAN",
           "MIN_SAMPLES_FOR_CI", "ORDER_CI_FROM", "detect_warmup", "bootstrap_median_ci", "median_ci",
           "mann_whitney_u", "compare", "bimodality", "Samples"]

CONFIDENCE = 0.95
ALPHA = 1.0 - CONFIDENCE
BOOTSTRAP_RESAMPLES = 2000
# Resampled values held in memory at once; larger inputs are bootstrapped in chunks.
_BOOTSTRAP_CHUNK_ELEMENTS = 4_000_000
#: From this many values on, :func:`median_ci` gives the order-statistic interval in place of the bootstrap's,
#: which converges to it and cost 0.8 s at 40,000 values (a worker of a 10 us call).
ORDER_CI_FROM = 1000

# Warm-up: a sample is out of the steady band when it is further than this many
# robust standard deviations (1.4826 * MAD) from the steady median. At 3, a
# normal steady sample falls outside with probability 0.27%.
WARMUP_BAND_SIGMAS = 3.0
# Floor of the robust standard deviation, relative to the median, so that
# quantised or near-constant series do not turn every tick into an outlier.
WARMUP_MIN_RELATIVE_SIGMA = 1e-3
_MAD_TO_SIGMA = 1.4826
_MEAN_AD_TO_SIGMA = math.sqrt(math.pi / 2)  # 1.2533 for normal data

UNSTABLE_IQR_OVER_MEDIAN = 0.10
# A percentile bootstrap of the median needs about this many samples before
# its interval means anything (an order-statistic 95% interval needs 6 at the
# very least; the tests measure coverage from 10 on).
MIN_SAMPLES_FOR_CI = 10
# Bimodality (see _count_modes): the fewest samples worth testing, the share of
# samples a second cluster must hold, and how deep the valley between clusters
# must be, relative to the lower peak.
BIMODAL_MIN_SAMPLES = 20
BIMODAL_MIN_MASS = 0.10
BIMODAL_MAX_VALLEY = 0.5
_KDE_MAX_BINS = 1 << 16

ArrayLike = Union[Sequence[float], np.ndarray]

_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _durations(ns: Any, name: str = "ns") -> np.ndarray:
    arr = np.asarray(ns, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of durations, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: there is nothing to summarise")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds NaN or infinite values")
    if arr.min() < 0:
        raise ValueError(f"{name} holds negative durations")
    return arr


def detect_warmup(ns: ArrayLike) -> int:
    """Number of leading iterations before the series reaches its steady state.

    Rule: the steady state is described by the second half of the series:
    its median ``m`` and a deviation ``s``, the largest of 1.4826·MAD,
    1.2533·(mean absolute deviation from m) and 0.001·m (each estimates the
    standard deviation of normal noise; the second keeps ``s`` from
    collapsing on quantised or two-valued series, the third on constant
    ones). An iteration is *in band* when ``|x - m| <= 3·s``. The warm-up is
    the prefix that maximises (out-of-band count - in-band count), i.e. a
    CUSUM of the out-of-band indicator with reference value 1/2: the longest
    start in which out-of-band samples outnumber in-band ones. Properties
    this buys:

    * a stationary series gets 0 (or 1 when its very first sample happens to
      be an outlier, with probability ~0.3% for normal noise): isolated
      outliers later on never pay for the in-band samples before them;
    * a step (first k iterations slower or faster) gives k;
    * a decaying transient ends where it falls inside the noise band.

    A steady state with two well-separated clusters whose minority, by
    chance, crowds the first iterations can be called warm-up; the summary's
    ``bimodal`` flag then says so too. Series shorter than 4 report 0 (no
    steady reference to judge by). Samples are never dropped by this
    function; :class:`Samples` keeps them apart.
    """
    x = _durations(ns)
    n = x.size
    if n < 4:
        return 0
    ref = x[n // 2:]
    m = float(np.median(ref))
    dev = np.abs(ref - m)
    # MAD collapses to 0 when over half the samples share one value (quantised
    # or two-valued series); the mean absolute deviation does not.
    s = max(_MAD_TO_SIGMA * float(np.median(dev)), _MEAN_AD_TO_SIGMA * float(np.mean(dev)),
            WARMUP_MIN_RELATIVE_SIGMA * abs(m))
    if s == 0.0:  # the steady state is exactly 0 ns: anything else is out of band
        s = np.finfo(np.float64).tiny
    score = np.where(np.abs(x - m) > WARMUP_BAND_SIGMAS * s, 1, -1)
    cusum = np.concatenate(([0], np.cumsum(score)))
    return int(np.argmax(cusum))  # first maximum: ties keep the shorter warm-up


def _bootstrap_medians(x: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    n = x.size
    out = np.empty(resamples)
    rows = max(1, _BOOTSTRAP_CHUNK_ELEMENTS // n)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        out[start:stop] = np.median(x[rng.integers(0, n, size=(stop - start, n))], axis=1)
    return out


def _check_confidence(confidence: float) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 < confidence < 1.0:
        raise _validate.ArgumentError(f"confidence must be between 0 and 1, got {confidence!r}")


def _check_resamples(resamples: int, confidence: float) -> None:
    _validate.count("resamples", resamples, 100)
    _check_confidence(confidence)


def bootstrap_median_ci(x: ArrayLike, seed: int = 0, confidence: float = CONFIDENCE,
                        resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median of ``x``.

    ``resamples`` resamples of ``x`` with replacement, drawn all at once with
    ``numpy.random.default_rng(seed)``: the same input and seed give the same
    interval.
    """
    arr = _durations(x, "x")
    _check_resamples(resamples, confidence)
    medians = _bootstrap_medians(arr, np.random.default_rng(seed), resamples)
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(medians, [tail, 1.0 - tail])
    return float(lo), float(hi)


def median_ci(x: ArrayLike, seed: int = 0, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Confidence interval of the median of ``x``: :func:`bootstrap_median_ci` under :data:`ORDER_CI_FROM`
    values; from there on, the distribution-free interval between the order statistics whose ranks are
    n/2 -/+ z sqrt(n)/2 (the normal approximation of the Binomial(n, 1/2) count of values under the median,
    close at these n), which needs only a sort."""
    arr = _durations(x, "x")
    if arr.size < ORDER_CI_FROM:
        return bootstrap_median_ci(arr, seed=seed, confidence=confidence)
    _check_confidence(confidence)
    n, z = arr.size, NormalDist().inv_cdf(0.5 + confidence / 2)
    low = max(0, math.floor(n / 2 - z * math.sqrt(n) / 2) - 1)  # 0-based ranks
    high = min(n - 1, math.ceil(n / 2 + z * math.sqrt(n) / 2) - 1)
    ordered = np.partition(arr, (low, high))
    return float(ordered[low]), float(ordered[high])


def mann_whitney_u(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Mann-Whitney U test of ``a`` against ``b``.

    Returns ``(u, p)``: U of ``a`` and the two-sided p-value from the normal
    approximation with tie correction and continuity correction (scipy's
    ``mannwhitneyu(method="asymptotic")``). Both inputs may be 2-D: rows are
    independent comparisons (same row count), and ``u``, ``p`` have one entry
    per row. Identical pooled values (no variance) give p = 1.
    """
    a2 = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b2 = np.atleast_2d(np.asarray(b, dtype=np.float64))
    if a2.ndim != 2 or b2.ndim != 2 or a2.shape[0] != b2.shape[0]:
        raise ValueError("a and b must be 1-D samples or 2-D batches with the same number of rows")
    n1, n2 = a2.shape[1], b2.shape[1]
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    if not (np.all(np.isfinite(a2)) and np.all(np.isfinite(b2))):
        raise ValueError("samples hold NaN or infinite values")
    pooled = np.concatenate([a2, b2], axis=1)
    rows, total = pooled.shape
    order = np.argsort(pooled, axis=1, kind="stable")
    ordered = np.take_along_axis(pooled, order, axis=1)
    # Runs of equal values (ties) get the average of the ranks they span.
    starts = np.ones_like(ordered, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    run = np.cumsum(starts.ravel()) - 1                     # run id of every element
    run_len = np.bincount(run).astype(np.float64)
    run_first = np.flatnonzero(starts.ravel()) % total      # 0-based position of each run
    rank_sorted = (run_first + (run_len + 1.0) / 2.0)[run].reshape(rows, total)
    ranks = np.empty_like(rank_sorted)
    np.put_along_axis(ranks, order, rank_sorted, axis=1)
    u = ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2.0
    run_row = np.flatnonzero(starts.ravel()) // total
    ties = np.bincount(run_row, weights=run_len ** 3 - run_len, minlength=rows)
    var = n1 * n2 / 12.0 * ((total + 1) - ties / (total * (total - 1))) if total > 1 else np.zeros(rows)
    dev = np.abs(u - n1 * n2 / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, np.maximum(dev - 0.5, 0.0) / np.sqrt(np.where(var > 0, var, 1.0)), 0.0)
    p = np.minimum(1.0, _erfc(z / math.sqrt(2.0)))
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return u[0], p[0]
    return u, p



def _steady(x: Any, name: str) -> np.ndarray:
    return x.steady_ns if isinstance(x, Samples) else _durations(x, name)


def compare(a_ns: Any, b_ns: Any, seed: int = 0, labels: tuple[str, str] = ("A", "B"),
            confidence: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Compare two sets of durations (arrays, or :class:`Samples`: their steady part) measured in
    one process. The interval says nothing about another process: iterations of one process
    share its layout and placement (between processes, use :mod:`benchctl._results.processes`).

    Returns a dict:

    * ``ratio``: median(a) / median(b) (> 1: a is slower);
    * ``ci95``: percentile-bootstrap interval of that ratio (a and b resampled
      independently, seeded); ``ci_method`` is ``"iterations"``; None where a side has fewer than
      :data:`MIN_SAMPLES_FOR_CI` steady values (a bootstrap of one value is that value: an interval of
      no width that no data backs), and then ``significant`` is False and the verdict says so;
    * ``p_value``: two-sided Mann-Whitney U test (:func:`mann_whitney_u`);
    * ``significant``: p_value < 1 - confidence;
    * ``verdict``: a sentence. When the U test finds a difference but the
      ratio's CI still contains 1, it says the distributions differ while
      the medians are not resolved apart, instead of naming a winner;
    * ``median_a``, ``median_b``, ``n_a``, ``n_b``, ``labels``.
    """
    a = _steady(a_ns, "a_ns")
    b = _steady(b_ns, "b_ns")
    _check_resamples(resamples, confidence)
    la, lb = labels
    med_a, med_b = float(np.median(a)), float(np.median(b))
    if med_a <= 0 or med_b <= 0:
        raise ValueError(
            f"median durations must be > 0 to form a ratio (got {med_a} and {med_b} ns): "
            "the work is below the clock's resolution; time more work per iteration")
    p = float(mann_whitney_u(a, b)[1])
    ratio = med_a / med_b
    few = min(a.size, b.size) < MIN_SAMPLES_FOR_CI
    if few:
        ci, significant = None, False
        verdict = (f"too few steady iterations for an interval ({la}: {a.size}, {lb}: {b.size}; a confidence "
                   f"interval of a median needs at least {MIN_SAMPLES_FOR_CI} each): {la}/{lb} = "
                   f"{_fmt_ratio(ratio)} is not judged; time more iterations")
    else:
        rng = np.random.default_rng(seed)
        ratios = _bootstrap_medians(a, rng, resamples) / _bootstrap_medians(b, rng, resamples)
        tail = (1.0 - confidence) / 2.0
        ci = [float(v) for v in np.quantile(ratios, [tail, 1.0 - tail])]
        significant = p < 1.0 - confidence
        verdict = _sentence(labels, ratio, (ci[0], ci[1]), p, significant, confidence)
    return {
        "ratio": ratio,
        "ci95": ci,
        "ci_method": "iterations",
        "p_value": p,
        "significant": bool(significant),
        "verdict": verdict,
        "median_a": med_a,
        "median_b": med_b,
        "n_a": int(a.size),
        "n_b": int(b.size),
        "labels": [la, lb],
    }


def _sentence(labels: tuple[str, str], ratio: float, ci: tuple[float, float], p: float, significant: bool,
              confidence: float) -> str:
    """compare()'s plain verdict; a U test that finds a difference the ratio's CI does not resolve
    says so instead of naming a winner."""
    la, lb = labels
    lo, hi = ci
    pct = f"{confidence * 100:g}%"
    test = f"Mann-Whitney p = {p:.2g}"
    if not significant:
        return (f"no significant difference between {la} and {lb} "
                f"({la}/{lb} = {_fmt_ratio(ratio)}, {pct} CI [{_fmt_ratio(lo)}, {_fmt_ratio(hi)}], {test})")
    if lo <= 1.0 <= hi:
        return (f"{la} and {lb} differ in distribution ({test}) but not clearly in median: {la}/{lb} = "
                f"{_fmt_ratio(ratio)}, {pct} CI [{_fmt_ratio(lo)}, {_fmt_ratio(hi)}]; look at spread and tails")
    if ratio > 1.0:
        return (f"{la} is {_fmt_ratio(ratio)}× slower than {lb}, {pct} CI "
                f"[{_fmt_ratio(lo)}, {_fmt_ratio(hi)}] ({test})")
    return (f"{la} is {_fmt_ratio(1 / ratio)}× faster than {lb}, {pct} CI "
            f"[{_fmt_ratio(1 / hi)}, {_fmt_ratio(1 / lo)}] ({test})")


def _count_modes(x: np.ndarray) -> list[tuple[float, float]]:
    """Clusters of a sample, as (location, share of samples), largest first.

    A Gaussian kernel density with Silverman's rule-of-thumb bandwidth
    (robust scale: min of standard deviation and IQR/1.349, never below the
    data's quantum) is evaluated on a grid by binning and convolution. A peak
    counts as a separate cluster when the valley between it and its
    neighbour is at most ``BIMODAL_MAX_VALLEY`` times the lower peak; the
    samples are split at the valleys to give each cluster its share.
    """
    n = x.size
    sd = float(np.std(x))
    q1, q3 = np.percentile(x, [25, 75])
    scales = [v for v in (sd, (q3 - q1) / 1.349) if v > 0]
    if not scales:
        return [(float(x[0]), 1.0)]
    uniq = np.unique(x)
    quantum = float(np.min(np.diff(uniq))) if uniq.size > 1 else 0.0
    h = max(0.9 * min(scales) * n ** -0.2, quantum)
    lo, hi = float(x.min()) - 3 * h, float(x.max()) + 3 * h
    # Bins a quarter bandwidth wide (capped): the kernel spans +-4 h = 33 bins.
    bins = int(min(_KDE_MAX_BINS, max(64, math.ceil((hi - lo) / (h / 4)))))
    counts, edges = np.histogram(x, bins=bins, range=(lo, hi))
    step = edges[1] - edges[0]
    half = min(int(math.ceil(4 * h / step)), (bins - 1) // 2)
    kernel = np.exp(-0.5 * (np.arange(-half, half + 1) * step / h) ** 2)
    density = np.convolve(counts, kernel, mode="same")
    centres = (edges[:-1] + edges[1:]) / 2
    # Plateau-safe local maxima: strictly above the left neighbour, not below the right.
    d = density
    peaks = [i for i in range(1, d.size - 1) if d[i] > d[i - 1] and d[i] >= d[i + 1] and d[i] > 0]
    if not peaks:
        return [(float(np.median(x)), 1.0)]
    # Merge neighbouring peaks whose valley is shallow.
    clusters = [[peaks[0]]]
    valleys: list[int] = []
    for p in peaks[1:]:
        prev = clusters[-1]
        top_prev = max(prev, key=lambda i: d[i])
        v = prev[-1] + int(np.argmin(d[prev[-1]:p + 1]))
        if d[v] <= BIMODAL_MAX_VALLEY * min(d[top_prev], d[p]):
            clusters.append([p])
            valleys.append(v)
        else:
            prev.append(p)
    cuts = [centres[v] for v in valleys]
    side = np.searchsorted(cuts, x)
    out = []
    for k, members in enumerate(clusters):
        top = max(members, key=lambda i: d[i])
        out.append((float(centres[top]), float(np.mean(side == k))))
    return sorted(out, key=lambda c: -c[1])


def bimodality(x: ArrayLike) -> Optional[list[tuple[float, float]]]:
    """The two largest clusters [(location, share), ...] when ``x`` has at least
    two holding ``BIMODAL_MIN_MASS`` of the samples each, else None."""
    arr = _durations(x, "x")
    if arr.size < BIMODAL_MIN_SAMPLES:
        return None
    big = [c for c in _count_modes(arr) if c[1] >= BIMODAL_MIN_MASS]
    return sorted(big[:2]) if len(big) >= 2 else None


def _as_counter_arrays(counters: Any, n: int) -> dict[str, np.ndarray]:
    """Per-iteration counters as name -> float array (NaN where unavailable)."""
    if counters is None:
        return {}
    if isinstance(counters, Mapping):
        items = counters.items()
    else:
        rows = list(counters)
        if len(rows) != n:
            raise ValueError(f"counters has {len(rows)} iterations but ns has {n}")
        names: list[str] = []
        for row in rows:
            if not isinstance(row, Mapping):
                raise TypeError("counters must be a dict of per-iteration sequences or a list of dicts")
            names.extend(k for k in row if k not in names)
        items = ((k, [row.get(k) for row in rows]) for k in names)
    out = {}
    for name, values in items:
        values = list(values)
        if len(values) != n:
            raise ValueError(f"counter {name!r} has {len(values)} values but ns has {n}")
        out[str(name)] = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    return out


class Samples:
    """Per-iteration durations (ns, and ticks when known) and counters.

    ``ns``: durations in nanoseconds, in iteration order. ``counters``: per
    iteration counter deltas, either ``{name: [v0, v1, ...]}`` or a list of
    ``{name: v}`` dicts (None = unavailable). ``warmup``: number of leading
    iterations to treat as warm-up; None detects it (:func:`detect_warmup`).
    ``ticks``: the raw tick durations behind ``ns``, if any.

    Warm-up iterations are kept (``warmup_ns``, ``warmup_counters``) but left
    out of :attr:`steady_ns` and of the summary statistics.
    """

    def __init__(self, ns: ArrayLike, counters: Any = None, warmup: Optional[int] = None,
                 ticks: Optional[ArrayLike] = None) -> None:
        self.ns = _durations(ns).copy()
        self.ns.setflags(write=False)
        n = self.ns.size
        self.ticks = None
        if ticks is not None:
            t = np.asarray(ticks)
            if t.shape != self.ns.shape or t.dtype.kind not in "iu":
                raise ValueError("ticks must be integers, one per iteration of ns")
            self.ticks = t.astype(np.int64)
        self.counters = _as_counter_arrays(counters, n)
        if warmup is None:
            self.warmup = detect_warmup(self.ns)
            self.warmup_detected = True
        else:
            warmup = _validate.count("warmup", warmup, 0)
            if warmup >= n:
                raise _validate.ArgumentError(f"warmup must be in [0, {n - 1}] to leave a steady sample; got {warmup}")
            self.warmup = warmup
            self.warmup_detected = False

    @classmethod
    def from_ticks(cls, ticks: ArrayLike, counters: Any = None, warmup: Optional[int] = None) -> "Samples":
        """Samples from tick durations, converted with :func:`benchctl.clock.to_ns`."""
        from .. import clock
        t = np.asarray(ticks)
        return cls(clock.to_ns(t), counters=counters, warmup=warmup, ticks=t)

    def __len__(self) -> int:
        return self.ns.size

    @property
    def steady_ns(self) -> np.ndarray:
        return self.ns[self.warmup:]

    @property
    def warmup_ns(self) -> np.ndarray:
        return self.ns[:self.warmup]

    @property
    def steady_counters(self) -> dict[str, np.ndarray]:
        return {k: v[self.warmup:] for k, v in self.counters.items()}

    @property
    def warmup_counters(self) -> dict[str, np.ndarray]:
        return {k: v[:self.warmup] for k, v in self.counters.items()}

    def summary(self, seed: int = 0, interval: bool = True) -> dict[str, Any]:
        """Statistics of the steady iterations (ns), JSON-serialisable.

        Keys: n, median, mean, min, iqr, mad, ci95 [lo, hi] (the median's
        interval, :func:`median_ci` with ``seed``; None with ``interval=False``,
        for a caller that needs none), iqr_over_median (None when the median is 0), flags,
        advice (one sentence per flag), warmup (iterations set apart),
        warmup_detected, n_total, unit, counters ({name: {median, mean}} per
        iteration, None where never available).
        """
        x = self.steady_ns
        median = float(np.median(x))
        q1, q3 = (float(v) for v in np.percentile(x, [25, 75]))
        iqr = q3 - q1
        ci = list(median_ci(x, seed=seed)) if interval else None
        iqr_over_median = iqr / median if median > 0 else None
        flags, advice = self._flags(iqr_over_median)
        return {
            "n": int(x.size),
            "median": median,
            "mean": float(np.mean(x)),
            "min": float(np.min(x)),
            "iqr": iqr,
            "mad": float(np.median(np.abs(x - median))),
            "ci95": ci,
            "iqr_over_median": iqr_over_median,
            "flags": flags,
            "advice": advice,
            "warmup": self.warmup,
            "warmup_detected": self.warmup_detected,
            "n_total": len(self),
            "unit": "ns",
            "counters": self._counter_summary(),
        }

    def _flags(self, iqr_over_median: float | None) -> tuple[list[str], list[str]]:
        """(flags, one sentence of advice per flag) for the steady iterations."""
        x = self.steady_ns
        n = int(x.size)
        flags: list[str] = []
        advice: list[str] = []
        if self.warmup > len(self) // 2:
            flags.append("no_steady_state")
            advice.append(
                f"warm-up took {self.warmup} of {len(self)} iterations: the series may still be "
                "drifting; run more iterations (or more warm-up) and check again")
        if n < MIN_SAMPLES_FOR_CI:
            flags.append("few_samples")
            advice.append(
                f"only {n} steady iterations: a confidence interval of the median needs at least "
                f"{MIN_SAMPLES_FOR_CI}; run more iterations")
        if iqr_over_median is not None and iqr_over_median > UNSTABLE_IQR_OVER_MEDIAN:
            flags.append("unstable")
            advice.append(
                f"iterations vary a lot (IQR is {iqr_over_median:.0%} of the median): quiet the "
                "machine (see `python -m benchctl doctor`), pin threads, and time more work per iteration")
        modes = bimodality(x)
        if modes:
            (m1, s1), (m2, s2) = modes
            flags.append("bimodal")
            advice.append(
                f"iterations fall into two groups (around {m1:.4g} ns, {s1:.0%}, and {m2:.4g} ns, "
                f"{s2:.0%}): something alternates (thread placement, frequency, allocator, GC); "
                "the counters per iteration may show what, and the median hides it")
        return flags, advice

    def _counter_summary(self) -> dict[str, dict | None]:
        """Per counter, median and mean per steady iteration (None where never available)."""
        out = {}
        for name, values in self.steady_counters.items():
            ok = values[~np.isnan(values)]
            out[name] = None if ok.size == 0 else {"median": float(np.median(ok)), "mean": float(np.mean(ok))}
        return out

    def __repr__(self) -> str:
        return f"Samples(n={len(self)}, warmup={self.warmup}, median={np.median(self.steady_ns):.4g} ns)"
