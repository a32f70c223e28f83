"""The mkldnn-turned-off cause: its control (the code's calls counted or refused, whichever way it turns the
kernels off; torch's setters given back), its setting (``mkldnn=on``, switched in a running process), its probe
(the flag over the timed iterations, through a results file) and its judgement on synthetic explaining runs."""

import json

import pytest
import torch

from benchctl import settings
from benchctl._probe import ProbedCall
from benchctl._causes.mkldnn import control
from benchctl._causes.mkldnn.probe import PROBE, MkldnnFacts
from benchctl._causes.mkldnn.rule import FIX, MkldnnOff
from benchctl._causes.mkldnn.setting import MKLDNN
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts, OpRow
from benchctl._results.findings import Status
from synthetic_results import make_doc

ON = {"mkldnn": "on"}


@pytest.fixture(autouse=True)
def _released():
    yield
    control.release()
    torch.backends.mkldnn.enabled = True


def _setter():
    return type(torch.backends.mkldnn).__dict__["enabled"].setter


def test_counting_sees_every_way_the_code_turns_it_off_and_gives_torchs_setters_back():
    before = torch._C._set_mkldnn_enabled, _setter()
    with control.counting() as count:
        torch.backends.mkldnn.enabled = False
        assert not control.is_enabled()
        torch.backends.mkldnn.enabled = True
        with torch.backends.mkldnn.flags(enabled=False):
            assert not control.is_enabled()
        assert count.asked == 2
    assert (torch._C._set_mkldnn_enabled, _setter()) == before and control.is_enabled()
    with pytest.raises(RuntimeError), control.counting():
        raise RuntimeError("the block's exception")
    assert (torch._C._set_mkldnn_enabled, _setter()) == before


def test_kept_on_refuses_every_call_and_reads_back_what_it_refused():
    assert MKLDNN.apply("on") == {"enabled": True, "kept_on": True, "refused": 0}
    torch.backends.mkldnn.enabled = False
    with torch.backends.mkldnn.flags(enabled=False):
        assert control.is_enabled() and MKLDNN.during("on") == "on"
    back = MKLDNN.readback("on")
    assert back == {"enabled": True, "kept_on": True, "refused": 2}
    assert MKLDNN.facts_phrase(MKLDNN.facts(back)) == "kept on against 2 calls of the code that turned it off"
    assert MKLDNN.during("code") is None


def test_switch_puts_back_what_the_code_had_set():
    torch.backends.mkldnn.enabled = False
    assert MKLDNN.switch("on") == {"enabled": True, "kept_on": True, "refused": 0}
    assert MKLDNN.switch("on")["kept_on"]  # switching to the value it holds changes nothing
    assert MKLDNN.switch("code") == {"enabled": False, "kept_on": False, "refused": 0}
    assert not isinstance(torch._C._set_mkldnn_enabled, control.Guard) and not isinstance(_setter(), control.Guard)


def test_the_setting_takes_code_or_on():
    assert MKLDNN.canonical(" ON ") == "on" and MKLDNN.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, on"):
        MKLDNN.canonical("off")
    assert settings.SETTINGS["mkldnn"] is MKLDNN and MKLDNN.in_process


def test_the_probe_reads_the_flag_over_the_timed_iterations_through_a_results_file():
    with PROBE.watch() as seen:
        for _ in range(3):
            with torch.backends.mkldnn.flags(enabled=False):
                pass
    found = PROBE.read(PROBE.record(ProbedCall(watched={PROBE.key: seen})))
    assert found == MkldnnFacts(available=control.available(), off_before=False, off_after=False, asked=3)
    assert "the code turned mkldnn off 3 times" in found.text()
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found
    torch.backends.mkldnn.enabled = False  # set in setup(), off as the iterations begin
    with PROBE.watch() as running:
        pass
    off = PROBE.read(PROBE.record(ProbedCall(watched={PROBE.key: running})))
    assert off.off_before and off.off_after


def _facts(seen, ops=()):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={PROBE.key: seen},
                 op_table=tuple(OpRow(op, calls=1, self_us=10.0) for op in ops))


OFF = MkldnnFacts(off_before=True, off_after=True)


def _judge(factor, seen=OFF, refused=1, ops=("aten::slow_conv_dilated2d", "aten::relu")):
    def readback(cell):
        if cell["with"] != ON:
            return {}
        observed = {"enabled": True, "kept_on": True, "refused": refused}
        return {"mkldnn": {"requested": "on", "applied": observed, "observed": observed}}

    doc = analyse(make_doc({"with": [{}, ON]}, factor=lambda c: factor if c["with"] == ON else 1.0,
                           readback=readback, phase="call", control=True))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(seen, ops))
    return MkldnnOff().judge_phase(ctx)


def test_precheck_rules_it_out_where_the_kernels_were_on_or_not_built():
    cause = MkldnnOff()
    assert cause.probes(None) == [ON]
    assert cause.precheck(_facts(OFF), None) is None
    assert cause.precheck(_facts(MkldnnFacts(asked=2)), None) is None
    on = cause.precheck(_facts(MkldnnFacts()), None)
    assert on == "mkldnn on over the probe worker's timed iterations, nothing to probe"
    assert "built without mkldnn" in cause.precheck(_facts(MkldnnFacts(available=False, off_before=True)), None)
    assert cause.precheck(Facts(), None) is None  # not watched: nothing rules it out


def test_named_when_keeping_it_on_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.25)
    assert found.status == Status.CAUSE and found.explains, found.message
    assert "with mkldnn kept on it is 4.00× faster" in found.message
    assert "mkldnn was off as the timed iterations began" in found.message
    assert "kept on against 1 call of the code that turned it off" in found.message
    assert "its profiled call ran aten::slow_conv_dilated2d:" in found.message
    assert MKLDNN.mechanism in found.message and FIX in found.message
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE, same.message
    unseen = _judge(0.25, seen=MkldnnFacts(), refused=0)
    assert unseen.status == Status.UNCONFIRMED and "it was not seen off" in unseen.message
