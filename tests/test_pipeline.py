"""The one pipeline explain and the seed scripts share, through the real runner with fake workers:
facts, pre-checks that drop cells, the star matrix of probes, the saved evidence, and answering a
saved document again by the same rules."""

import time

import pytest

from benchctl import ArgumentError
from benchctl._results import document
from benchctl._results.facts import Facts
from benchctl._results.findings import Finding, Status
from benchctl._results.rules import Rule
from benchctl._studies import catalog, pipeline
from test_control import FakeWorkers


class Probe(Rule):
    """Judges one probe against the unchanged workload: ``*`` when the probe is slower."""

    name = "probe_rule"

    def __init__(self, probe: dict, out: str | None = None) -> None:
        self.probe, self.out = probe, out

    def probes(self, facts):
        return [self.probe]

    def precheck(self, facts, penalty):
        return self.out

    def judge(self, ctx):
        cell = ctx.probe_cell(self.probe)
        cmp = None if cell is None else ctx.compare(cell, ctx.baseline)
        if cmp is None:
            return []
        status = Status.MEASURED if cmp.slower else Status.NOT_CAUSE
        return [Finding(self.name, ctx.phase, status, cmp.change_text(str(self.probe)), cmp, a=cell, b=ctx.baseline)]


def _study(tmp_path, rules, **changes):
    fields = dict(name="test", workload="sleep", args={"iterations": 1}, rules=tuple(rules),
                  matrix={"ms": [1.0, 2.0]}, census=lambda: {"weights": {"values": 10, "subnormal": 0}},
                  penalty_ops=None, measure_penalty=False, repeat=3, json_path=str(tmp_path / "r.json"))
    return pipeline.Study(**{**fields, **changes})


def test_a_rule_ruled_out_before_running_drops_its_cells_and_says_how_to_run_them(monkeypatch, tmp_path):
    workers = FakeWorkers(monkeypatch, lambda c: c["ms"])
    said = []
    doc = pipeline.run_study(_study(tmp_path, [Probe({"ms": 2.0}, out="nothing to see")]), say=said.append)
    assert doc["matrix"] == {"ms": [1.0]} and {c["ms"] for c in workers.calls} == {1.0}
    [ruled] = [Finding.from_json(f) for f in doc["verdict"]]
    assert ruled.status is Status.RULED_OUT and ruled.phase is None
    assert ruled.message == ("ruled out before running: nothing to see; so the ms=2.0 cells were not run "
                             "(--set ms=1.0,2.0 runs them anyway)")
    assert ruled.evidence["dropped"] == {"ms": [2.0]}
    assert said[0] == ruled.message and said[1].startswith("sleep: 1 cells, 3 process(es) per cell")
    saved = document.load(str(tmp_path / "r.json"))
    assert saved["evidence"]["study"] == "test" and saved["evidence"]["ruled_out"] == [ruled.to_json()]
    assert Facts.from_json(saved["evidence"]["facts"]).census == {"weights": {"values": 10, "subnormal": 0}}


def test_an_axis_the_user_chose_is_run_and_judged_whatever_the_precheck_says(monkeypatch, tmp_path):
    FakeWorkers(monkeypatch, lambda c: c["ms"])
    doc = pipeline.run_study(_study(tmp_path, [Probe({"ms": 2.0}, out="nothing to see")], fixed_keys=("ms",)))
    assert doc["matrix"] == {"ms": [1.0, 2.0]}
    [judged] = [Finding.from_json(f) for f in doc["verdict"]]
    assert judged.rule == "probe_rule" and judged.status is Status.MEASURED and judged.comparison.slower
    assert judged.message.startswith("{'ms': 2.0} makes it 2.00× slower [95% CI")


