"""The autograd causes: anomaly detection left on, and recording where no gradient is needed.

Their settings (``anomaly``, ``inference``) applied, read back and checked during the timed
iterations; the probe worker's census of a call; the pre-checks on the facts; the judgements on
synthetic explaining runs. No timing is asserted: the synthetic documents carry known factors.
"""

import textwrap

import pytest
import torch

from benchctl import ArgumentError, settings, _workloads as workloads
from benchctl._causes.anomaly import control as anomaly
from benchctl._causes.anomaly.rule import ANOMALY_FIX, Anomaly
from benchctl._causes.recording import control as inference
from benchctl._causes.recording.probe import PROBE as AUTOGRAD, AutogradFacts, autograd_census
from benchctl._causes.recording import rule as recording_rule
from benchctl._causes.recording.rule import RECORDING_FIX, Recording
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from benchctl._run.recorder import Recorder
from benchctl._cause import NOT_RUN
from synthetic_results import make_doc
from test_causes import facts

OFF, ON = {"anomaly": "off"}, {"inference": "on"}
PROBES = [{}, OFF, ON, {"threads": 1}]
ANOMALY_SEEN = AutogradFacts(calls=40, anomaly=40, recording=30, gradients=2, recording_ops={"linear": 12},
                             parameters=4, grad_parameters=4)
RECORDING_SEEN = AutogradFacts(calls=16, recording=16, recording_ops={"linear": 8, "relu": 8}, parameters=16,
                               grad_parameters=16)
NOTHING_SEEN = AutogradFacts(calls=3, recording=0, parameters=0, grad_parameters=0)


def with_autograd(seen):
    """The synthetic facts with ``seen`` as the probe worker's autograd census (None: not watched)."""
    return facts(probed={} if seen is None else {AUTOGRAD.key: seen})


def _model():
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return model, torch.randn(2, 4, generator=g)


# --- the settings ----------------------------------------------------------------------------------


def test_the_settings_take_their_values_and_refuse_others():
    assert settings.canonical_value("anomaly", " OFF ", {}) == "off"
    assert settings.canonical_value("inference", "on", {}) == "on"
    for name, bad in (("anomaly", "on"), ("inference", "yes")):
        with pytest.raises(settings.SettingError, match="choose one of"):
            settings.canonical_value(name, bad, {})
    assert settings.SETTINGS["anomaly"].probe == "off" and settings.SETTINGS["inference"].probe == "on"
    assert settings.SETTINGS["anomaly"].during("code") is None  # nothing applied: nothing to check
    assert settings.SETTINGS["inference"].during("off") is None


def test_anomaly_kept_off_against_every_way_the_code_turns_it_on():
    setting = settings.SETTINGS["anomaly"]
    torch.autograd.set_detect_anomaly(True)  # on at import, as the reports have it
    try:
        with anomaly.kept_off() as guard:
            assert not torch.is_anomaly_enabled() and setting.during("off") == "off"
            torch.autograd.set_detect_anomaly(True)
            with torch.autograd.detect_anomaly():
                assert not torch.is_anomaly_enabled()
            assert guard.refused == 2 and setting.readback("off") == {"enabled": False, "kept_off": True,
                                                                       "refused": 2}
            assert setting.facts_phrase(setting.facts(setting.readback("off"))) == \
                "kept off against 2 calls of the code that turned it on"
            guard.original(True)  # a way around the guard (torch's own function): the check sees it
            assert setting.during("off") == "on"
            guard.original(False)
        assert torch.is_anomaly_enabled(), "the mode as it was before the block"
        assert not anomaly.state()["kept_off"] and torch.set_anomaly_enabled is not guard
    finally:
        torch.autograd.set_detect_anomaly(False)


def test_kept_off_gives_torch_its_function_back_after_an_exception():
    original = torch.set_anomaly_enabled
    with pytest.raises(ValueError):
        with anomaly.kept_off():
            raise ValueError
    assert torch.set_anomaly_enabled is original and not torch.is_anomaly_enabled()


