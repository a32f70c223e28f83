"""Student's t CDF and quantiles, and F's upper tail, against scipy, fractional degrees of freedom included."""

import pytest

from benchctl import ArgumentError
from benchctl._results.tdist import f_sf, t_cdf, t_quantile

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("df", [1, 1.5, 2, 2.7, 4, 9, 30, 200, 1e8])
@pytest.mark.parametrize("p", [0.0005, 0.025, 0.1, 0.5, 0.9, 0.975, 0.9995])
def test_quantiles_match_scipy(df, p):
    assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("df", [1, 2.5, 7, 60])
@pytest.mark.parametrize("t", [-40.0, -3.0, -0.2, 0.0, 0.7, 2.0, 12.0])
def test_cdf_matches_scipy(df, t):
    assert t_cdf(t, df) == pytest.approx(scipy_stats.t.cdf(t, df), rel=1e-9, abs=1e-12)


def test_known_values():
    assert t_quantile(0.975, 2) == pytest.approx(4.302652729, rel=1e-8)
    assert t_quantile(0.975, 4) == pytest.approx(2.776445105, rel=1e-8)


@pytest.mark.parametrize("p, df", [(0, 3), (1, 3), (0.5, 0), (0.5, -1), (True, 3), (0.5, float("nan"))])
def test_bad_arguments(p, df):
    with pytest.raises(ArgumentError):
        t_quantile(p, df)


@pytest.mark.parametrize("df1, df2", [(1, 3), (2, 10), (4, 13), (7.5, 2.5), (30, 200)])
@pytest.mark.parametrize("f", [0.01, 0.5, 1.0, 2.3, 9.0, 150.0])
def test_f_upper_tail_matches_scipy(f, df1, df2):
    assert f_sf(f, df1, df2) == pytest.approx(scipy_stats.f.sf(f, df1, df2), rel=1e-9, abs=1e-13)


def test_f_upper_tail_at_its_ends():
    assert f_sf(0.0, 2, 5) == 1.0 and f_sf(-1.0, 2, 5) == 1.0 and f_sf(float("inf"), 2, 5) == 0.0
    with pytest.raises(ArgumentError):
        f_sf(1.0, 0, 5)
