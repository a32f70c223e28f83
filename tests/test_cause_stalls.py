"""The stalls cause: a few calls taking most of the time in several processes is named, open, with its evidence;
a workload whose calls take one of two times, one process's hiccup, a slow first call and plain noise are not.
The synthetic documents carry known series; no timing is asserted."""

import numpy as np

from benchctl._causes.stalls import rule as stalls
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.answer import format_answer
from benchctl._results.findings import Status
from synthetic_results import make_doc

CALLS = 40


def _judge(series_of):
    """The finding on a document whose baseline's process r ran ``series_of(r)`` (ns)."""
    doc = make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True)
    for run in doc["runs"]:
        run["phases"]["call"]["ns"] = list(series_of(run["repetition"]))
        run["phases"]["call"]["warmup"] = 0
    doc = analyse(doc)
    return stalls.StallsCause().judge_phase(rules.Context(doc, "call", queries.Comparisons(doc)))


def _noise(seed, n=CALLS):
    return np.random.default_rng(seed).normal(1.0, 0.05, n)


def _collector(r):
    # 10 ms calls, and a 170 ms full pass of the collector on every 13th call from a point of each process's own.
    ns = 10e6 * _noise(r)
    ns[(np.arange(CALLS) + 3 * r) % 13 == 12] = 170e6
    return ns


def test_a_few_calls_taking_most_of_the_time_in_several_processes_are_named_open():
    found = _judge(_collector)
    assert found.status is Status.UNCONFIRMED and found.mark == "?" and found.comparison is None, found.message
    assert found.message.startswith("a few calls taking most of the time: ")
    assert "ran 3× their process's median or more (0.1 ms over it at least) and took " in found.message
    assert found.message.endswith(f"a total time does; what stalls is not probed as such ({stalls.WHAT_STALLS})")
    assert found.evidence["share"] >= stalls.SHARE and found.evidence["stalled_processes"] == 3
    assert found.evidence["stalls"] <= stalls.FEW * found.evidence["calls"]
    assert round(found.evidence["slowest_ms"]) == 170 and 9 < found.evidence["median_ms"] < 11
    assert "? a few calls taking most of the time" in format_answer([found], "step.py:step")


def test_two_times_one_hiccup_a_slow_first_call_or_noise_are_not_stalls():
    bimodal = _judge(lambda r: 1e6 * np.where(np.arange(CALLS) % 2, 4.0, 1.0) * _noise(r))  # half the calls 4×
    assert bimodal.status is Status.NOT_CAUSE, bimodal.message
    one = _judge(lambda r: _collector(r) if r == 0 else 10e6 * _noise(r))  # stalls in one process only
    assert one.status is Status.NOT_CAUSE and one.evidence["stalled_processes"] == 1
    first = _judge(lambda r: 1e6 * np.concatenate([[40.0], _noise(r, CALLS - 1)]))  # the warm-up cause's
    assert first.status is Status.NOT_CAUSE and first.evidence["stalls"] == 0
    # Microsecond calls 3-5x slow now and then (an interrupt, a page fault): the machine's, under 0.1 ms over.
    tiny = _judge(lambda r: 5e3 * np.where(np.arange(CALLS) % 7 == 3, 4.5, 1.0) * _noise(r))
    assert tiny.status is Status.NOT_CAUSE and tiny.evidence["stalls"] == 0
    assert stalls.stalls_of([5e3 * np.where(np.arange(CALLS) % 7 == 3, 40.0, 1.0)] * 2).named  # 195 µs over: named
    flat = _judge(lambda r: 1e6 * _noise(r))
    assert flat.status is Status.NOT_CAUSE and flat.message.endswith(
        "not a few calls taking 25% or more of the time in 2 processes or more")


def test_too_few_calls_or_processes_tell_nothing():
    assert stalls.stalls_of([np.ones(5) * 1e6] * 4) is None  # 4 calls after the first in each
    assert stalls.stalls_of([np.ones(30) * 1e6]) is None  # one process
    short = _judge(lambda r: 1e6 * np.arange(1, 6))
    assert short.status is Status.NOT_CAUSE and short.message == (
        "a few calls taking most of the time: too few calls to tell stalls: 0 of its 3 processes ran 8 or more steady "
        "calls after their first")
