"""The modes cause: its control (the modes on this thread taken off for a block and given back in their places, also
after an exception; a default device other than the CPU kept), its count of the modes' handler runs, its setting
(``modes=off``, switched in a running process, each timed call wrapped), its probe (through a results file) and its
judgement on synthetic explaining runs. No timing is asserted: the synthetic documents carry known factors."""

import json
import textwrap
from dataclasses import replace

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from benchctl import _timed_call, settings
from benchctl._causes.modes import control
from benchctl._causes.modes.probe import PROBE, ModesFacts, watching
from benchctl._causes.modes.rule import ENTERED_INSIDE, FIX_DEFAULT_DEVICE, FIX_OWN, TIMING_ONLY, ModesLeftOn
from benchctl._causes.modes.setting import MODES
from benchctl._probe import ProbedCall
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched, make_doc

OFF = {"modes": "off"}
SEEN = ModesFacts(on={"torch function": ["Counting"], "torch dispatch": []}, runs={"Counting": 40})
DEVICE = ModesFacts(on={"torch function": ["DeviceContext(cpu)"], "torch dispatch": []},
                    runs={"DeviceContext(cpu)": 40}, devices=["DeviceContext(cpu)"])
ELSEWHERE = ModesFacts(on={"torch function": ["DeviceContext(cuda)"], "torch dispatch": []},
                       kept=["DeviceContext(cuda)"], devices=["DeviceContext(cuda)"])
NONE_ON = ModesFacts(on={"torch function": [], "torch dispatch": []})


