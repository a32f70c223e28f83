"""The module-hooks cause: its control (every module's hooks detached for a block, torch's call path given
back, also after an exception; the census of the hooks one call runs), its setting (``hooks=off``, switched
in a running process, each timed call wrapped), its probe (through a results file) and its judgement on
synthetic explaining runs. No timing is asserted: the synthetic documents carry known factors."""

import json
import textwrap

import pytest
import torch

from benchctl import _timed_call, settings
from benchctl._causes.hooks import control
from benchctl._causes.hooks.probe import PROBE, HooksFacts, census
from benchctl._causes.hooks.rule import FIX, TIMING_ONLY, HooksOnEveryCall
from benchctl._causes.hooks.setting import HOOKS
from benchctl._probe import ProbedCall
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched

OFF = {"hooks": "off"}
SEEN = HooksFacts(module_calls=100, runs={"forward_pre": 0, "forward": 100, "backward_pre": 0, "backward": 0},
                  registered={"forward_pre": 0, "forward": 25, "backward_pre": 0, "backward": 0},
                  names={"log_stats": 100})
NONE_SEEN = HooksFacts(module_calls=30, runs={"forward_pre": 0, "forward": 0, "backward_pre": 0, "backward": 0},
                       registered={"forward_pre": 0, "forward": 0, "backward_pre": 0, "backward": 0})


@pytest.fixture(autouse=True)
def _attached():
    yield
    control.attach_calls()


def _hooked():
    """A two-layer model with a forward hook that doubles each output and a pre-hook, and what they saw."""
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    ran = []

    def double(module, inputs, output):
        ran.append("forward")
        return output * 2

    def pre(module, inputs):
        ran.append("pre")

    handles = [m.register_forward_hook(double) for m in model]
    handles.append(model[0].register_forward_pre_hook(pre))
    return model, torch.randn(2, 4, generator=g), ran, handles


def test_detached_runs_no_hook_per_module_or_global_and_gives_torchs_call_path_back():
    model, x, ran, _ = _hooked()
    own = torch.nn.Module._call_impl
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: ran.append("global"))
    try:
        hooked_out = model(x)
        assert ran.count("forward") == 2 and "pre" in ran and "global" in ran
        ran.clear()
        with control.detached():
            out = model(x)
            inner = torch.nn.Linear(4, 4)  # created inside the block: detached too
            inner.register_forward_hook(lambda m, i, o: ran.append("new"))
            inner(x)
        assert ran == [] and torch.nn.Module._call_impl is own
        assert torch.allclose(hooked_out, 4 * out), "each hook doubled its layer's output; detached, none did"
        with pytest.raises(RuntimeError, match="the block's"), control.detached():
            raise RuntimeError("the block's exception")
        assert torch.nn.Module._call_impl is own
        model(x)
        assert ran.count("forward") == 2 and "global" in ran
    finally:
        handle.remove()


def test_a_handle_removed_inside_the_block_removes_its_hook():
    model, x, ran, handles = _hooked()
    with control.detached():
        for h in handles:
            h.remove()
    model(x)
    assert ran == []


def test_census_counts_the_hooks_each_module_call_runs_by_kind():
    model, x, ran, _ = _hooked()
    x.requires_grad_(True)
    model[1].register_full_backward_hook(lambda m, gi, go: None)

    def global_pre(module, inputs):
        pass

    handle = torch.nn.modules.module.register_module_forward_pre_hook(global_pre)
    own = torch.nn.Module._call_impl
    try:
        note = census(lambda: model(x).sum().backward(), top=2)
    finally:
        handle.remove()
    assert torch.nn.Module._call_impl is own
    assert note["module_calls"] == 3  # the container and its two layers
    assert note["runs"] == {"forward_pre": 3 + 1, "forward": 2, "backward_pre": 0, "backward": 1}
    assert note["registered"] == {"forward_pre": 2, "forward": 2, "backward_pre": 0, "backward": 1}
    assert note["global_hooks"] == 1 and note["names"] == {"global_pre": 3, "double": 2}
    assert ran.count("forward") == 2, "the hooks ran as written"

    def fails():
        raise ValueError("boom")

    assert census(fails, top=2) == {"error": "ValueError: boom"}
    assert torch.nn.Module._call_impl is own