def test_inference_wraps_each_call_and_sees_a_call_that_escapes_it():
    model, x = _model()
    setting = settings.SETTINGS["inference"]
    assert inference.wrapped(lambda: model(x))().requires_grad, "not enabled: the call as written"
    try:
        assert setting.apply("on") == {"enabled": True, "calls": 0, "held": 0}
        assert setting.during("on") == "off", "no call wrapped yet"
        call = inference.wrapped(lambda: model(x))
        assert not call().requires_grad and setting.during("on") == "on"

        def escapes():
            with torch.inference_mode(False):
                return model(x)

        inference.wrapped(escapes)()
        assert setting.readback("on") == {"enabled": True, "calls": 2, "held": 1} and setting.during("on") == "off"
        assert setting.facts_phrase(setting.facts(setting.readback("on"))) == "1 of 2 timed calls read back under it"
    finally:
        inference.disable()


# --- the probe worker's census -------------------------------------------------------------------


def test_census_counts_recording_calls_anomaly_and_gradients():
    model, x = _model()
    seen = AutogradFacts.from_note(autograd_census(lambda: model(x), [model]))
    assert (seen.calls, seen.recording, seen.anomaly, seen.gradients) == (2, 2, 0, 0)
    assert seen.recording_ops == {"linear": 1, "relu": 1} and (seen.parameters, seen.grad_parameters) == (2, 2)

    def step():
        with torch.autograd.detect_anomaly():  # around the step, as users write it
            model(x).sum().backward()

    seen = AutogradFacts.from_note(autograd_census(step, [model, model]))  # one module in two places once
    assert (seen.calls, seen.anomaly, seen.gradients, seen.parameters) == (3, 3, 1, 2)
    assert not torch.is_anomaly_enabled()

    def no_grad():
        with torch.no_grad():
            return model(x)

    seen = AutogradFacts.from_note(autograd_census(no_grad, [model]))
    assert (seen.calls, seen.recording) == (2, 0)


def test_census_of_a_call_that_fails_under_it_says_why():
    def fails():
        raise RuntimeError("boom")

    note = autograd_census(fails, [])
    assert note == {"error": "RuntimeError: boom"} and not AutogradFacts.from_note(note).known


def test_facts_carry_the_census_through_json():
    facts_ = Facts(probed={AUTOGRAD.key: RECORDING_SEEN})
    assert Facts.from_json(facts_.to_json()) == facts_
    assert Facts.from_json({**facts_.to_json(), "probed": {}}).of(AUTOGRAD) is None


# --- the pre-checks --------------------------------------------------------------------------------


def test_anomaly_ruled_out_where_it_was_never_on_and_kept_where_it_was():
    cause = Anomaly()
    assert cause.precheck(with_autograd(NOTHING_SEEN), None) == \
        "anomaly detection on for 0 of 3 torch calls of its probe call: it was never on"
    assert cause.precheck(with_autograd(ANOMALY_SEEN), None) is None
    assert cause.precheck(with_autograd(None), None) is None  # not watched: nothing rules it out
    assert cause.precheck(with_autograd(AutogradFacts(error="RuntimeError: x")), None) is None


def test_recording_ruled_out_where_nothing_records_or_gradients_are_computed():
    cause = Recording()
    assert cause.precheck(with_autograd(NOTHING_SEEN), None) == \
        "0 of 3 torch calls of its probe call record an autograd graph: nothing to stop recording"
    assert cause.precheck(with_autograd(ANOMALY_SEEN), None) == \
        "it computes gradients (2 backward or autograd.grad calls in its probe call): they are needed"
    assert "times its own iterations" in cause.precheck(with_autograd(None), None)
    assert cause.precheck(with_autograd(RECORDING_SEEN), None) is None


# --- the judgements --------------------------------------------------------------------------------


def _run(planted, readback=None):
    return analyse(make_doc({"with": PROBES}, factor=lambda c: planted(c["with"]), readback=readback,
                            phase="call", control=True))


def _judge(cause, doc, autograd):
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=with_autograd(autograd))
    found = cause.judge(ctx)
    assert len(found) == 1
    return found[0]


def _anomaly_readback(cell):
    if cell["with"] == OFF:
        return {"anomaly": {"requested": "off", "observed": {"enabled": False, "kept_off": True, "refused": 1},
                            "during": {"held": True, "seen": "off", "samples": 16}}}
    return {}


def test_anomaly_named_with_its_evidence_and_fix_when_off_is_faster():
    found = _judge(Anomaly(), _run(lambda p: 0.25 if p == OFF else 1.0, _anomaly_readback), ANOMALY_SEEN)
    assert found.status is Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("anomaly detection left on: with anomaly detection off it is 4.00× faster [95% CI")
    assert "anomaly detection on for 40 of 40 torch calls of its probe call" in found.message
    assert "kept off against 1 call of the code that turned it on" in found.message
    assert settings.SETTINGS["anomaly"].mechanism in found.message and found.message.endswith(ANOMALY_FIX)


