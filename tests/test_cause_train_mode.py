"""The training-mode cause: its control (every module called in a block in eval mode for its call, the flags and
torch's call path given back, also after an exception), its count of the module calls made in training mode, its
setting (``train_mode=eval``, switched in a running process, each timed call wrapped), its probe (through a results
file) and its judgement on synthetic explaining runs. No timing is asserted: the synthetic documents carry known
factors."""

import json
import textwrap

import pytest
import torch

from benchctl import _timed_call, settings
from benchctl._causes.recording.probe import PROBE as AUTOGRAD, AutogradFacts
from benchctl._causes.train_mode import control
from benchctl._causes.train_mode.probe import PROBE, TrainModeFacts, counting, differs_in_training
from benchctl._causes.train_mode.rule import FIX, TIMING_ONLY, TrainModeLeftOn
from benchctl._causes.train_mode.setting import TRAIN_MODE
from benchctl._probe import ProbedCall
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched

EVAL = {"train_mode": "eval"}
SEEN = TrainModeFacts(module_calls=9, training_calls=9, differing_calls=4, classes={"BatchNorm1d": 2, "Dropout": 2})
NONE_SEEN = TrainModeFacts(module_calls=9, training_calls=9, differing_calls=0)


@pytest.fixture(autouse=True)
def _restored():
    yield
    control.restore_calls()


