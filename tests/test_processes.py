"""The process as the unit: intervals over a few processes, their coverage, and the no-effect band."""

import math

import numpy as np
import pytest

from benchctl import ArgumentError
from benchctl._results import processes, stats
from benchctl._results.comparison import Comparison, Outcome


def _process_medians(rng, k, log_mean, between_sd, within_sd=0.05, iterations=30):
    """k fresh processes: each shifted by a between-process effect, its median over noisy iterations."""
    shifts = rng.normal(0.0, between_sd, size=k)
    its = np.exp(log_mean + shifts[:, None] + rng.normal(0.0, within_sd, size=(k, iterations)))
    return np.median(its, axis=1)


@pytest.mark.parametrize("k", [3, 5, 10])
def test_the_interval_between_cells_covers_the_true_ratio_about_95_percent(k):
    """Cells A and B, true ratio 1.2, process medians that move by ~8% between processes: the Welch
    interval over processes holds the truth in about 95% of 1500 simulated runs."""
    rng = np.random.default_rng(k)
    truth = math.log(1.2)
    hits = 0
    runs = 1500
    for _ in range(runs):
        a = _process_medians(rng, k, truth, 0.08)
        b = _process_medians(rng, k, 0.0, 0.08)
        lo, hi = processes.compare(a, b).ci95
        hits += lo <= 1.2 <= hi
    assert 0.92 <= hits / runs <= 0.98, hits / runs


@pytest.mark.parametrize("k_a, k_b", [(3, 2), (3, 3), (5, 4)])
def test_the_control_arms_pooled_interval_covers_no_difference_about_95_percent(k_a, k_b):
    """The A/A control's two arms are one cell (one variance): the pooled interval holds the true
    ratio 1 about 95% of the time, also with an arm one process short (a round cut by the budget),
    and is narrower than Welch's there on average."""
    rng = np.random.default_rng(10 * k_a + k_b)
    runs, hits, pooled_width, welch_width = 1500, 0, 0.0, 0.0
    for _ in range(runs):
        b, a = _process_medians(rng, k_b, 0.0, 0.1), _process_medians(rng, k_a, 0.0, 0.1)
        cmp = processes.compare(b, a, same_cell=True)
        lo, hi = cmp.ci95
        hits += lo <= 1.0 <= hi
        assert cmp.df == k_a + k_b - 2 and cmp.method.startswith("pooled Student t")
        pooled_width += math.log(hi / lo)
        welch = processes.compare(b, a).ci95
        welch_width += math.log(welch[1] / welch[0])
    assert 0.93 <= hits / runs <= 0.97, hits / runs
    assert pooled_width < welch_width


@pytest.mark.parametrize("k", [3, 5, 10])
def test_the_interval_of_a_cell_covers_its_true_value_about_95_percent(k):
    rng = np.random.default_rng(100 + k)
    runs, hits = 1500, 0
    for _ in range(runs):
        values = _process_medians(rng, k, 0.0, 0.1)
        lo, hi = processes.cell_interval(values)["ci"]
        hits += lo <= 1.0 <= hi
    assert 0.92 <= hits / runs <= 0.98, hits / runs


def test_pooled_iterations_would_call_what_processes_do_not():
    """Three processes a side, each tight but centred differently: pooled iterations give a narrow
    interval that excludes 1; the processes, as the unit, give one that includes it."""
    rng = np.random.default_rng(3)
    a_runs = [c * (1 + 0.002 * rng.standard_normal(200)) for c in (1.00, 1.10, 1.20)]
    b_runs = [c * (1 + 0.002 * rng.standard_normal(200)) for c in (0.95, 1.05, 1.15)]
    pooled = stats.compare(np.concatenate(a_runs), np.concatenate(b_runs))
    by_process = processes.compare([np.median(r) for r in a_runs], [np.median(r) for r in b_runs])
    assert pooled["ci95"][0] > 1.0
    assert by_process.ci95[0] < 1.0 < by_process.ci95[1]
    assert processes.judge(by_process) == Outcome.UNRESOLVED