def test_anomaly_not_the_cause_when_off_changes_nothing_and_unconfirmed_when_never_seen_on():
    flat = _judge(Anomaly(), _run(lambda p: 1.0), ANOMALY_SEEN)
    assert flat.status is Status.NOT_CAUSE and "anomaly detection off changes nothing beyond ±5%" in flat.message
    unseen = _judge(Anomaly(), _run(lambda p: 0.25 if p == OFF else 1.0), None)
    assert unseen.status is Status.UNCONFIRMED and "was not seen on" in unseen.message
    # Its call was not watched, yet the probe cell refused the code's call to turn it on: that is the evidence.
    refused = _judge(Anomaly(), _run(lambda p: 0.25 if p == OFF else 1.0, _anomaly_readback), None)
    assert refused.status is Status.CAUSE and "the code asked to turn it on 1 time in the probe cell" in refused.message


def test_anomaly_open_when_the_probe_is_within_reach_of_the_band():
    open_ = _judge(Anomaly(), _run(lambda p: 0.95 if p == OFF else 1.0), ANOMALY_SEEN)
    assert open_.status is Status.UNRESOLVED and open_.mark == "?" and open_.is_open, open_.message
    assert "unresolved: anomaly detection off gives a time ratio of 0.95" in open_.message


def test_anomaly_probe_the_code_undid_is_reported_not_judged():
    def undone(cell):
        if cell["with"] == OFF:
            return {"anomaly": {"requested": "off", "observed": {"enabled": True, "kept_off": True, "refused": 0},
                                "during": {"held": False, "seen": "on", "samples": 16}}}
        return {}

    found = _judge(Anomaly(), _run(lambda p: 0.25 if p == OFF else 1.0, undone), ANOMALY_SEEN)
    assert found.status is Status.UNRESOLVED and found.comparison is None
    assert found.message == ("anomaly detection left on: the workload's own code set anomaly=on during the timed "
                             "iterations: the anomaly=off probe was not measured")


def test_recording_named_with_its_evidence_and_fix_when_inference_mode_is_faster():
    found = _judge(Recording(), _run(lambda p: 0.7 if p == ON else 1.0), RECORDING_SEEN)
    assert found.status is Status.CAUSE, found.message
    assert "under torch.inference_mode() it is 1.43× faster [95% CI" in found.message
    assert ("16 of 16 torch calls of its probe call record an autograd graph (linear ×8, relu ×8); 16 of 16 "
            "parameter tensors of its modules require grad") in found.message
    assert found.message.endswith(RECORDING_FIX)


def test_recording_open_where_few_calls_record_though_inference_mode_is_faster():
    # An optimizer step: 4,401 torch calls, one of them (reading a parameter) recording; 1.09x faster under
    # inference mode, which spares every op its version counter too: recording is not shown to be why.
    few = AutogradFacts(calls=4401, recording=1, recording_ops={"__getitem__": 1}, parameters=0)
    found = _judge(Recording(), _run(lambda p: 0.9 if p == ON else 1.0), few)
    assert found.status is Status.UNCONFIRMED, found.message
    assert "1 of 4,401 torch calls of its probe call record an autograd graph" in found.message
    assert recording_rule.FEW_RECORD in found.message and RECORDING_FIX not in found.message
    # One call in ten recording: named as before.
    tenth = AutogradFacts(calls=40, recording=4, recording_ops={"linear": 4}, parameters=0)
    assert _judge(Recording(), _run(lambda p: 0.7 if p == ON else 1.0), tenth).status is Status.CAUSE


def test_recording_not_the_cause_when_inference_mode_changes_nothing():
    found = _judge(Recording(), _run(lambda p: 1.0), RECORDING_SEEN)
    assert found.status is Status.NOT_CAUSE and "torch.inference_mode() changes nothing" in found.message
    unseen = _judge(Recording(), _run(lambda p: 0.7 if p == ON else 1.0), None)
    assert unseen.status is Status.UNCONFIRMED and "no call was seen recording" in unseen.message