def test_without_a_matrix_the_probes_of_the_rules_left_run_as_a_star(monkeypatch, tmp_path):
    """explain's shape: a probe worker first, then the unchanged workload and each active rule's probe."""
    workers = FakeWorkers(monkeypatch, lambda c: 2.0 if c.get("with") == {"threads": 1} else 1.0)
    kept, dropped = Probe({"threads": 1}), Probe({"pin": "compact"}, out="no migrations")
    doc = pipeline.run_study(_study(tmp_path, [kept, dropped], matrix=None, census=None))
    assert doc["matrix"] == {"with": [{}, {"threads": 1}]}
    assert workers.calls[0] == {}, "the probe worker runs the workload unchanged, first"
    found = [Finding.from_json(f) for f in doc["verdict"]]
    assert [(f.status, f.phase) for f in found] == [(Status.RULED_OUT, None), (Status.MEASURED, "sleep")]
    assert doc["evidence"]["facts"]["phases"] == ["sleep"]


def test_a_saved_document_is_answered_again_by_the_same_rules(monkeypatch, tmp_path):
    FakeWorkers(monkeypatch, lambda c: c["ms"])
    rules = [Probe({"ms": 2.0})]
    doc = pipeline.run_study(_study(tmp_path, rules))
    again = pipeline.reanswer(document.load(str(tmp_path / "r.json")), lambda name: tuple(rules))
    assert [f.to_json() for f in again] == doc["verdict"]
    # A document no study made is answered by the generic rules.
    plain = dict(doc, evidence={})
    assert [f.rule for f in pipeline.reanswer(plain, catalog.rules_of)] == ["setting_effect"]


def test_resume_needs_the_file_it_continues(tmp_path):
    with pytest.raises(ArgumentError, match="--resume needs --json FILE"):
        pipeline.run_study(_study(tmp_path, [], json_path=None, resume=True))


def test_the_catalog_knows_each_study_and_nothing_else():
    assert {"explain", "resnet_order", "zero_weights"} <= set(catalog.STUDIES)
    assert catalog.rules_of("explain") and catalog.rules_of("no such study") is None
    names = [r.rule_name for r in catalog.rules_of("resnet_order")]
    assert names[:2] == ["cause_allocator", "cause_denormals"] and len(set(names)) == len(names)


def test_a_matrix_worker_is_stopped_as_stuck_only_past_the_budget_left_and_ten_probe_workers():
    # A DataLoader built in each call deadlocked in a worker beside the busy-pool probe's thread, past a 60 s budget.
    assert pipeline.worker_timeout_s({"duration_s": 2.0}, 55.0) == 55.0
    assert pipeline.worker_timeout_s({"duration_s": 9.0}, 55.0) == 9.0 * pipeline.STUCK_MULTIPLE
    assert pipeline.worker_timeout_s({"duration_s": 2.0}, None) is None  # no budget: nothing bounds the run
    assert pipeline.worker_timeout_s(None, 55.0) is None  # no probe worker (the seed scripts' studies)


def test_the_probe_worker_is_stopped_as_stuck_past_ten_budgets_and_five_minutes():
    assert pipeline.probe_timeout_s(None) is None
    assert pipeline.probe_timeout_s(12.0) == pipeline.PROBE_STUCK_FLOOR_S
    assert pipeline.probe_timeout_s(120.0) == 120.0 * pipeline.STUCK_MULTIPLE


def test_a_stuck_probe_worker_ends_explain_with_why(tmp_path, monkeypatch):
    from benchctl import _workloads as workloads

    path = tmp_path / "stuck.py"
    path.write_text("import threading\n\ndef step():\n    threading.Event().wait()  # waits for ever\n")
    monkeypatch.setattr(pipeline, "PROBE_STUCK_FLOOR_S", 1.0)
    study = pipeline.Study(name="explain", workload=f"{path}:step", args={"iterations": 3, "seconds": 0.0},
                           rules=(), budget_s=0.2)
    with pytest.raises(workloads.WorkloadFailed, match="the workload failed in its probe worker: worker exceeded "
                                                       "the 2.0 s timeout and was killed"):
        pipeline._probe(study, lambda line: None)


