"""The gradient-hooks cause: its control (the leaf tensors holding a gradient hook found, their hooks detached for a
block and back after it before any the block registered, also after an exception), its setting (``grad_hooks=off``,
switched in a running process, held from the first timed call to the switch back), its probe (the hooks one call
runs, through a results file) and its judgement on synthetic explaining runs. No timing is asserted: the synthetic
documents carry known factors."""

import json
import textwrap

import pytest
import torch

from benchctl import _timed_call, settings
from benchctl._causes.grad_hooks import control
from benchctl._causes.grad_hooks.probe import PROBE, GradHooksFacts, census
from benchctl._causes.grad_hooks.rule import FIX, TIMING_ONLY, GradHooksOnEveryBackward
from benchctl._causes.grad_hooks.setting import GRAD_HOOKS
from benchctl._probe import ProbedCall
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched

OFF = {"grad_hooks": "off"}
SEEN = GradHooksFacts(tensors=24, hooks={"gradient": 24}, runs=24, names={"log_norm": 24})
NONE_HELD = GradHooksFacts()
NONE_RAN = GradHooksFacts(tensors=2, hooks={"gradient": 2})


@pytest.fixture(autouse=True)
def _attached(monkeypatch):
    monkeypatch.setattr(control, "_known", None)  # each test's own tensors, not an earlier test's
    yield
    control.attach_calls()


def _hooked():
    """A Linear whose weight logs its gradient's norm and whose bias doubles its gradient after accumulating it (a
    post-accumulate hook, as an optimizer stepping in backward is: never detached), the step that trains it, and what
    the hooks saw."""
    g = torch.Generator().manual_seed(0)
    model, x = torch.nn.Linear(4, 4), torch.randn(2, 4, generator=g)
    ran = []

    def log_norm(grad):
        ran.append("norm")

    def double(param):
        ran.append("post")
        param.grad.mul_(2)

    handles = [model.weight.register_hook(log_norm), model.bias.register_post_accumulate_grad_hook(double)]

    def step():
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()
        return model.bias.grad.clone()

    return model, step, ran, handles


def test_hooked_leaves_finds_the_leaf_tensors_that_hold_a_gradient_hook():
    model, step, _, handles = _hooked()
    found = control.hooked_leaves()
    assert any(t is model.weight for t in found) and not any(t is model.bias for t in found), "post-accumulate only"
    out = (model.weight * 2)
    out.register_hook(lambda g: g)  # a graph's own tensor: not a leaf, left alone
    assert not any(t is out for t in control.hooked_leaves())
    handles[0].remove()
    assert not any(t is model.weight for t in control.hooked_leaves())


def test_detached_runs_no_hook_and_puts_them_back_before_the_blocks_own():
    model, step, ran, _ = _hooked()
    hooked = step()
    assert sorted(ran) == ["norm", "post"]
    ran.clear()
    own = []
    with control.detached() as out:
        assert out.hooks >= 1 and out.back() == 0
        again = step()
        model.weight.register_hook(lambda g: own.append(1))  # the block's own: stays, after the code's
    assert ran == ["post"] and torch.allclose(hooked, again), "the post-accumulate hook still doubled the bias's"
    assert [h.__name__ for h in model.weight._backward_hooks.values()] == ["log_norm", "<lambda>"]
    with pytest.raises(RuntimeError, match="the block's"), control.detached():
        raise RuntimeError("the block's exception")
    ran.clear()
    step()
    assert sorted(ran) == ["norm", "post"] and own == [1]


def test_census_counts_the_hook_calls_of_one_call_and_puts_the_hooks_back():
    model, step, ran, _ = _hooked()
    note = census(step, top=2)
    assert list(note["hooks"]) == ["gradient"] and note["hooks"]["gradient"] >= note["tensors"] >= 1
    assert note["runs"] >= 1 and note["names"]["log_norm"] == 1 and "double" not in note["names"]
    assert sorted(ran) == ["norm", "post"], "the hooks ran as written"
    assert [h.__name__ for h in model.weight._backward_hooks.values()] == ["log_norm"]

    def fails():
        raise ValueError("boom")

    assert census(fails, top=2) == {"error": "ValueError: boom"}
    assert [h.__name__ for h in model.weight._backward_hooks.values()] == ["log_norm"]
    assert [h.__name__ for h in model.bias._post_accumulate_grad_hooks.values()] == ["double"]


