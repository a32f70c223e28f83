"""The autograd-profiler-left-on cause: its control (profiler starts counted or refused, torch's functions
given back), its setting (``profiler=off``), its probe (the sessions the code started over the timed
iterations, through a results file) and its judgement on synthetic explaining runs."""

import json

import pytest
import torch

from benchctl import settings
from benchctl._probe import ProbedCall
from benchctl._causes.profiler import control
from benchctl._causes.profiler.probe import PROBE, ProfilerFacts
from benchctl._causes.profiler.rule import FIX, ProfilerLeftOn
from benchctl._causes.profiler.setting import PROFILER
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc

OFF = {"profiler": "off"}


def _step(x):
    (x * 2).sum().backward()


@pytest.fixture(autouse=True)
def _released():
    yield
    control.release()


def test_counting_sees_every_kind_of_profiler_start_and_gives_torchs_functions_back():
    import torch.autograd.profiler as profiler

    before = profiler._enable_profiler
    x = torch.randn(4, 4, requires_grad=True)
    with control.counting() as guard:
        with torch.profiler.profile():
            assert control.is_on()
            _step(x)
        with torch.autograd.profiler.profile():
            _step(x)
        assert guard.starts == 2
    assert profiler._enable_profiler is before and not control.is_on()
    with pytest.raises(RuntimeError), control.counting():
        raise RuntimeError("the block's exception")
    assert profiler._enable_profiler is before


def test_kept_off_refuses_every_start_and_reads_back_what_it_refused():
    x = torch.randn(4, 4, requires_grad=True)
    assert PROFILER.apply("off") == {"enabled": False, "kept_off": True, "refused": 0, "stopped": 0}
    with torch.profiler.profile():
        assert not control.is_on()
        assert PROFILER.during("off") == "off"
        _step(x)
    back = PROFILER.readback("off")
    assert back == {"enabled": False, "kept_off": True, "refused": 1, "stopped": 0}
    assert PROFILER.facts_phrase(PROFILER.facts(back)) == "kept off against 1 profiler start of the code"
    assert PROFILER.during("code") is None


def test_the_setting_takes_code_or_off_and_switches_in_a_running_process():
    assert PROFILER.canonical(" OFF ") == "off" and PROFILER.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        PROFILER.canonical("on")
    assert settings.SETTINGS["profiler"] is PROFILER and PROFILER.in_process
    assert PROFILER.carries_over, "a session stopped as it is applied cannot be started again: never paired"


def test_kept_off_stops_a_session_the_code_started_before_it_and_the_codes_stop_finds_nothing():
    # torch.profiler.profile().start() at import, never stopped: the worker applies profiler=off after the import,
    # and the session recorded every timed call ("the code set profiler=on during the timed iterations").
    x = torch.randn(4, 4, requires_grad=True)
    left_on = torch.profiler.profile()
    left_on.start()
    try:
        assert control.is_on()
        back = PROFILER.apply("off")
        assert back == {"enabled": False, "kept_off": True, "refused": 0, "stopped": 1}
        _step(x)
        assert PROFILER.during("off") == "off"
        assert PROFILER.facts_phrase(PROFILER.facts(back)) == (
            "its session recording from before the timed calls (started at its import) stopped, read back off after "
            "the run")
    finally:
        PROFILER.apply("code")
        left_on.stop()  # finds nothing running: no error
    assert not control.is_on()


def test_the_probe_counts_the_sessions_of_the_timed_iterations_through_a_results_file():
    x = torch.randn(4, 4, requires_grad=True)
    with PROBE.watch() as seen:
        for _ in range(3):
            with torch.profiler.profile():
                _step(x)
    note = PROBE.record(ProbedCall(watched={PROBE.key: seen}))
    found = PROBE.read(note)
    assert found == ProfilerFacts(starts=3, on_before=False) and found.seen_on
    assert "started the profiler 3 times" in found.text()
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found
    with torch.profiler.profile():  # a session started before the iterations, never stopped in them
        with PROBE.watch() as running:
            _step(x)
    assert PROBE.read(PROBE.record(ProbedCall(watched={PROBE.key: running}))).on_before


def _facts(starts):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={PROBE.key: ProfilerFacts(starts)})


def _judge(factor, starts=40, refused=40):
    def readback(cell):
        if cell["with"] != OFF:
            return {}
        observed = {"enabled": False, "kept_off": True, "refused": refused}
        return {"profiler": {"requested": "off", "applied": observed, "observed": observed}}

    doc = analyse(make_doc({"with": [{}, OFF]}, factor=lambda c: factor if c["with"] == OFF else 1.0,
                           readback=readback, phase="call", control=True))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(starts))
    return ProfilerLeftOn().judge_phase(ctx)


def test_precheck_rules_it_out_where_no_session_ran():
    cause = ProfilerLeftOn()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(5), None) is None
    assert "no profiler session ran" in cause.precheck(_facts(0), None)
    assert cause.precheck(Facts(), None) is None  # not watched: nothing rules it out


def test_named_when_keeping_it_off_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.3)
    assert found.status == Status.CAUSE and found.explains, found.message
    assert "with the profiler kept off it is 3.33× faster" in found.message
    assert "the code started the profiler 40 times over its timed iterations" in found.message
    assert "kept off against 40 profiler starts of the code" in found.message
    assert PROFILER.mechanism in found.message and FIX in found.message
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE, same.message
    unseen = _judge(0.3, starts=0, refused=0)
    assert unseen.status == Status.UNCONFIRMED and "no profiler session was seen" in unseen.message


def test_inside_benchctls_own_session_the_codes_profiler_neither_takes_it_over_nor_ends_it():
    from benchctl._workloads import op_table

    x = torch.randn(4, 4, requires_grad=True)

    def probe_session(inner):
        with torch.profiler.profile() as outer:
            with inner() as seen:
                with torch.profiler.profile():
                    _step(x)
            with torch.profiler.record_function(op_table.INTACT_MARK):
                pass
        return outer.events(), seen

    import contextlib

    events, seen = probe_session(control.nested_off)
    assert seen.starts == 1 and op_table.intact(events)
    assert "aten::mul" in {e.name for e in events}
    assert op_table.INTACT_MARK not in {r["op"] for r in op_table.rows(events)}
    # Left alone, the code's session takes the probe's over: the mark says so.
    events, _ = probe_session(contextlib.nullcontext)
    assert not op_table.intact(events)
