"""The saved-tensor hooks cause: its control (the hooks on before a block set aside for it and put back under what
the block left, also after an exception or with the hooks disabled), its setting (``saved_hooks=off``, switched in a
running process, each timed call wrapped), its probe (the tensors the hooks packed in one call, through a results
file) and its judgement on synthetic explaining runs. No timing is asserted: the synthetic documents carry known
factors."""

import json
import textwrap

import pytest
import torch

from benchctl import _timed_call, settings
from benchctl._causes.saved_hooks import control
from benchctl._causes.saved_hooks.probe import PROBE, SavedHooksFacts, census
from benchctl._causes.saved_hooks.rule import FIX, TIMING_ONLY, SavedHooksLeftOn
from benchctl._causes.saved_hooks.setting import SAVED_HOOKS
from benchctl._probe import ProbedCall
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched

OFF = {"saved_hooks": "off"}
SEEN = SavedHooksFacts(on=1, packs=64, names={"pack": 64}, on_top="pack")
NONE_ON = SavedHooksFacts(on=0, packs=0)
NONE_PACKED = SavedHooksFacts(on=1, packs=0, on_top="pack")


@pytest.fixture(autouse=True)
def _clean_stack():
    assert control.stack() == [], "a test before this one left a saved-tensor hook on"
    yield
    control.restore_calls()
    while torch._C._autograd._top_saved_tensors_default_hooks(True) is not None:
        torch._C._autograd._pop_saved_tensors_default_hooks()


def _step():
    """A training step of one Linear, the packs its hooks saw (by name) and the hook pair that counts them."""
    g = torch.Generator().manual_seed(0)
    model, x = torch.nn.Linear(4, 4), torch.randn(2, 4, generator=g)
    packed = []

    def pack(t):
        packed.append("left on")
        return t.detach().clone()

    def unpack(t):
        return t

    def step():
        model(x).relu().sum().backward()

    return step, packed, (pack, unpack)


def test_set_aside_runs_no_hook_on_before_and_puts_them_back_under_what_the_block_left():
    step, packed, (pack, unpack) = _step()
    outer = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
    outer.__enter__()
    try:
        step()
        assert len(packed) >= 2, "the left-on hook packs the saved tensors"
        packed.clear()
        own = []
        with control.set_aside() as found:
            assert [p for p, _ in found] == [pack] and control.stack() == []
            step()
            with torch.autograd.graph.saved_tensors_hooks(lambda t: own.append(1) or t, lambda t: t):
                step()  # the code's own hooks, entered and exited inside: they run
            leaked = torch.autograd.graph.save_on_cpu()
            leaked.__enter__()  # pushed inside and not popped: stays, on top of what comes back
        assert packed == [] and len(own) >= 2
        assert [p for p, _ in control.stack()][1:] == [pack] and len(control.stack()) == 2
        leaked.__exit__(None, None, None)
        with pytest.raises(RuntimeError, match="the block's"), control.set_aside():
            raise RuntimeError("the block's exception")
        assert [p for p, _ in control.stack()] == [pack]
        step()
        assert packed, "the hook runs again after the block"
    finally:
        outer.__exit__(None, None, None)
    assert control.stack() == []


def test_set_aside_puts_the_hooks_back_where_the_code_disabled_them():
    step, _, (pack, unpack) = _step()
    torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)
    # As written, the code's disable would raise with the hook on; set aside, it raises as the hook comes back.
    with pytest.raises(RuntimeError, match="the code's message"), control.set_aside():
        torch._C._autograd._saved_tensors_hooks_disable("the code's message")
    try:
        assert [p for p, _ in control.stack()] == [pack]
        assert not torch._C._autograd._saved_tensors_hooks_is_enabled()
        assert torch._C._autograd._saved_tensors_hooks_get_disabled_error_message() == "the code's message"
    finally:
        torch._C._autograd._saved_tensors_hooks_enable()


def test_census_counts_the_tensors_the_hooks_on_before_the_call_packed():
    step, packed, (pack, unpack) = _step()
    assert census(step, top=2) == {"on": 0, "packs": 0, "names": {}, "on_top": None}
    assert packed == []
    torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)

    def with_its_own():
        step()
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            step()  # its own hook packs these: not counted

    note = census(with_its_own, top=2)
    assert note["on"] == 1 and note["on_top"].endswith("pack") and note["packs"] == len(packed) >= 2
    assert note["names"] == {note["on_top"]: len(packed)}
    assert [p for p, _ in control.stack()] == [pack], "the counting wrapper taken out again"

    def fails():
        raise ValueError("boom")

    assert census(fails, top=2) == {"error": "ValueError: boom"}
    assert [p for p, _ in control.stack()] == [pack]


