"""Statistics checked on synthetic data whose answers are known.

Rates estimated from T seeded trials are compared with their nominal value
within a binomial band of 3.5 standard errors (sqrt(p(1-p)/T)): a correct
method fails such a check with probability < 0.05%, and the seeds make every
run of these tests the same run.
"""

import json
import math

import numpy as np
import pytest


from benchctl._results import stats
from benchctl._results.stats import (MIN_SAMPLES_FOR_CI, Samples, bimodality,
                            bootstrap_median_ci, compare, detect_warmup, mann_whitney_u)

Z_BAND = 3.5


def band(p, trials):
    half = Z_BAND * math.sqrt(p * (1 - p) / trials)
    return p - half, p + half


# ---- warm-up -------------------------------------------------------------

def test_stationary_series_has_no_warmup():
    found = [detect_warmup(np.random.default_rng(s).normal(1000, 10, 200)) for s in range(200)]
    skewed = [detect_warmup(1000 * np.random.default_rng(s).lognormal(0, 0.5, 200)) for s in range(200)]
    # Only a first sample that is itself an outlier may be called warm-up.
    assert np.mean(found) < 0.05 and max(found) <= 2
    assert np.mean(skewed) < 0.2 and max(skewed) <= 5


@pytest.mark.parametrize("factor", [1.5, 0.7, 1.05])
def test_step_warmup_is_found_at_the_break(factor):
    for seed in range(20):
        x = np.random.default_rng(seed).normal(1000, 10, 200)
        x[:20] *= factor  # 1.05: 50 ns = 5 sigma away, still a clear break
        assert abs(detect_warmup(x) - 20) <= 2, seed


def test_decaying_warmup_ends_where_it_enters_the_noise_band():
    i = np.arange(200)
    # 500 * exp(-i/5) falls below the 3-sigma band (30 ns) at i = 5 ln(500/30) = 14.07.
    expected = 5 * math.log(500 / 30)
    found = [detect_warmup(np.random.default_rng(s).normal(1000, 10, 200) + 500 * np.exp(-i / 5))
             for s in range(50)]
    assert abs(np.median(found) - expected) <= 1.5
    assert all(abs(f - expected) <= 5 for f in found)


def test_one_slow_first_call_is_warmup_and_later_outliers_are_not():
    x = np.random.default_rng(3).normal(1000, 10, 100)
    x[0] = 50_000
    x[[30, 31, 60]] = 5_000  # interference mid-run: kept in the steady state
    assert detect_warmup(x) == 1


@pytest.mark.parametrize("share", [0.5, 0.6])
def test_two_valued_steady_series_has_no_warmup(share):
    # Over half the samples on one value: MAD is 0, the band must not shrink to it.
    found = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        k = int(share * 200)
        x = np.r_[np.full(k, 1000.0), np.full(200 - k, 1010.0)]
        rng.shuffle(x)
        found.append(detect_warmup(x))
    assert max(found) == 0


def test_short_series_report_no_warmup():
    assert detect_warmup([5.0, 1.0, 1.0]) == 0
    assert detect_warmup([7.0]) == 0


def test_constant_series_and_quantised_series():
    assert detect_warmup([100.0] * 50) == 0
    x = np.round(np.random.default_rng(0).normal(1000, 0.4, 300))
    assert detect_warmup(x) == 0
    assert detect_warmup(np.r_[[1500.0] * 7, x]) == 7


# ---- bootstrap CI --------------------------------------------------------

def test_bootstrap_ci_is_seeded_and_reproducible():
    x = np.random.default_rng(1).lognormal(0, 0.3, 60)
    a = bootstrap_median_ci(x, seed=7)
    assert a == bootstrap_median_ci(x, seed=7)
    assert a != bootstrap_median_ci(x, seed=8)
    assert a[0] <= np.median(x) <= a[1]


def test_bootstrap_ci_handles_inputs_larger_than_one_chunk():
    x = np.random.default_rng(2).normal(10, 1, 50_000)
    lo, hi = bootstrap_median_ci(x, seed=0, resamples=200)
    # The median's standard error is 1.2533 / sqrt(n) = 0.0056 here.
    assert lo < 10 < hi and hi - lo < 0.05