def test_the_setting_wraps_each_timed_call_switches_and_sees_a_call_that_escapes():
    model, x, ran, _ = _hooked()
    assert HOOKS.canonical(" OFF ") == "off" and HOOKS.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, off"):
        HOOKS.canonical("on")
    assert settings.SETTINGS["hooks"] is HOOKS and HOOKS.in_process and HOOKS.during("code") is None
    call = _timed_call.wrapped(lambda: model(x))  # wrapped once, as the timed loop does
    assert HOOKS.apply("off") == {"detached": True, "calls": 0, "held": 0}
    assert HOOKS.during("off") == "code", "no call wrapped yet"
    call()
    assert ran == [] and HOOKS.during("off") == "off"
    assert HOOKS.switch("code") == {"detached": False, "calls": 0, "held": 0}
    call()
    assert ran.count("forward") == 2, "switched back between two calls: the next runs its hooks"
    HOOKS.switch("off")
    own = torch.nn.Module._call_impl

    def escapes():  # the code puts a call path of its own in
        torch.nn.Module._call_impl = own
        return model(x)

    try:
        _timed_call.wrapped(escapes)()
    finally:
        torch.nn.Module._call_impl = own
    assert HOOKS.readback("off") == {"detached": True, "calls": 1, "held": 0} and HOOKS.during("off") == "code"
    assert HOOKS.facts_phrase(HOOKS.facts(HOOKS.readback("off"))) == ""
    call()
    assert HOOKS.facts(HOOKS.readback("off")) == {"held": False}
    HOOKS.switch("code")
    HOOKS.switch("off")
    call()
    assert HOOKS.facts_phrase(HOOKS.facts(HOOKS.readback("off"))) == "every timed call read back with them detached"


def test_the_probe_reads_its_census_back_through_a_results_file():
    model, x, _, _ = _hooked()
    note = PROBE.record(ProbedCall(call=lambda: model(x)))
    found = PROBE.read(note)
    assert found.ran and found.module_calls == 3 and found.runs["forward"] == 2 and found.runs["forward_pre"] == 1
    assert found.text() == ("in its probe call, 1 forward pre-hook call, 2 forward hook calls over 3 module calls "
                            "(3 hooks, none global; double ×2, pre ×1)")
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {PROBE.key: seen})


def test_precheck_rules_it_out_where_no_hook_ran_or_no_call_was_watched():
    cause = HooksOnEveryCall()
    assert cause.probes(None) == [OFF]
    assert cause.precheck(_facts(SEEN), None) is None
    assert cause.precheck(_facts(NONE_SEEN), None) == "no module hook ran in its probe call (30 module calls)"
    assert "times its own iterations" in cause.precheck(_facts(None), None)
    assert cause.precheck(_facts(HooksFacts(error="RuntimeError: x")), None) is None


def _judge(factor, seen=SEEN, fail=False, during=None):
    return judge_switched(HooksOnEveryCall(), OFF, {"detached": True, "calls": 16, "held": 16}, _facts(seen), factor,
                          during=during, failure=("RuntimeError: the module's buffer was not filled\n..." if fail
                                                  else None))


def test_named_when_detaching_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.5)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("module hooks run on every call: with its hooks detached it is 2.00× faster")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back with them detached" in found.message
    assert HOOKS.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "detaching its hooks changes nothing" in same.message
    unseen = _judge(0.5, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "no hook was seen running" in unseen.message


def test_a_call_that_fails_with_its_hooks_detached_is_open_and_an_undone_probe_is_not_judged():
    failed = _judge(1.0, fail=True)
    assert failed.status == Status.UNRESOLVED and failed.comparison is None, failed.message
    assert failed.message == ("module hooks run on every call: not measured: with its hooks detached its call fails "
                              "(RuntimeError: the module's buffer was not filled)")
    undone = _judge(0.5, during={"held": False, "seen": "code", "samples": 16})
    assert undone.status == Status.UNRESOLVED and "the hooks=off probe was not measured" in undone.message


# --- in a worker -----------------------------------------------------------------------------------

_HOOKED_FILE = """
    import torch

    model = torch.nn.Linear(4, 4)

    def fail(module, inputs, output):
        raise RuntimeError("the hook ran")

    model.register_forward_hook(fail)

    def infer():
        return model(torch.ones(1, 4))
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_worker_runs_each_timed_call_with_the_hooks_detached(tmp_path):
    path = tmp_path / "hooked.py"
    path.write_text(textwrap.dedent(_HOOKED_FILE))
    doc = runner.run_matrix(f"{path}:infer", {"iterations": 3}, {"hooks": ["off", "code"]}, progress=False,
                            control=False)
    off, code = doc["runs"] if doc["runs"][0]["cell"] == OFF else doc["runs"][::-1]
    assert off["status"] == "ok", off.get("error")
    during = off["readback"]["hooks"]["during"]
    assert (during["held"], during["seen"]) == (True, "off") and 1 <= during["samples"] <= 3
    assert off["readback"]["hooks"]["observed"] == {"detached": True, "calls": 3, "held": 3}
    assert code["status"] == "failed" and "the hook ran" in code["error"]


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_probe_worker_notes_the_census(tmp_path):
    path = tmp_path / "hooked.py"
    path.write_text(textwrap.dedent("""
        import torch

        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        for m in model:
            m.register_forward_hook(lambda m, i, o: None)

        def infer():
            return model(torch.ones(1, 4))
    """))
    doc = runner.run_matrix(f"{path}:infer", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(PROBE)
    assert seen.module_calls == 3 and seen.runs["forward"] == 2 and seen.registered["forward"] == 2, seen