def _model():
    """Linear, batch norm, dropout: in training mode, as built."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5))
    return model, torch.randn(16, 8)


def test_evaluating_runs_each_module_in_eval_mode_and_gives_the_flags_and_call_path_back():
    model, x = _model()
    own = torch.nn.Module._call_impl
    with torch.no_grad():
        trained = model(x)  # in training mode: batch statistics, a dropout mask, the running statistics updated
        expected = model.eval()(x)
        model.train()
        assert not torch.equal(trained, expected)
        before = model[1].running_mean.clone()
        with control.evaluating():
            out = model(x)
            inner = torch.nn.Dropout(0.9)  # created inside the block: in eval mode for its call too
            assert torch.equal(inner(x), x)
        assert torch.equal(out, expected) and torch.equal(model[1].running_mean, before), "running stats untouched"
        assert all(m.training for m in model.modules()) and inner.training, "each flag set back after its call"
        assert torch.nn.Module._call_impl is own
        with pytest.raises(RuntimeError, match="the block's"), control.evaluating():
            model(x)
            raise RuntimeError("the block's exception")
        assert torch.nn.Module._call_impl is own and all(m.training for m in model.modules())
        model.eval()
        with control.evaluating():
            model(x)
        assert not any(m.training for m in model.modules()), "a module in eval mode stays so"


def test_counting_tallies_the_calls_in_training_mode_of_modules_that_compute_differently_there():
    model, x = _model()
    own = torch.nn.Module._call_impl
    with torch.no_grad(), counting() as tally:
        model(x)
    assert torch.nn.Module._call_impl is own
    assert tally.note() == {"module_calls": 4, "training_calls": 4, "differing_calls": 2,
                            "classes": {"BatchNorm1d": 1, "Dropout": 1}}
    model.eval()
    with torch.no_grad(), counting() as tally:
        model(x)
    assert (tally.module_calls, tally.training_calls, sum(tally.differing.values())) == (4, 0, 0)
    assert differs_in_training(torch.nn.InstanceNorm2d(3, track_running_stats=True))
    assert not differs_in_training(torch.nn.InstanceNorm2d(3))  # instance statistics in either mode
    assert differs_in_training(torch.nn.TransformerEncoderLayer(8, 2)) and not differs_in_training(torch.nn.ReLU())
    with pytest.raises(ValueError), counting():
        raise ValueError("boom")
    assert torch.nn.Module._call_impl is own


def test_the_setting_wraps_each_timed_call_switches_and_sees_a_call_that_escapes():
    model, x = _model()
    assert TRAIN_MODE.canonical(" EVAL ") == "eval" and TRAIN_MODE.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, eval"):
        TRAIN_MODE.canonical("train")
    assert settings.SETTINGS["train_mode"] is TRAIN_MODE and TRAIN_MODE.in_process
    assert TRAIN_MODE.during("code") is None
    with torch.no_grad():
        expected = model.eval()(x)
    model.train()
    call = _timed_call.wrapped(lambda: model(x))  # wrapped once, as the timed loop does
    assert TRAIN_MODE.apply("eval") == {"evaluating": True, "calls": 0, "held": 0}
    assert TRAIN_MODE.during("eval") == "code", "no call wrapped yet"
    with torch.no_grad():
        assert torch.equal(call(), expected)
    assert TRAIN_MODE.during("eval") == "eval"
    assert TRAIN_MODE.switch("code") == {"evaluating": False, "calls": 0, "held": 0}
    with torch.no_grad():
        assert not torch.equal(call(), expected), "switched back between two calls: the next trains"
    TRAIN_MODE.switch("eval")
    own = torch.nn.Module._call_impl

    def escapes():  # the code puts a call path of its own in
        torch.nn.Module._call_impl = own
        return model(x)

    try:
        _timed_call.wrapped(escapes)()
    finally:
        torch.nn.Module._call_impl = own
    assert TRAIN_MODE.readback("eval") == {"evaluating": True, "calls": 1, "held": 0}
    assert TRAIN_MODE.during("eval") == "code"
    assert TRAIN_MODE.facts_phrase(TRAIN_MODE.facts(TRAIN_MODE.readback("eval"))) == ""
    TRAIN_MODE.switch("code")
    TRAIN_MODE.switch("eval")
    call()
    assert (TRAIN_MODE.facts_phrase(TRAIN_MODE.facts(TRAIN_MODE.readback("eval")))
            == "every timed call read back with its modules in eval mode")


def test_the_probe_reads_its_count_back_through_a_results_file():
    model, x = _model()
    with counting() as tally:
        model(x)
    note = PROBE.record(ProbedCall(call=lambda: model(x), called={PROBE.key: tally}))
    found = PROBE.read(note)
    assert found.differs and found.text() == ("in its profiled call, 4 of 4 module calls ran in training mode, 2 of "
                                              "them in modules that compute differently there (BatchNorm1d ×1, "
                                              "Dropout ×1)")
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen, autograd=None):
    probed = {} if seen is None else {PROBE.key: seen}
    if autograd is not None:
        probed[AUTOGRAD.key] = autograd
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed=probed)


def test_precheck_rules_it_out_where_nothing_trains_differently_or_the_call_computes_gradients():
    cause = TrainModeLeftOn()
    assert cause.probes(None) == [EVAL]
    assert cause.precheck(_facts(SEEN), None) is None
    assert cause.precheck(_facts(NONE_SEEN), None) == (
        "no module that computes differently in training ran in training mode in its profiled call (9 module calls, "
        "9 in training mode)")
    assert "times its own iterations" in cause.precheck(_facts(None), None)
    training = AutogradFacts(calls=10, recording=10, gradients=1)
    assert cause.precheck(_facts(SEEN, training), None).endswith(": training mode is what its call is for")
    inferring = AutogradFacts(calls=10, recording=0, gradients=0)
    assert cause.precheck(_facts(SEEN, inferring), None) is None


def _judge(factor, seen=SEEN, fail=False):
    return judge_switched(TrainModeLeftOn(), EVAL, {"evaluating": True, "calls": 16, "held": 16}, _facts(seen), factor,
                          failure="RuntimeError: expected a batch of 1\n..." if fail else None)


def test_named_when_eval_mode_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.5)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("modules left in training mode: with its modules in eval mode it is 2.00× faster")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back with its modules in eval mode" in found.message
    assert TRAIN_MODE.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "eval mode changes nothing" in same.message
    unseen = _judge(0.5, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "the mechanism is unconfirmed" in unseen.message
    failed = _judge(1.0, fail=True)
    assert failed.status == Status.UNRESOLVED and "with its modules in eval mode its call fails" in failed.message


_TRAINING_FILE = """
    import torch

    seen = []


    class Watched(torch.nn.Dropout):
        def forward(self, x):
            seen.append(self.training)
            return super().forward(x)


    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Watched(0.5))


    def anyhow():
        with torch.no_grad():
            return model(torch.ones(2, 4))


    def infer():
        out = anyhow()
        if seen[-1]:
            raise RuntimeError("ran in training mode")
        return out
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_a_worker_runs_each_timed_call_in_eval_mode_and_the_probe_worker_counts(tmp_path):
    path = tmp_path / "training.py"
    path.write_text(textwrap.dedent(_TRAINING_FILE))
    doc = runner.run_matrix(f"{path}:infer", {"iterations": 3}, {"train_mode": ["eval", "code"]}, progress=False,
                            control=False)
    evaluated, code = doc["runs"] if doc["runs"][0]["cell"] == EVAL else doc["runs"][::-1]
    assert evaluated["status"] == "ok", evaluated.get("error")
    assert evaluated["readback"]["train_mode"]["observed"] == {"evaluating": True, "calls": 3, "held": 3}
    assert code["status"] == "failed" and "ran in training mode" in code["error"]
    doc = runner.run_matrix(f"{path}:anyhow", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(PROBE)
    assert seen.differs and seen.classes == {"Watched": 1} and seen.module_calls == 3, seen