@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_bootstrap_ci_covers_the_true_median_95_percent_of_the_time(dist):
    trials, n = 400, 30
    rng = np.random.default_rng(11)
    if dist == "normal":
        data, truth = rng.normal(100.0, 10.0, (trials, n)), 100.0
    else:
        data, truth = rng.lognormal(0.0, 0.5, (trials, n)), 1.0  # median exp(0) = 1
    hits = 0
    for t in range(trials):
        lo, hi = bootstrap_median_ci(data[t], seed=t)
        hits += lo <= truth <= hi
    lo_band, hi_band = band(0.95, trials)
    assert lo_band <= hits / trials <= hi_band, hits / trials


def test_a_large_sample_gets_the_order_statistic_interval_the_bootstrap_converges_to():
    rng = np.random.default_rng(5)
    small = rng.lognormal(0, 0.3, stats.ORDER_CI_FROM - 1)
    assert stats.median_ci(small, seed=3) == bootstrap_median_ci(small, seed=3)
    x = rng.lognormal(0, 0.3, 20_000)
    lo, hi = stats.median_ci(x)
    ordered = np.sort(x)
    # Ranks n/2 -/+ 1.96 sqrt(n)/2: the 9861st and the 10139th of 20,000 values.
    assert (lo, hi) == (ordered[9860], ordered[10138])
    boot = bootstrap_median_ci(x, seed=0, resamples=400)
    assert lo == pytest.approx(boot[0], rel=0.005) and hi == pytest.approx(boot[1], rel=0.005)
    hits = sum(lo <= 1.0 <= hi for lo, hi in (stats.median_ci(rng.lognormal(0, 0.5, 1500)) for _ in range(400)))
    lo_band, hi_band = band(0.95, 400)
    assert lo_band <= hits / 400 <= hi_band, hits / 400
    with pytest.raises(ValueError):
        stats.median_ci(np.append(x, np.nan))


def test_bootstrap_rejects_bad_parameters():
    with pytest.raises(ValueError):
        bootstrap_median_ci([], seed=0)
    with pytest.raises(ValueError):
        bootstrap_median_ci([1.0, np.nan])
    with pytest.raises(ValueError):
        bootstrap_median_ci([1.0, 2.0], resamples=10)
    with pytest.raises(ValueError):
        bootstrap_median_ci([1.0, 2.0], confidence=1.5)


# ---- Mann-Whitney U ------------------------------------------------------

def test_mann_whitney_matches_the_textbook_small_case():
    # a = [1, 2], b = [3, 4]: every a below every b, U_a = 0; exact
    # normal approximation: mu = 2, var = 4*5/12, z = (2 - 0.5)/sqrt(5/3).
    u, p = mann_whitney_u([1.0, 2.0], [3.0, 4.0])
    assert u == 0
    assert p == pytest.approx(math.erfc((1.5 / math.sqrt(5 / 3)) / math.sqrt(2)))
    assert mann_whitney_u([5.0] * 4, [5.0] * 3)[1] == 1.0


def test_mann_whitney_agrees_with_scipy_including_ties():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    a = np.round(rng.normal(10, 2, (30, 25)))
    b = np.round(rng.normal(10.8, 2, (30, 17)))  # rounding makes many ties
    u, p = mann_whitney_u(a, b)
    for i in range(a.shape[0]):
        ref = stats.mannwhitneyu(a[i], b[i], alternative="two-sided", method="asymptotic")
        assert u[i] == pytest.approx(ref.statistic)
        assert p[i] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)


def test_mann_whitney_false_positive_rate_is_nominal_on_equal_distributions():
    trials = 4000
    rng = np.random.default_rng(5)
    _, p = mann_whitney_u(rng.lognormal(0, 0.3, (trials, 30)), rng.lognormal(0, 0.3, (trials, 40)))
    rate = float(np.mean(p < 0.05))
    lo, hi = band(0.05, trials)
    assert lo <= rate <= hi, rate


# ---- compare -------------------------------------------------------------

