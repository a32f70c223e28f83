"""The garbage-collector cause: its control (passes counted and timed over a block, the code's own gc.collect() calls
apart; the collector off across the timed calls and back as the code had it, also after an exception), its setting
(``gc=off``, switched in a running process, each timed call counted), its probe (through a results file) and its
judgement on synthetic explaining runs. No timing is asserted: the synthetic documents carry known factors."""

import gc
import json
import textwrap

import pytest

from benchctl import _timed_call, settings
from benchctl._causes.gc_pauses import control
from benchctl._causes.gc_pauses.probe import PROBE, GcFacts
from benchctl._causes.gc_pauses.rule import FIX, NEGLIGIBLE_SHARE, TIMING_ONLY, GcPauses
from benchctl._causes.gc_pauses.setting import GC
from benchctl._probe import ProbedCall
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched

OFF = {"gc": "off"}
SEEN = GcFacts(passes={"0": 120, "1": 11, "2": 3}, seconds=0.8, window_s=1.0, tracked=500_000)


@pytest.fixture(autouse=True)
def _restored():
    was = gc.isenabled()
    yield
    control.restore_calls()
    assert gc.isenabled() == was, "a test left the collector as it was not"


def _churn(n=5_000):
    return [{"i": i, "t": (i,)} for i in range(n)]


def test_watching_counts_the_passes_and_the_codes_own_collects_apart():
    own, callbacks = gc.collect, list(gc.callbacks)
    with control.watching() as seen:
        _churn()
        gc.collect()
    assert gc.collect is own and gc.callbacks == callbacks
    assert sum(seen.passes.values()) >= 2 and seen.passes.get(2, 0) >= 1, seen  # the churn's passes and the collect
    assert seen.explicit == 1 and 0 < seen.explicit_s <= seen.seconds <= seen.window_s
    assert seen.enabled and seen.tracked > 0
    with pytest.raises(ValueError), control.watching():
        raise ValueError("the block's")
    assert gc.collect is own and gc.callbacks == callbacks


def test_the_collector_is_off_from_the_first_timed_call_until_switched_back():
    assert GC.canonical(" OFF ") == "off" and GC.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        GC.canonical("on")
    assert settings.SETTINGS["gc"] is GC and GC.in_process and GC.held_by_calls and GC.during("code") is None
    assert GC.carries_over, "the pass after the switch back lands in the unchanged arm: never paired"
    call = _timed_call.wrapped(_churn)  # wrapped once, as the timed loop does
    assert GC.apply("off") == {"off": True, "calls": 0, "held": 0, "collector_on": True}
    assert GC.during("off") == "code", "no call wrapped yet"
    call()
    assert not gc.isenabled(), "off between the calls too"
    assert GC.during("off") == "off"
    _timed_call.wrapped(gc.enable)()  # the code turns it on again inside a call
    assert GC.readback("off") == {"off": True, "calls": 2, "held": 1, "collector_on": True}
    assert GC.during("off") == "code"
    assert GC.switch("code") == {"off": False, "calls": 0, "held": 0, "collector_on": True}
    GC.switch("off")
    call()
    with pytest.raises(ValueError):
        _timed_call.wrapped(lambda: (_ for _ in ()).throw(ValueError("the call's")))()
    assert GC.readback("off")["calls"] == 1, "a call that raised is not counted"
    assert GC.facts_phrase(GC.facts(GC.readback("off"))) == "every timed call read back with the collector off"
    GC.switch("code")
    assert gc.isenabled()
    gc.disable()
    try:
        GC.switch("off")
        call()
        GC.switch("code")
        assert not gc.isenabled(), "a collector the code had off stays off"
    finally:
        gc.enable()


def test_the_probe_reads_its_passes_back_through_a_results_file():
    with control.watching() as seen:
        _churn()
    note = PROBE.record(ProbedCall(call=lambda: None, watched={PROBE.key: seen}))
    found = PROBE.read(note)
    assert found.passes == {str(k): v for k, v in seen.passes.items()} and found.tracked == seen.tracked
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found
    assert SEEN.text() == ("over its timed iterations the collector ran 134 passes by itself (3 of the oldest "
                           "generation), 80% of their time, with 500,000 objects tracked")
    explicit = GcFacts(passes={"2": 4}, seconds=0.4, explicit=4, explicit_s=0.4, window_s=1.0)
    assert explicit.share == 0.0 and explicit.text().endswith("; gc.collect() called in its calls ran 4 times, 40%")


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {PROBE.key: seen})


def test_precheck_rules_it_out_where_the_passes_are_negligible_or_the_code_turned_it_off():
    cause = GcPauses()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(SEEN), None) is None
    small = GcFacts(passes={"0": 3}, seconds=0.01, window_s=1.0)
    assert cause.precheck(_facts(small), None).endswith(f": under {NEGLIGIBLE_SHARE:.0%}")
    explicit = GcFacts(passes={"2": 4}, seconds=0.4, explicit=4, explicit_s=0.4, window_s=1.0)
    assert "gc.collect() called in its calls ran 4 times" in cause.precheck(_facts(explicit), None)
    assert "turned the collector off itself" in cause.precheck(_facts(GcFacts(enabled=False, window_s=1.0)), None)
    assert "times its own iterations" in cause.precheck(_facts(None), None)


def _judge(factor, seen=SEEN, fail=False):
    return judge_switched(GcPauses(), OFF, {"off": True, "calls": 16, "held": 16, "collector_on": True}, _facts(seen),
                          factor, failure="MemoryError\n..." if fail else None)


def test_named_when_the_collector_off_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.5)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("Python's garbage collector pausing the calls: with the collector off it is "
                                    "2.00× faster [95% CI")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back with the collector off" in found.message
    assert GC.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "the collector off changes nothing" in same.message
    unseen = _judge(0.5, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "the mechanism is unconfirmed" in unseen.message
    failed = _judge(1.0, fail=True)
    assert failed.status == Status.UNRESOLVED and "its call fails" in failed.message


_CHURN_FILE = """
    index = [[i] for i in range(50_000)]


    def churn():
        rows = [{"i": i, "t": (i,)} for i in range(20_000)]
        return len(rows) + len(index)
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_a_worker_runs_its_timed_calls_with_the_collector_off_and_the_probe_worker_counts_its_passes(tmp_path):
    path = tmp_path / "churn.py"
    path.write_text(textwrap.dedent(_CHURN_FILE))
    doc = runner.run_matrix(f"{path}:churn", {"iterations": 3}, {"gc": ["off"]}, progress=False, control=False)
    (run,) = doc["runs"]
    assert run["status"] == "ok", run.get("error")
    assert run["readback"]["gc"]["observed"] == {"off": True, "calls": 3, "held": 3, "collector_on": False}
    doc = runner.run_matrix(f"{path}:churn", {"iterations": 3}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(PROBE)
    assert sum(seen.passes.values()) > 3 and seen.seconds > 0 and seen.enabled and seen.tracked > 50_000