def test_the_setting_wraps_each_timed_call_switches_and_sees_a_call_that_puts_a_hook_back():
    step, packed, (pack, unpack) = _step()
    assert SAVED_HOOKS.canonical(" OFF ") == "off" and SAVED_HOOKS.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        SAVED_HOOKS.canonical("on")
    assert settings.SETTINGS["saved_hooks"] is SAVED_HOOKS and SAVED_HOOKS.in_process
    torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)
    call = _timed_call.wrapped(step)  # wrapped once, as the timed loop does
    assert SAVED_HOOKS.apply("off") == {"set_aside": True, "on": 1, "calls": 0, "held": 0}
    assert SAVED_HOOKS.during("off") == "code", "no call wrapped yet"
    call()
    assert packed == [] and SAVED_HOOKS.during("off") == "off"
    assert SAVED_HOOKS.switch("code") == {"set_aside": False, "on": 1, "calls": 0, "held": 0}
    call()
    assert packed, "switched back between two calls: the next packs through the hook"
    SAVED_HOOKS.switch("off")

    def puts_it_back():  # the code enters the same hook again in each call, and never exits it
        torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)
        step()

    _timed_call.wrapped(puts_it_back)()
    assert SAVED_HOOKS.readback("off") == {"set_aside": True, "on": 2, "calls": 1, "held": 0}
    assert SAVED_HOOKS.during("off") == "code"
    assert SAVED_HOOKS.facts_phrase(SAVED_HOOKS.facts(SAVED_HOOKS.readback("off"))) == ""
    SAVED_HOOKS.switch("code")
    SAVED_HOOKS.switch("off")
    call()
    assert SAVED_HOOKS.facts_phrase(SAVED_HOOKS.facts(SAVED_HOOKS.readback("off"))) == \
        "every timed call read back with them set aside"


def test_the_probe_reads_its_census_back_through_a_results_file():
    step, packed, (pack, unpack) = _step()
    torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)
    found = PROBE.read(PROBE.record(ProbedCall(call=step)))
    assert found.packed and found.on == 1 and found.packs == len(packed)
    name = found.on_top
    assert name == "pack"  # its own name, not the enclosing function's
    assert found.text() == (f"in its probe call, a saved-tensor hook on before the call ({name} ×{len(packed)}) "
                            f"packed {len(packed)} tensors autograd saved for backward")
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {PROBE.key: seen})


def test_precheck_rules_it_out_where_no_hook_was_on_or_none_packed_or_no_call_was_watched():
    cause = SavedHooksLeftOn()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(SEEN), None) is None
    assert cause.precheck(_facts(NONE_ON), None) == "no saved-tensor hook was on as its probe call began"
    assert cause.precheck(_facts(NONE_PACKED), None) == (
        "a saved-tensor hook was on as its probe call began (pack), yet it packed no tensor (autograd saved none "
        "for backward)")
    assert "times its own iterations" in cause.precheck(_facts(None), None)
    assert cause.precheck(_facts(SavedHooksFacts(error="RuntimeError: x")), None) is None


def _judge(factor, seen=SEEN, during=None):
    return judge_switched(SavedHooksLeftOn(), OFF, {"set_aside": True, "on": 1, "calls": 16, "held": 16}, _facts(seen),
                          factor, during=during)


def test_named_when_setting_them_aside_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.7)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("saved-tensor hooks left on: with its saved-tensor hooks set aside it is 1.43× "
                                    "faster")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back with them set aside" in found.message
    assert SAVED_HOOKS.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "setting its saved-tensor hooks aside changes nothing" in same.message
    unseen = _judge(0.7, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "no saved-tensor hook was seen packing a tensor" in unseen.message
    undone = _judge(0.7, during={"held": False, "seen": "code", "samples": 16})
    assert undone.status == Status.UNRESOLVED and "the saved_hooks=off probe was not measured" in undone.message


# --- in a worker -----------------------------------------------------------------------------------

_LEFT_ON_FILE = """
    import torch

    model = torch.nn.Linear(4, 4)

    def fail(tensor):
        raise RuntimeError("the pack hook ran")

    torch.autograd.graph.saved_tensors_hooks(fail, lambda t: t).__enter__()

    def train():
        model(torch.ones(1, 4)).sum().backward()
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier fast
def test_worker_runs_each_timed_call_with_the_hooks_set_aside_and_the_probe_worker_notes_them(tmp_path):
    path = tmp_path / "left_on.py"
    path.write_text(textwrap.dedent(_LEFT_ON_FILE))
    doc = runner.run_matrix(f"{path}:train", {"iterations": 3}, {"saved_hooks": ["off", "code"]}, progress=False,
                            control=False)
    off, code = doc["runs"] if doc["runs"][0]["cell"] == OFF else doc["runs"][::-1]
    assert off["status"] == "ok", off.get("error")
    during = off["readback"]["saved_hooks"]["during"]
    assert (during["held"], during["seen"]) == (True, "off") and 1 <= during["samples"] <= 3
    assert off["readback"]["saved_hooks"]["observed"] == {"set_aside": True, "on": 1, "calls": 3, "held": 3}
    assert code["status"] == "failed" and "the pack hook ran" in code["error"]
    path.write_text(textwrap.dedent(_LEFT_ON_FILE).replace('raise RuntimeError("the pack hook ran")', "return tensor"))
    doc = runner.run_matrix(f"{path}:train", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(PROBE)
    assert seen.on == 1 and seen.packs >= 1 and seen.on_top == "fail", seen