def test_compare_finds_a_known_slowdown():
    rng = np.random.default_rng(6)
    b = 1e6 * rng.lognormal(0, 0.05, 60)
    a = 1.45e6 * rng.lognormal(0, 0.05, 60)
    r = compare(a, b, labels=("eval-only", "train-then-eval"))
    assert r["significant"] and r["p_value"] < 1e-6
    assert r["ci95"][0] < 1.45 < r["ci95"][1]
    assert r["ratio"] == pytest.approx(np.median(a) / np.median(b))
    assert r["verdict"].startswith("eval-only is 1.4") and "slower than train-then-eval" in r["verdict"]
    json.dumps(r)


def test_compare_reports_the_faster_side_with_the_inverted_interval():
    rng = np.random.default_rng(7)
    a = rng.normal(500, 5, 40)
    b = rng.normal(1000, 10, 40)
    r = compare(a, b)
    assert r["ratio"] == pytest.approx(0.5, rel=0.02)
    assert "A is 2.0" in r["verdict"] and "faster than B" in r["verdict"]
    lo, hi = r["ci95"]
    assert f"[{1 / hi:.2f}, {1 / lo:.2f}]" in r["verdict"]


def test_compare_on_equal_distributions_has_a_nominal_false_positive_rate():
    trials = 300
    rng = np.random.default_rng(8)
    a, b = rng.lognormal(0, 0.3, (trials, 30)), rng.lognormal(0, 0.3, (trials, 30))
    results = [compare(a[t], b[t], seed=t, resamples=1000) for t in range(trials)]
    lo, hi = band(0.05, trials)
    significant = np.mean([r["significant"] for r in results])
    ci_excludes_one = np.mean([not (r["ci95"][0] <= 1 <= r["ci95"][1]) for r in results])
    assert lo <= significant <= hi, significant
    assert lo <= ci_excludes_one <= hi, ci_excludes_one
    for r in results:
        if not r["significant"]:
            assert r["verdict"].startswith("no significant difference")


def test_compare_is_reproducible_and_accepts_samples():
    rng = np.random.default_rng(9)
    a = np.r_[[9e6] * 3, rng.normal(1e6, 1e4, 50)]
    b = rng.normal(1.1e6, 1e4, 50)
    sa = Samples(a)
    assert sa.warmup == 3
    r1, r2 = compare(sa, b, seed=3), compare(sa, b, seed=3)
    assert r1 == r2
    assert r1["n_a"] == 50  # the warm-up is not compared
    assert "faster" in r1["verdict"]


def test_compare_gives_no_interval_from_too_few_iterations():
    # One value each gave ratio 0.5 with a "95% CI [0.5, 0.5]": a bootstrap of one value is that value.
    r = compare([1.0e6], [2.0e6])
    assert r["ci95"] is None and not r["significant"] and r["ratio"] == 0.5
    assert r["verdict"] == ("too few steady iterations for an interval (A: 1, B: 1; a confidence interval of a median "
                            "needs at least 10 each): A/B = 0.50 is not judged; time more iterations")
    rng = np.random.default_rng(10)
    nine, many = 1e6 * rng.lognormal(0, 0.01, 9), 2e6 * rng.lognormal(0, 0.01, 40)
    assert compare(nine, many)["ci95"] is None and "(A: 9, B: 40;" in compare(nine, many)["verdict"]
    ten = 1e6 * rng.lognormal(0, 0.01, 10)
    assert compare(ten, many)["significant"] and compare(ten, many)["ci95"][1] < 1.0


def test_compare_refuses_zero_medians():
    with pytest.raises(ValueError, match="resolution"):
        compare([0.0, 0.0, 1.0], [1.0, 2.0, 3.0])


# ---- Samples and summary -------------------------------------------------