def test_a_budget_the_probe_worker_spent_is_refused_with_the_budget_the_workers_need():
    # A step of 40 s under --budget 60: the probe worker took 6.1 min, and explain went on to start its first round.
    study = pipeline.Study(name="explain", workload="slow.py:step", args={"iterations": 30, "seconds": 0.0},
                           rules=(), budget_s=60.0)
    sizing = {"start_s": 5.0, "iteration_s": 40.0, "processes": 15, "left_s": -306.0}
    with pytest.raises(ArgumentError) as refused:
        pipeline._check_budget_left(study, sizing, 366.0)
    assert str(refused.value) == (
        "--budget 60: the probe worker alone took 6.1 min (one call of slow.py:step takes 40 s), which leaves no time "
        "for a worker of 3 iterations; its 15 planned workers need a budget of about 38 min (--budget 2241)")
    fits = dict(sizing, left_s=5.0 + 3 * 40.0)  # one worker of the fewest iterations fits: the runner sizes the rest
    pipeline._check_budget_left(study, fits, 366.0)


def test_a_probe_whose_calls_took_the_whole_budget_stops_there_and_is_refused():
    # A step of 40 s under --budget 60 ran 3 timed calls and 4 probing ones (6.1 min) before explain refused it.
    from benchctl._run.recorder import Recorder
    from benchctl._workloads import user

    calls = []
    rec = Recorder(probe=True, probe_limit_s=0.05)
    assert user._timed(rec, "call", lambda: calls.append(time.sleep(0.03)), {"iterations": 30, "seconds": 0.001})
    assert len(calls) == 2 and rec.notes[user.PROBE_CUT]["calls"] == 2 and rec.notes[user.PROBE_CUT]["timed_s"] >= 0.05
    free = Recorder(probe=False, probe_limit_s=0.05)  # only a probe worker has the limit
    assert not user._timed(free, "call", lambda: time.sleep(0.03), {"iterations": 3, "seconds": 0.0})
    assert len(free.ticks["call"]) == 3 and user.PROBE_CUT not in free.notes

    study = pipeline.Study(name="explain", workload="slow.py:step", args={"iterations": 30, "seconds": 0.0},
                           rules=(), budget_s=60.0)
    run = {"duration_s": 86.0, "phases": {"call": {"ns": [41e9, 40e9]}}, "notes": {}}
    with pytest.raises(ArgumentError) as refused:
        pipeline._refuse_cut_probe(study, run, {"calls": 2, "timed_s": 81.0})
    assert str(refused.value) == (
        "--budget 60: 2 call(s) of slow.py:step took 81 s in the probe worker (about 40 s a call), the whole "
        "budget, so it stopped there; each worker runs at least 3 calls after its start, and the 6 workers of the "
        "unchanged workload and its A/A control alone, before any cause is probed, need about 13 min "
        "(--budget 750); give several times that, or make one call shorter (fewer steps or a smaller input)")


@pytest.mark.slow  # a real probe worker (torch's import, a few calls of up to 1 s)
@pytest.mark.parametrize("call_s,budget,said", [
    (1.0, "2", "--budget 2: 2 call(s) of"),  # its timed calls take the budget: the probe stops at them
    (0.6, "2.5", "--budget 2.5: the probe worker alone took"),  # its probing calls and start do
])
def test_explain_stops_where_the_probe_worker_spent_the_budget(tmp_path, call_s, budget, said):
    import subprocess
    import sys

    path = tmp_path / "slow_step.py"
    path.write_text(f"import time\n\ndef step():\n    time.sleep({call_s})\n")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchctl", "explain", f"{path}:step", "--budget", budget,
                           "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr and "workers planned" not in done.stdout, done.stderr
    if call_s == 1.0:  # two calls and the worker's start, not its five probing calls more
        assert "it stopped there" in done.stderr and time.perf_counter() - started < 60