class Counting(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


class CountingOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


@pytest.fixture(autouse=True)
def _restored():
    before = control.on()
    yield
    control.restore_calls()
    assert control.on() == before, "a test left a mode on"


def _stacks():
    return {stack.kind: stack.modes() for stack in control.STACKS}


def test_suspended_takes_the_modes_off_and_gives_them_back_in_their_places():
    outer, inner, ops = Counting(), Counting(), CountingOps()
    x = torch.ones(3)
    with outer, inner, ops:
        assert _stacks() == {"torch function": [outer, inner], "torch dispatch": [ops]}
        with control.suspended() as taken:
            assert _stacks() == {"torch function": [], "torch dispatch": []}
            assert taken == {control.FUNCTION: [outer, inner], control.DISPATCH: [ops]}
            x + 1
        assert (outer.calls, inner.calls, ops.ops) == (0, 0, 0), "no handler ran inside the block"
        assert _stacks() == {"torch function": [outer, inner], "torch dispatch": [ops]}
        with pytest.raises(RuntimeError, match="the block's"), control.suspended():
            raise RuntimeError("the block's exception")
        assert _stacks() == {"torch function": [outer, inner], "torch dispatch": [ops]}
        left = Counting()
        with control.suspended():
            left.__enter__()  # the block enters a mode and does not leave it: it stays on, above the others
        assert _stacks()["torch function"] == [outer, inner, left]
        left.__exit__(None, None, None)
        x + 1
        assert inner.calls == 1 and ops.ops == 1


def test_a_default_device_on_the_cpu_is_taken_off_and_one_elsewhere_kept():
    from torch.utils._device import DeviceContext

    cpu, meta, own = DeviceContext("cpu"), DeviceContext("meta"), Counting()
    assert control.mode_name(cpu) == "DeviceContext(cpu)" and control.mode_name(own) == "Counting"
    assert control.sets_device(cpu) and control.sets_device(meta) and not control.sets_device(own)
    assert control.switchable(cpu) and control.switchable(own) and not control.switchable(meta)
    with meta, own:
        with watching() as tally:
            pass
        assert tally.note() == {"on": {"torch function": ["DeviceContext(meta)", "Counting"], "torch dispatch": []},
                                "kept": ["DeviceContext(meta)"], "devices": ["DeviceContext(meta)"], "runs": {},
                                "entered": {}}
        with control.suspended() as taken:
            assert _stacks()["torch function"] == [meta], "the meta device's mode kept"
            assert torch.ones(2).device.type == "meta"
            assert taken[control.FUNCTION] == [own]
        assert _stacks()["torch function"] == [meta, own]
    with cpu:
        with control.suspended():
            assert _stacks()["torch function"] == []
        assert _stacks()["torch function"] == [cpu]


def test_watching_counts_each_modes_handler_runs_and_gives_the_handlers_back():
    fn, ops = Counting(), CountingOps()
    own_fn, own_ops = Counting.__dict__["__torch_function__"], CountingOps.__dict__["__torch_dispatch__"]
    x = torch.ones(3)
    with fn, ops:
        with watching() as tally:
            (x + 1).sum()
    assert Counting.__dict__["__torch_function__"] is own_fn and CountingOps.__dict__["__torch_dispatch__"] is own_ops
    assert tally.on == {"torch function": ["Counting"], "torch dispatch": ["CountingOps"]} and tally.kept == []
    assert tally.runs["Counting"] == fn.calls >= 2 and tally.runs["CountingOps"] == ops.ops >= 2
    with watching() as tally:
        x + 1
    assert tally.note() == {"on": {"torch function": [], "torch dispatch": []}, "kept": [], "devices": [], "runs": {},
                            "entered": {}}
    with fn, pytest.raises(ValueError), watching():
        raise ValueError("boom")
    assert Counting.__dict__["__torch_function__"] is own_fn


def test_the_setting_takes_the_modes_off_from_the_first_timed_call_until_switched_back():
    mode, x = Counting(), torch.ones(3)
    assert MODES.canonical(" OFF ") == "off" and MODES.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        MODES.canonical("none")
    assert settings.SETTINGS["modes"] is MODES and MODES.in_process and MODES.during("code") is None
    call = _timed_call.wrapped(lambda: x + 1)  # wrapped once, as the timed loop does
    with mode:
        applied = MODES.apply("off")
        assert applied == {"suspending": True, "calls": 0, "held": 0,
                           "on": {"torch function": ["Counting"], "torch dispatch": []}}, "off from the first call"
        assert MODES.during("off") == "code", "no call made yet"
        call()
        assert mode.calls == 0 and MODES.during("off") == "off"
        assert _stacks()["torch function"] == [], "off between the calls too: no switch inside their time"
        assert MODES.switch("code")["on"] == {"torch function": ["Counting"], "torch dispatch": []}
        call()
        assert mode.calls == 1, "switched back between two calls: the next runs the mode"
        MODES.switch("off")

        def enters_again():  # the code puts the same mode on once more and leaves it on
            mode.__enter__()
            return x + 1

        call()
        _timed_call.wrapped(enters_again)()
        assert MODES.readback("off")["calls"] == 2 and MODES.readback("off")["held"] == 1
        assert MODES.during("off") == "code"
        MODES.switch("code")
        assert _stacks()["torch function"] == [mode, mode], "the code's own entry stays on, above"
        mode.__exit__(None, None, None)
        MODES.switch("off")
        call()
        assert MODES.facts_phrase(MODES.facts(MODES.readback("off"))) == "every timed call read back with them off"
        with pytest.raises(ValueError):
            _timed_call.wrapped(lambda: (_ for _ in ()).throw(ValueError("the call's")))()
        assert MODES.readback("off")["calls"] == 1, "a call that raised is not counted"
        MODES.switch("code")
        assert _stacks()["torch function"] == [mode]


def test_the_probe_reads_its_count_back_through_a_results_file():
    mode, x = Counting(), torch.ones(3)
    with mode:
        with watching() as tally:
            x + 1
    note = PROBE.record(ProbedCall(call=lambda: x + 1, called={PROBE.key: tally}))
    found = PROBE.read(note)
    assert found.switchable == ["Counting"]
    assert found.text() == ("in its profiled call, on from its start: Counting (torch function mode, its "
                            "__torch_function__ run 1 times)")
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {PROBE.key: seen})


def test_watching_names_the_modes_the_call_enters_itself_and_counts_their_handlers():
    from torch.utils import _python_dispatch
    from torch.utils.flop_counter import FlopCounterMode

    push = _python_dispatch._push_mode
    x = torch.ones(8, 8)
    with watching() as tally:
        with CountingOps() as ops:  # entered inside the watched block, as a step would
            x @ x
        with FlopCounterMode(display=False):  # torch's own tool, chosen by the code: counted
            x @ x
        with torch._subclasses.fake_tensor.FakeTensorMode():  # torch's machinery: not counted
            pass
    assert _python_dispatch._push_mode is push and CountingOps.__dict__["__torch_dispatch__"].__name__ != "counted"
    entered = dict(tally.entered["torch dispatch"])
    assert entered.pop("CountingOps") == 1 and list(entered) == ["_FlopCounterMode"]  # the mode FlopCounterMode pushes
    assert tally.runs["CountingOps"] == ops.ops >= 1
    facts = ModesFacts.from_note(tally.note())
    assert facts.switchable == [] and facts.entered_text().startswith(
        f"its call entered CountingOps (torch dispatch mode, 1 time; its __torch_dispatch__ run {ops.ops} times)")