def test_samples_keep_warmup_apart_and_summarise_the_steady_state():
    rng = np.random.default_rng(10)
    steady = rng.normal(1000, 10, 100)
    x = np.r_[[3000.0, 2000.0, 1500.0], steady]
    counters = {"minor_faults": [500, 400, 300] + [10] * 100,
                "cycles": [None] * 103}
    s = Samples(x, counters=counters)
    assert s.warmup == 3 and s.warmup_detected
    assert list(s.warmup_ns) == [3000.0, 2000.0, 1500.0]
    assert np.array_equal(s.steady_ns, steady)
    summary = s.summary()
    json.dumps(summary)
    for key in ("n", "median", "mean", "min", "iqr", "mad", "ci95", "iqr_over_median",
                "flags", "advice", "warmup"):
        assert key in summary
    assert summary["n"] == 100 and summary["n_total"] == 103
    assert summary["median"] == pytest.approx(np.median(steady))
    assert summary["min"] == pytest.approx(steady.min())
    q1, q3 = np.percentile(steady, [25, 75])
    assert summary["iqr"] == pytest.approx(q3 - q1)
    assert summary["mad"] == pytest.approx(np.median(np.abs(steady - np.median(steady))))
    assert summary["ci95"][0] < summary["median"] < summary["ci95"][1]
    assert summary["flags"] == [] and summary["advice"] == []
    assert summary["counters"]["minor_faults"] == {"median": 10.0, "mean": 10.0}
    assert summary["counters"]["cycles"] is None
    assert summary["ci95"] == s.summary()["ci95"]  # seeded


def test_explicit_warmup_and_list_of_dict_counters():
    s = Samples([5.0, 1.0, 1.1, 0.9, 1.0], counters=[{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}, {"a": None}],
                warmup=1)
    assert s.warmup == 1 and not s.warmup_detected
    assert np.isnan(s.steady_counters["a"][-1])
    assert s.summary()["counters"]["a"]["median"] == 3.0


def test_flags_say_what_to_do():
    rng = np.random.default_rng(12)
    few = Samples(rng.normal(1000, 5, MIN_SAMPLES_FOR_CI - 3), warmup=0).summary()
    assert "few_samples" in few["flags"] and any("more iterations" in a for a in few["advice"])
    noisy = Samples(1000 * rng.lognormal(0, 0.4, 200), warmup=0).summary()
    assert "unstable" in noisy["flags"] and any("doctor" in a for a in noisy["advice"])
    two = np.r_[rng.normal(1000, 10, 120), rng.normal(1300, 10, 80)]
    rng.shuffle(two)
    bimodal = Samples(two, warmup=0).summary()
    assert "bimodal" in bimodal["flags"]
    assert any("two groups" in a for a in bimodal["advice"])
    assert len(bimodal["flags"]) == len(bimodal["advice"])
    drift = Samples(np.r_[np.linspace(3000, 1000, 80), rng.normal(1000, 1, 40)]).summary()
    assert "no_steady_state" in drift["flags"]


def test_bimodality_finds_real_clusters_only():
    rng = np.random.default_rng(13)
    unimodal = [bimodality(np.random.default_rng(s).lognormal(0, 0.5, 200)) for s in range(100)]
    assert sum(m is not None for m in unimodal) <= 2
    x = np.r_[rng.normal(1000, 10, 140), rng.normal(1100, 10, 60)]
    (m1, s1), (m2, s2) = bimodality(x)
    assert m1 == pytest.approx(1000, abs=10) and m2 == pytest.approx(1100, abs=10)
    assert s1 == pytest.approx(0.7, abs=0.03) and s2 == pytest.approx(0.3, abs=0.03)
    assert bimodality(x[:15]) is None  # too few to tell


def test_samples_from_ticks_keeps_ticks():
    from benchctl import clock
    s = Samples.from_ticks(np.array([1000, 1100, 1050, 990] * 5, dtype=np.int64), warmup=0)
    assert s.ticks.dtype == np.int64 and s.ticks[1] == 1100
    assert s.ns[1] == pytest.approx(clock.to_ns(1100))


def test_samples_refuse_bad_input():
    with pytest.raises(ValueError):
        Samples([])
    with pytest.raises(ValueError):
        Samples([1.0, -2.0])
    with pytest.raises(ValueError):
        Samples([[1.0, 2.0]])
    with pytest.raises(ValueError, match="warmup"):
        Samples([1.0, 2.0], warmup=2)
    with pytest.raises(TypeError):
        Samples([1.0, 2.0], warmup=1.0)
    with pytest.raises(ValueError, match="iterations"):
        Samples([1.0, 2.0], counters=[{"a": 1}])
    with pytest.raises(ValueError):
        Samples([1.0, 2.0], counters={"a": [1]})
    arr = np.array([1.0, 2.0, 3.0])
    Samples(arr)
    arr[0] = 5.0  # the caller's array is copied, not frozen
