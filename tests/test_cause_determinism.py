"""The deterministic-mode-left-on cause: its control (the code's calls counted or refused, torch's setter given
back), its setting (``deterministic=off``, switched in a running process), its probe (the mode over the timed
iterations, through a results file) and its judgement on synthetic explaining runs."""

import json

import pytest
import torch

from benchctl import settings
from benchctl._probe import ProbedCall
from benchctl._causes.determinism import control
from benchctl._causes.determinism.probe import PROBE, DeterminismFacts
from benchctl._causes.determinism.rule import FIX, DeterministicLeftOn
from benchctl._causes.determinism.setting import DETERMINISTIC
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc

OFF = {"deterministic": "off"}


@pytest.fixture(autouse=True)
def _released():
    yield
    control.release()
    torch.use_deterministic_algorithms(False)


def test_counting_sees_every_way_the_code_turns_it_on_and_gives_torchs_setter_back():
    before = torch._C._set_deterministic_algorithms
    with control.counting() as count:
        torch.use_deterministic_algorithms(True)
        assert control.is_on()
        torch.use_deterministic_algorithms(False)
        torch.set_deterministic_debug_mode("warn")
        assert control.is_on() and control.warn_only()
        assert count.asked == 2
    assert torch._C._set_deterministic_algorithms is before
    with pytest.raises(RuntimeError), control.counting():
        raise RuntimeError("the block's exception")
    assert torch._C._set_deterministic_algorithms is before


def test_kept_off_refuses_every_call_and_reads_back_what_it_refused():
    assert DETERMINISTIC.apply("off") == {"enabled": False, "kept_off": True, "refused": 0}
    torch.use_deterministic_algorithms(True)
    torch.set_deterministic_debug_mode("error")
    assert not control.is_on() and DETERMINISTIC.during("off") == "off"
    back = DETERMINISTIC.readback("off")
    assert back == {"enabled": False, "kept_off": True, "refused": 2}
    phrase = DETERMINISTIC.facts_phrase(DETERMINISTIC.facts(back))
    assert phrase == "kept off against 2 calls of the code that turned it on"
    assert DETERMINISTIC.during("code") is None


def test_the_mode_on_fills_new_memory_as_the_cause_says():
    torch.use_deterministic_algorithms(True)
    assert torch.empty(64).isnan().all()


def test_switch_puts_back_what_the_code_had_set():
    torch.use_deterministic_algorithms(True, warn_only=True)
    assert DETERMINISTIC.switch("off")["kept_off"] and not control.is_on()
    assert DETERMINISTIC.switch("off")["kept_off"]  # switching to the value it holds changes nothing
    after = DETERMINISTIC.switch("code")
    assert after == {"enabled": True, "kept_off": False, "refused": 0} and control.warn_only()
    assert not isinstance(torch._C._set_deterministic_algorithms, control.Guard)
    torch.use_deterministic_algorithms(False)  # the guard is out: the code's own call is torch's again
    assert not control.is_on()


def test_the_setting_takes_code_or_off():
    assert DETERMINISTIC.canonical(" OFF ") == "off" and DETERMINISTIC.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        DETERMINISTIC.canonical("on")
    assert settings.SETTINGS["deterministic"] is DETERMINISTIC and DETERMINISTIC.in_process


def test_the_probe_reads_the_mode_over_the_timed_iterations_through_a_results_file():
    with PROBE.watch() as seen:
        for _ in range(3):
            torch.use_deterministic_algorithms(True)
            torch.use_deterministic_algorithms(False)
    found = PROBE.read(PROBE.record(ProbedCall(watched={PROBE.key: seen})))
    assert found == DeterminismFacts(on_before=False, on_after=False, asked=3, warn_only=False, fills=True)
    assert found.seen_on and "turned torch's deterministic mode on 3 times" in found.text()
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found
    torch.use_deterministic_algorithms(True)  # set in setup(), on as the iterations begin
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        with PROBE.watch() as running:
            pass
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = True
    on = PROBE.read(PROBE.record(ProbedCall(watched={PROBE.key: running})))
    assert on.on_before and on.on_after and not on.fills and "fill_uninitialized_memory off" in on.text()


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={PROBE.key: seen})


ON = DeterminismFacts(on_before=True, on_after=True)


def _judge(factor, seen=ON, refused=1):
    def readback(cell):
        if cell["with"] != OFF:
            return {}
        observed = {"enabled": False, "kept_off": True, "refused": refused}
        return {"deterministic": {"requested": "off", "applied": observed, "observed": observed}}

    doc = analyse(make_doc({"with": [{}, OFF]}, factor=lambda c: factor if c["with"] == OFF else 1.0,
                           readback=readback, phase="call", control=True))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(seen))
    return DeterministicLeftOn().judge_phase(ctx)


def test_precheck_rules_it_out_where_the_mode_was_off():
    cause = DeterministicLeftOn()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(ON), None) is None
    assert cause.precheck(_facts(DeterminismFacts(asked=1)), None) is None
    assert "deterministic mode was off" in cause.precheck(_facts(DeterminismFacts()), None)
    assert cause.precheck(Facts(), None) is None  # not watched: nothing rules it out


def test_named_when_keeping_it_off_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.25)
    assert found.status == Status.CAUSE and found.explains, found.message
    assert "with the deterministic mode kept off it is 4.00× faster" in found.message
    assert "on as the timed iterations began, filling new memory" in found.message
    assert "kept off against 1 call of the code that turned it on" in found.message
    assert DETERMINISTIC.mechanism in found.message and FIX in found.message
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE, same.message
    unseen = _judge(0.25, seen=DeterminismFacts(), refused=0)
    assert unseen.status == Status.UNCONFIRMED and "it was not seen on" in unseen.message
