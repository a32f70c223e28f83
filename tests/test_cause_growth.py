"""The growth cause: a series that grows with each call in every process is named, with its evidence; a flat one,
a noisy one and one that grows in one process only are not; too few processes or iterations tell nothing. The
synthetic documents carry known series; no timing is asserted."""

import numpy as np

from benchctl._causes.growth import rule as growth
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.findings import Status
from synthetic_results import make_doc

ITERATIONS = 30


def _judge(series_of):
    """The finding on a document whose baseline's process r ran ``series_of(r)``."""
    doc = make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True)
    for run in doc["runs"]:
        run["phases"]["call"]["ns"] = list(series_of(run["repetition"]))
        run["phases"]["call"]["warmup"] = 0
    doc = analyse(doc)
    return growth.Growth().judge_phase(rules.Context(doc, "call", queries.Comparisons(doc)))


def _noise(seed, n=ITERATIONS):
    return np.random.default_rng(seed).normal(1.0, 0.05, n)


def test_a_series_that_grows_with_each_call_in_every_process_is_named():
    found = _judge(lambda r: 1e6 * np.arange(1, ITERATIONS + 1) * _noise(r))  # a list stacked whole each call
    assert found.status is Status.CAUSE and found.comparison is None, found.message
    assert found.message.startswith("time that grows with each call: the last third of each process's calls ran ")
    assert growth.MECHANISM in found.message and growth.FIX in found.message
    assert min(found.evidence["last_over_first_third"]) >= growth.GROWTH
    assert np.median(found.evidence["rank_correlation"]) >= growth.TREND


def test_flat_noisy_or_one_process_growth_is_not_named():
    flat = _judge(lambda r: 1e6 * _noise(r))
    assert flat.status is Status.NOT_CAUSE and "not a growth of 1.5× in every process" in flat.message
    # A machine whose speed switched halfway in one process: a step up there, flat in the others.
    stepped = _judge(lambda r: 1e6 * _noise(r) * np.where(np.arange(ITERATIONS) > 15, 2.0 if r == 0 else 1.0, 1.0))
    assert stepped.status is Status.NOT_CAUSE
    # A slow first call (warm-up) then flat: the first iteration is left out, and nothing grows.
    warm = _judge(lambda r: 1e6 * np.concatenate([[40.0], _noise(r, ITERATIONS - 1)]))
    assert warm.status is Status.NOT_CAUSE


def test_too_short_a_series_or_too_few_processes_tells_nothing():
    assert growth.growth_of([1.0] * 5) is None and growth.growth_of([2.0] * 20) is None
    short = _judge(lambda r: 1e6 * np.arange(1, 6))  # 4 iterations after the first: grows, but too few to tell
    assert short.status is Status.NOT_CAUSE and short.message == (
        "time that grows with each call: too few iterations to tell a trend: 0 of its 3 processes ran 6 or more "
        "after their first")
    ratio, rho = growth.growth_of(list(np.arange(1.0, 31.0)))
    assert rho > 0.99 and abs(ratio - 26.0 / 6.0) < 1e-9