def test_the_setting_holds_across_the_timed_calls_switches_and_sees_a_hook_registered_again():
    model, step, ran, _ = _hooked()
    assert GRAD_HOOKS.canonical(" OFF ") == "off" and GRAD_HOOKS.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        GRAD_HOOKS.canonical("on")
    assert settings.SETTINGS["grad_hooks"] is GRAD_HOOKS and GRAD_HOOKS.in_process
    call = _timed_call.wrapped(step)  # wrapped once, as the timed loop does
    assert GRAD_HOOKS.apply("off") == {"detached": True, "calls": 0, "held": 0}
    assert GRAD_HOOKS.during("off") == "code", "no call wrapped yet"
    call()
    call()
    assert ran == ["post", "post"] and GRAD_HOOKS.during("off") == "off"
    ran.clear()
    assert GRAD_HOOKS.switch("code") == {"detached": False, "calls": 0, "held": 0}
    call()
    assert sorted(ran) == ["norm", "post"], "switched back between two calls: the next runs its hooks"
    log_norm = model.weight._backward_hooks[next(iter(model.weight._backward_hooks))]
    GRAD_HOOKS.switch("off")

    def registers_again():  # the code registers its hook again in each call
        model.weight.register_hook(log_norm)
        return step()

    _timed_call.wrapped(registers_again)()
    assert GRAD_HOOKS.readback("off") == {"detached": True, "calls": 1, "held": 0}
    assert GRAD_HOOKS.during("off") == "code"
    GRAD_HOOKS.switch("code")
    GRAD_HOOKS.switch("off")
    call()
    assert GRAD_HOOKS.facts_phrase(GRAD_HOOKS.facts(GRAD_HOOKS.readback("off"))) == \
        "every timed call read back with them detached"


def test_the_collectors_list_is_searched_at_the_first_switch_only(monkeypatch):
    model, step, ran, _ = _hooked()
    searches = []
    search = control.hooked_leaves
    monkeypatch.setattr(control, "hooked_leaves", lambda: searches.append(1) or search())
    call = _timed_call.wrapped(step)
    for _ in range(3):  # a paired worker switches every few milliseconds
        GRAD_HOOKS.switch("off")
        call()
        GRAD_HOOKS.switch("code")
    assert searches == [1] and ran == ["post"] * 3, "each switch detached the hooks the first search found"
    assert control.known_leaves() == [model.weight]
    del model, step, call  # a tensor found that is gone is left out
    import gc

    gc.collect()
    assert control.known_leaves() == []


def test_the_probe_reads_its_census_back_through_a_results_file():
    model, step, _, handles = _hooked()
    for h in handles:
        h.remove()
    model.weight.register_hook(lambda g: None)
    found = PROBE.read(PROBE.record(ProbedCall(call=step)))
    assert found.ran and found.runs == 1 and found.tensors >= 1 and found.hooks["gradient"] >= 1
    assert found.text().startswith("in its probe call, 1 gradient hook call on ")
    assert found.text().endswith("that hold hooks (<lambda> ×1)")
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {PROBE.key: seen})


def test_precheck_rules_it_out_where_no_tensor_holds_a_hook_or_none_ran_or_no_call_was_watched():
    cause = GradHooksOnEveryBackward()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(SEEN), None) is None
    assert cause.precheck(_facts(NONE_HELD), None) == "no leaf tensor held a gradient hook as its probe call began"
    assert cause.precheck(_facts(NONE_RAN), None) == (
        "2 leaf tensors held 2 gradient hooks, yet none ran in its probe call (no backward reached them)")
    assert "times its own iterations" in cause.precheck(_facts(None), None)
    assert cause.precheck(_facts(GradHooksFacts(error="RuntimeError: x")), None) is None


def _judge(factor, seen=SEEN, during=None):
    return judge_switched(GradHooksOnEveryBackward(), OFF, {"detached": True, "calls": 16, "held": 16}, _facts(seen),
                          factor, during=during)


def test_named_when_detaching_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.7)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("gradient hooks on tensors run on every backward: with its gradient hooks "
                                    "detached it is 1.43× faster")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back with them detached" in found.message
    assert GRAD_HOOKS.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "detaching its gradient hooks changes nothing" in same.message
    unseen = _judge(0.7, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "no gradient hook was seen running" in unseen.message
    undone = _judge(0.7, during={"held": False, "seen": "code", "samples": 16})
    assert undone.status == Status.UNRESOLVED and "the grad_hooks=off probe was not measured" in undone.message


# --- in a worker -----------------------------------------------------------------------------------

_HOOKED_FILE = """
    import torch

    model = torch.nn.Linear(4, 4)

    def fail(grad):
        raise RuntimeError("the gradient hook ran")

    model.weight.register_hook(fail)

    def train():
        model(torch.ones(1, 4)).sum().backward()
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier fast
def test_worker_runs_the_timed_calls_with_the_hooks_detached_and_the_probe_worker_notes_them(tmp_path):
    path = tmp_path / "hooked.py"
    path.write_text(textwrap.dedent(_HOOKED_FILE))
    doc = runner.run_matrix(f"{path}:train", {"iterations": 3}, {"grad_hooks": ["off", "code"]}, progress=False,
                            control=False)
    off, code = doc["runs"] if doc["runs"][0]["cell"] == OFF else doc["runs"][::-1]
    assert off["status"] == "ok", off.get("error")
    during = off["readback"]["grad_hooks"]["during"]
    assert (during["held"], during["seen"]) == (True, "off") and 1 <= during["samples"] <= 3
    assert off["readback"]["grad_hooks"]["observed"] == {"detached": True, "calls": 3, "held": 3}
    assert code["status"] == "failed" and "the gradient hook ran" in code["error"]
    path.write_text(textwrap.dedent(_HOOKED_FILE).replace('raise RuntimeError("the gradient hook ran")', "pass"))
    doc = runner.run_matrix(f"{path}:train", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(PROBE)
    assert seen.tensors == 1 and seen.runs == 1 and seen.names == {"fail": 1}, seen
