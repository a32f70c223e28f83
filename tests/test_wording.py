"""How ratios and intervals are written in sentences: a bound past 1000x either way as a bound, not its digits."""

from benchctl._results import wording


def test_an_interval_is_written_with_its_bounds_and_a_huge_one_as_a_bound():
    assert wording.ratio_ci(1.45, (1.38, 1.52)) == "1.45× [95% CI 1.38, 1.52]"
    assert wording.ratio_ci(1.0, (0.97, 1.04)) == "1.000× [95% CI 0.970, 1.040]"
    # thread_each_call.py at --budget 40: two processes a cell beside a ±213% A/A band
    assert wording.ratio_ci(1.49, (1e-4, 98970471588.23)) == "1.49× [95% CI <0.001, >1000]"
    assert wording.slower_or_faster(0.5, (1e-5, 0.9)) == ("2.00× faster", "[95% CI 1.11, >1000]")
    assert wording.ratio_ci(2.0, (0.001, 1000.0)) == "2.00× [95% CI 0.00, 1000.00]"  # at the bound: its digits
