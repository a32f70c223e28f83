"""Student's t CDF and quantiles against scipy, fractional degrees of freedom included."""

import pytest

from benchctl import ArgumentError
from benchctl.results.tdist import t_cdf, t_quantile

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
