"""The tracing cause: its control (taken off for a block and put back unless the block set its own, also after an
exception; threading's for new threads too), its setting (``tracing=off``, switched in a running process, each timed
call wrapped), its probe (the functions on over the timed iterations, through a results file) and its judgement on
synthetic explaining runs. The native core's part: tests/test_trace_functions.py. No timing is asserted: the
synthetic documents carry known factors."""

import cProfile
import json
import sys
import textwrap
import threading

import pytest

from benchctl import _timed_call, settings
from benchctl._causes.tracing import control
from benchctl._causes.tracing.probe import PROBE, TracingFacts, on, watching
from benchctl._causes.tracing.rule import FIX, TIMING_ONLY, TracingLeftOn
from benchctl._causes.tracing.setting import TRACING
from benchctl._probe import ProbedCall
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched
from tracers import counting_tracer, marker

OFF = {"tracing": "off"}
SEEN = TracingFacts(trace="tracer")
NONE_ON = TracingFacts()


@pytest.fixture(autouse=True)
def _untraced():
    assert (sys.gettrace(), sys.getprofile()) == (None, None), "a test before this one left a tracer on"
    yield
    control.restore_calls()
    sys.settrace(None)
    sys.setprofile(None)
    threading.settrace(None)
    threading.setprofile(None)


def test_set_aside_runs_no_tracer_on_before_and_puts_them_back_unless_the_block_set_its_own():
    tracer, seen = counting_tracer()
    for_threads, seen_in_threads = counting_tracer()
    sys.settrace(tracer)
    threading.settrace(for_threads)
    try:
        with control.set_aside() as taken:
            assert taken.trace is tracer and on() == TracingFacts()
            marker()
            thread = threading.Thread(target=marker)
            thread.start()
            thread.join()
        assert seen == [] and seen_in_threads == []
        assert sys.gettrace() is tracer and threading._trace_hook is for_threads
        marker()
        assert len(seen) == 1
        with pytest.raises(RuntimeError, match="the block's"), control.set_aside():
            raise RuntimeError("the block's exception")
        assert sys.gettrace() is tracer
        own, _ = counting_tracer()
        with control.set_aside():
            sys.settrace(own)  # the block's own, left on: it stays, as it would have replaced the one taken
        assert sys.gettrace() is own and threading._trace_hook is for_threads
    finally:
        sys.settrace(None)
    assert on() == TracingFacts(threads_trace="tracer")


def test_the_setting_wraps_each_timed_call_switches_and_sees_a_call_that_puts_its_tracer_back():
    tracer, seen = counting_tracer()
    assert TRACING.canonical(" OFF ") == "off" and TRACING.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        TRACING.canonical("on")
    assert settings.SETTINGS["tracing"] is TRACING and TRACING.in_process
    call = _timed_call.wrapped(marker)  # wrapped once, as the timed loop does
    sys.settrace(tracer)
    try:
        assert TRACING.apply("off") == {"set_aside": True, "on": True, "calls": 0, "held": 0}
        assert TRACING.during("off") == "code", "no call wrapped yet"
        call()
        assert seen == [] and TRACING.during("off") == "off"
        assert TRACING.switch("code") == {"set_aside": False, "on": True, "calls": 0, "held": 0}
        call()
        assert len(seen) == 1, "switched back between two calls: the next runs under the tracer"
        TRACING.switch("off")

        def puts_it_back():  # the code sets the same tracer again in each call
            sys.settrace(tracer)

        _timed_call.wrapped(puts_it_back)()
        assert TRACING.readback("off") == {"set_aside": True, "on": True, "calls": 1, "held": 0}
        assert TRACING.during("off") == "code"
        TRACING.switch("code")
        TRACING.switch("off")
        call()
        assert TRACING.facts_phrase(TRACING.facts(TRACING.readback("off"))) == \
            "every timed call read back with them taken off"
    finally:
        sys.settrace(None)


def test_the_probe_reads_the_functions_on_over_the_timed_iterations_back_through_a_results_file():
    tracer, _ = counting_tracer()
    with watching() as seen:
        sys.settrace(tracer)  # the code sets it in its first call
        marker()
    sys.settrace(None)
    found = PROBE.read(PROBE.record(ProbedCall(call=marker, watched={PROBE.key: seen})))
    assert found == TracingFacts(trace="tracer") and found.on
    assert found.text() == "a trace function (tracer) was on over its timed calls"
    profiler = cProfile.Profile()
    profiler.enable()  # on as the iterations began: a profiler the code enabled at import
    with watching() as seen:
        marker()
        profiler.disable()  # ... and turned off in a call: named by what was on as they began
    profiled = PROBE.read(PROBE.record(ProbedCall(call=marker, watched={PROBE.key: seen})))
    assert profiled == TracingFacts(profile="Profile")
    assert PROBE.record(ProbedCall(call=marker)) == {} and PROBE.record(ProbedCall()) == {}
    assert PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found
    assert TracingFacts(trace="a", threads_profile="b").text() == (
        "a trace function (a) and a profile function for new threads (b) were on over its timed calls")


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {PROBE.key: seen})


def test_precheck_rules_it_out_where_none_was_on_or_no_call_was_watched():
    cause = TracingLeftOn()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(SEEN), None) is None
    assert cause.precheck(_facts(NONE_ON), None) == NONE_ON.none_text()
    assert "times its own iterations" in cause.precheck(_facts(None), None)


def _judge(factor, seen=SEEN, during=None):
    return judge_switched(TracingLeftOn(), OFF, {"set_aside": True, "on": True, "calls": 16, "held": 16}, _facts(seen),
                          factor, during=during)


def test_named_when_taking_them_off_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.4)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("a trace or profile function left on: with its trace and profile functions "
                                    "taken off it is 2.50× faster")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back with them taken off" in found.message
    assert TRACING.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "taking its trace and profile functions off changes nothing" in \
        same.message
    unseen = _judge(0.4, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "no trace or profile function was seen on" in unseen.message
    undone = _judge(0.4, during={"held": False, "seen": "code", "samples": 16})
    assert undone.status == Status.UNRESOLVED and "the tracing=off probe was not measured" in undone.message


# --- in a worker -----------------------------------------------------------------------------------

_LEFT_ON_FILE = """
    import sys

    def traced():
        return 1

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code is traced.__code__:
            raise RuntimeError("the tracer ran")

    sys.settrace(tracer)

    def step():
        return traced()
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier fast
def test_worker_runs_each_timed_call_with_the_tracer_taken_off_and_the_probe_worker_notes_it(tmp_path):
    path = tmp_path / "left_on.py"
    path.write_text(textwrap.dedent(_LEFT_ON_FILE))
    doc = runner.run_matrix(f"{path}:step", {"iterations": 3}, {"tracing": ["off", "code"]}, progress=False,
                            control=False)
    off, code = doc["runs"] if doc["runs"][0]["cell"] == OFF else doc["runs"][::-1]
    assert off["status"] == "ok", off.get("error")
    during = off["readback"]["tracing"]["during"]
    assert (during["held"], during["seen"]) == (True, "off") and 1 <= during["samples"] <= 3
    assert off["readback"]["tracing"]["observed"] == {"set_aside": True, "on": True, "calls": 3, "held": 3}
    assert code["status"] == "failed" and "the tracer ran" in code["error"]
    path.write_text(textwrap.dedent(_LEFT_ON_FILE).replace('raise RuntimeError("the tracer ran")', "return None"))
    doc = runner.run_matrix(f"{path}:step", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(PROBE)
    assert seen == TracingFacts(trace="tracer"), seen