def test_one_process_gives_no_interval():
    cmp = processes.compare([2.0], [1.0, 1.1])
    assert cmp.ci95 is None and cmp.ratio == pytest.approx(2.0 / math.sqrt(1.1))
    assert processes.judge(cmp) == Outcome.ONE_PROCESS
    one = processes.cell_interval([3.0])
    assert one["k"] == 1 and one["value"] == pytest.approx(3.0) and one["ci"] is None and one["log_sd"] is None
    assert processes.processes_to_resolve(cmp, 0.05) is None


def test_judge_against_the_band():
    def cmp(lo, hi):
        return Comparison(ratio=math.sqrt(lo * hi), ci95=(lo, hi), k_a=3, k_b=3, median_a=1.0, median_b=1.0)
    assert processes.judge(cmp(1.06, 1.2)) == Outcome.EFFECT
    assert processes.judge(cmp(0.8, 0.94)) == Outcome.EFFECT
    assert processes.judge(cmp(0.97, 1.04)) == Outcome.NO_EFFECT
    assert processes.judge(cmp(1.02, 1.08)) == Outcome.UNRESOLVED
    assert processes.judge(cmp(1.06, 1.2), band=0.10) == Outcome.UNRESOLVED
    # Inside a band so wide that identical processes differ by more: not "no effect", unresolved.
    assert processes.judge(cmp(0.8, 1.25), band=0.30) == Outcome.UNRESOLVED
    assert processes.judge(cmp(0.85, 1.2), band=0.25) == Outcome.NO_EFFECT


def _arms(sd: float, shift: float = 0.0) -> list[float]:
    """Three process values whose logs have exactly this standard deviation."""
    return list(np.exp(shift + np.array([-sd, 0.0, sd])))


def test_the_control_band_is_the_arms_spread_never_under_the_floor():
    assert processes.band_from_control(None) == processes.FLOOR
    quiet = processes.compare(_arms(0.03), _arms(0.03), same_cell=True)
    assert processes.band_from_control(quiet) == processes.FLOOR
    noisy = processes.compare(_arms(0.12, 0.02), _arms(0.12), same_cell=True)
    assert processes.band_from_control(noisy) == pytest.approx(math.expm1(0.12))


def test_a_machine_shift_band_is_the_interval_reach():
    assert processes.band_from_interval(None) == processes.FLOOR
    def cmp(lo, hi):
        return Comparison(ratio=math.sqrt(lo * hi), ci95=(lo, hi), k_a=3, k_b=3, median_a=1.0, median_b=1.0)
    assert processes.band_from_interval(cmp(0.98, 1.03)) == processes.FLOOR
    assert processes.band_from_interval(cmp(0.9, 1.05)) == pytest.approx(1 / 0.9 - 1)
    assert processes.band_from_interval(cmp(0.95, 1.12)) == pytest.approx(0.12)


@pytest.mark.parametrize("sd", [0.03, 0.1, 0.2])
def test_the_resolvable_difference_is_where_a_comparison_starts_to_resolve(sd):
    """Two cells of 3 processes that disagree as the arms do: a difference just over what the
    control says the run resolves is an effect, just under it is not."""
    control = processes.compare(_arms(sd), _arms(sd), same_cell=True)
    band = processes.band_from_control(control)
    edge = math.log1p(processes.resolvable(control, band))
    assert processes.resolvable(None, band) is None
    for step, outcome in ((1e-3, Outcome.EFFECT), (-1e-3, Outcome.UNRESOLVED)):
        cmp = processes.compare(_arms(sd, edge + step), _arms(sd))
        assert processes.judge(cmp, band) == outcome


def test_processes_to_resolve_grows_as_the_difference_nears_the_band():
    def cmp(ratio):  # three processes a side that disagree by about 10%
        return Comparison(ratio=ratio, ci95=(ratio, ratio), log_se=0.1 * math.sqrt(2 / 3), k_a=3, k_b=3,
                          median_a=ratio, median_b=1.0)
    n_far, n_near = processes.processes_to_resolve(cmp(1.3), 0.05), processes.processes_to_resolve(cmp(1.12), 0.05)
    assert 3 < n_far < n_near
    # The more processes, the narrower the interval: at the estimate the difference clears the band.
    sd, margin = 0.1, math.log(1.3) - math.log(1.05)
    assert 2.0 * sd * math.sqrt(2 / n_far) < margin
    edge = math.exp(math.log1p(0.05))
    assert processes.processes_to_resolve(cmp(edge), 0.05) is None  # on the band's edge: no count will do
    assert processes.processes_to_resolve(cmp(1.051), 0.05) > processes.MAX_ESTIMATE