def test_recording_of_a_call_that_fails_under_inference_mode_needs_autograd():
    doc = make_doc({"with": PROBES}, factor=lambda c: 1.0, phase="call", control=True)
    for run in doc["runs"]:
        if run["cell"]["with"] == ON:
            run.update(status="failed", phases={}, error="RuntimeError while running workload 'x': element 0 of "
                                                         "tensors does not require grad and does not have a grad_fn")
    found = _judge(Recording(), analyse(doc), RECORDING_SEEN)
    assert found.status is Status.NOT_CAUSE and found.mark == "-" and not found.is_open
    assert found.message.startswith("autograd recording where no gradient is needed: it needs autograd's graph: "
                                    "under torch.inference_mode() its call fails (RuntimeError while running")


# --- in a worker -----------------------------------------------------------------------------------


def test_worker_keeps_anomaly_off_against_the_setup_and_reads_it_back(tmp_path):
    path = tmp_path / "debugging.py"
    path.write_text(textwrap.dedent("""
        import torch

        torch.autograd.set_detect_anomaly(True)  # at import

        def setup():
            torch.autograd.set_detect_anomaly(True)

        def run(state):
            with torch.autograd.detect_anomaly():
                torch.ones(2, requires_grad=True).sum().backward()
    """))
    doc = runner.run_matrix(f"{path}", {"iterations": 3}, {"anomaly": ["off"]}, progress=False, control=False)
    [run] = doc["runs"]
    assert run["status"] == "ok", run.get("error")
    during = run["readback"]["anomaly"]["during"]
    assert (during["held"], during["seen"]) == (True, "off") and 1 <= during["samples"] <= 3
    assert run["readback"]["anomaly"]["observed"] == {"enabled": False, "kept_off": True, "refused": 4}


def test_worker_runs_calls_under_inference_mode_and_a_training_step_fails(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import torch

        model = torch.nn.Linear(4, 4)
        x = torch.ones(1, 4)

        def infer():
            return model(x)

        def train():
            model(x).sum().backward()
    """))
    doc = runner.run_matrix(f"{path}:infer", {"iterations": 2}, {"inference": ["on"]}, progress=False,
                            control=False)
    [run] = doc["runs"]
    during = run["readback"]["inference"]["during"]
    assert (during["held"], during["seen"]) == (True, "on") and 1 <= during["samples"] <= 2
    assert run["readback"]["inference"]["observed"] == {"enabled": True, "calls": 2, "held": 2}
    doc = runner.run_matrix(f"{path}:train", {"iterations": 2}, {"inference": ["on"]}, progress=False,
                            control=False)
    [run] = doc["runs"]
    assert run["status"] == "failed" and "does not require grad" in run["error"]


def test_probe_worker_notes_the_census(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import torch\nmodel = torch.nn.Linear(4, 4)\n\ndef infer():\n    return model(torch.ones(1, 4))\n")
    doc = runner.run_matrix(f"{path}:infer", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(AUTOGRAD)
    assert (seen.calls, seen.recording, seen.anomaly, seen.gradients) == (2, 1, 0, 0), seen
    assert seen.recording_ops == {"linear": 1}


def test_a_workload_that_times_itself_refuses_the_inference_setting():
    @workloads.user.workload()
    def own_loop(rec):
        with rec.iteration("x"):
            pass

    run, _ = workloads.user._decorated_workload(own_loop, own_loop.__benchctl_workload__)
    try:
        inference.enable()
        with pytest.raises(ArgumentError, match="times its own iterations"):
            run({}, Recorder())
    finally:
        inference.disable()
    run({}, Recorder())  # as written without the setting


@pytest.mark.parametrize("cause, probe, text", [(Anomaly(), OFF, "anomaly=off"),
                                                (Recording(), ON, "inference=on")], ids=["anomaly", "recording"])
def test_a_probe_cell_the_budget_left_unrun_is_said_open(cause, probe, text):
    doc = make_doc({"with": PROBES}, factor=lambda c: 1.0, phase="call", control=True)
    doc["runs"] = [r for r in doc["runs"] if r["cell"]["with"] != probe]  # a loaded machine: the budget ran out
    found = _judge(cause, analyse(doc), RECORDING_SEEN)
    assert found.status is Status.UNRESOLVED and found.mark == "?" and found.comparison is None
    assert found.message == f"{cause.title}: " + NOT_RUN.format(probe=text)