ENTERED = ModesFacts(on={"torch function": [], "torch dispatch": []}, runs={"Logged": 48},
                     entered={"torch dispatch": {"Logged": 1}})


def test_a_mode_entered_inside_the_call_is_named_open_without_a_probe_cell():
    from benchctl._results.facts import OpRow

    cause = ModesLeftOn()
    facts = replace(_facts(ENTERED), op_table=(OpRow("aten::mm", ("float",), 8, 400.0),))  # a profiled call
    assert cause.precheck(facts, None) is None and cause.probes(facts) == []
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True))
    (found,) = cause.judge(rules.Context(doc, "call", queries.Comparisons(doc), facts=facts))
    assert found.status == Status.UNCONFIRMED and found.mark == "?", found.message
    assert ("no torch function or dispatch mode was on as its profiled call started; its call entered Logged (torch "
            "dispatch mode, 1 time; its __torch_dispatch__ run 48 times) itself") in found.message
    assert found.message.endswith(ENTERED_INSIDE)


def test_precheck_rules_it_out_with_no_mode_on_or_only_a_device_elsewhere():
    cause = ModesLeftOn()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(SEEN), None) is None and cause.precheck(_facts(DEVICE), None) is None
    assert cause.precheck(_facts(NONE_ON), None) == ("no torch function or dispatch mode was on as its profiled call "
                                                     "started")
    assert "DeviceContext(cuda)" in cause.precheck(_facts(ELSEWHERE), None)
    assert "times its own iterations" in cause.precheck(_facts(None), None)


def _judge(factor, seen=SEEN, fail=False):
    return judge_switched(ModesLeftOn(), OFF, {"suspending": True, "calls": 16, "held": 16}, _facts(seen), factor,
                          failure="RuntimeError: no default device\n..." if fail else None)


def test_named_when_off_makes_it_faster_with_the_fix_for_its_kind_of_mode():
    found = _judge(0.5)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("torch function / dispatch modes left on: with Counting off it is 2.00× faster")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back with them off" in found.message
    assert MODES.mechanism in found.message and found.message.endswith(FIX_OWN)
    device = _judge(0.5, seen=DEVICE)
    assert device.status == Status.CAUSE and device.message.endswith(FIX_DEFAULT_DEVICE)
    assert TIMING_ONLY not in device.message, "without the default device's mode the call computes the same"
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "its modes off changes nothing" in same.message
    unseen = _judge(0.5, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "the mechanism is unconfirmed" in unseen.message
    failed = _judge(1.0, fail=True)
    assert failed.status == Status.UNRESOLVED and "with its modes off its call fails" in failed.message


_MODE_FILE = """
    import torch
    from torch.overrides import TorchFunctionMode


    class Tagging(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func is torch.Tensor.add:
                raise RuntimeError("ran under the mode")
            return out


    Tagging().__enter__()  # left on from import
    x = torch.ones(4)


    def step():
        return torch.Tensor.add(x, 1)


    def quiet():
        return (x * 2).sum()
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_a_worker_runs_each_timed_call_with_the_modes_off_and_the_probe_worker_counts(tmp_path):
    path = tmp_path / "mode_on.py"
    path.write_text(textwrap.dedent(_MODE_FILE))
    before = len(control.FUNCTION.modes())
    try:
        doc = runner.run_matrix(f"{path}:step", {"iterations": 3}, {"modes": ["off", "code"]}, progress=False,
                                control=False)
        probed = runner.run_matrix(f"{path}:quiet", {"iterations": 2}, {}, progress=False, control=False,
                                   probe=True)
    finally:  # the runner imports the file here too, to check its target: its mode is left on in this process
        while len(control.FUNCTION.modes()) > before:
            control.FUNCTION.pop()
    off, code = doc["runs"] if doc["runs"][0]["cell"] == OFF else doc["runs"][::-1]
    assert off["status"] == "ok", off.get("error")
    observed = off["readback"]["modes"]["observed"]
    assert (observed["calls"], observed["held"]) == (3, 3)
    assert code["status"] == "failed" and "ran under the mode" in code["error"]
    seen = Facts.from_probe(probed).of(PROBE)
    assert seen.switchable == ["Tagging"] and seen.runs["Tagging"] >= 2, seen  # a mul and a sum at least