def test_identical_values_on_both_sides():
    cmp = processes.compare([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert cmp.ci95 == (1.0, 1.0) and cmp.p_value == 1.0
    assert processes.judge(cmp) == Outcome.NO_EFFECT


@pytest.mark.parametrize("values", [[], [0.0, 1.0], [1.0, float("nan")], [-1.0, 2.0]])
def test_bad_values_are_refused(values):
    with pytest.raises(ArgumentError, match="per-process medians must be finite and > 0|non-empty"):
        processes.compare(values, [1.0, 2.0])


def test_the_pooled_spread_is_the_within_cell_variance_and_levenes_test():
    """Against scipy: the pooled variance of log values (each group about its own mean) and Levene's
    test centred on the mean; groups of one process are left out."""
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    groups = [np.exp(rng.normal(m, 0.1, size=k)) for m, k in ((0.0, 4), (0.5, 3), (0.2, 3), (1.0, 4))]
    spread = processes.pooled_spread([*groups, [123.0]])
    logs = [np.log(g) for g in groups]
    expected_var = sum(((g - g.mean()) ** 2).sum() for g in logs) / (14 - 4)
    assert spread.log_var == pytest.approx(expected_var, rel=1e-12)
    assert (spread.df, spread.cells) == (10, 4)
    assert spread.levene_p == pytest.approx(scipy_stats.levene(*logs, center="mean").pvalue, rel=1e-9)
    assert processes.pooled_spread([[1.0], [2.0]]) is None
    assert not processes.pooled_spread([[1.0, 1.1]]).holds  # one cell: nothing to pool over
    # Two processes lie equally far from their mean: no test, no pooling.
    assert not processes.pooled_spread([[1.0, 1.1], [2.0, 2.2], [3.0, 3.3, 3.1]]).holds


def test_equally_noisy_cells_share_one_variance_and_unequal_ones_do_not():
    rng = np.random.default_rng(3)
    equal = [_process_medians(rng, 4, 0.0, 0.08) for _ in range(5)]
    unequal = [_process_medians(rng, 6, 0.0, sd) for sd in (0.01, 0.01, 0.01, 0.3)]
    assert processes.pooled_spread(equal).holds
    assert not processes.pooled_spread(unequal).holds
    pooled = processes.compare(equal[0], equal[1], pooled=processes.pooled_spread(equal))
    assert pooled.df == 15 and pooled.method.startswith("Student t interval with the process variance pooled")
    welch = processes.compare(unequal[0], unequal[3], pooled=processes.pooled_spread(unequal))
    assert welch.method == "Welch t interval on the log of per-process medians"


@pytest.mark.parametrize("k", [3, 4])
def test_the_pooled_interval_covers_the_true_ratio_about_95_percent_where_it_is_used(k):
    """Five equally noisy cells of k processes, two of them 1.2x apart: the rule (pooled where Levene's
    test lets it, Welch otherwise) holds the truth in about 95% of 1500 runs, with narrower intervals
    than Welch's alone."""
    rng = np.random.default_rng(20 + k)
    runs, hits, width, welch_width = 1500, 0, 0.0, 0.0
    for _ in range(runs):
        cells = [_process_medians(rng, k, math.log(1.2) if i == 0 else 0.0, 0.08) for i in range(5)]
        lo, hi = processes.compare(cells[0], cells[1], pooled=processes.pooled_spread(cells)).ci95
        hits += lo <= 1.2 <= hi
        width += math.log(hi / lo)
        w_lo, w_hi = processes.compare(cells[0], cells[1]).ci95
        welch_width += math.log(w_hi / w_lo)
    assert 0.93 <= hits / runs <= 0.97, hits / runs
    assert width < 0.9 * welch_width
