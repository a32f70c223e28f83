"""Iterations per process sized to the budget, and a budget kept within one worker for any iteration length."""

import textwrap

import pytest

from benchctl._run import rounds, runner
from benchctl._studies import explain, pipeline
from benchctl._workloads.user import MIN_ITERATIONS
from test_control import FakeWorkers
from test_pipeline import Probe, _study


def write(tmp_path, name, code):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return str(path)


def test_the_iterations_that_fit_the_budget_between_the_fewest_and_the_most():
    # 1 ms an iteration: the budget buys far more than the most, which is kept.
    assert rounds.iterations_for(100.0, 21, 0.001, 1.0, 30) == 30
    # 1 s an iteration, 10 workers in 120 s, 2 s each to start: 10 iterations.
    assert rounds.iterations_for(120.0, 10, 1.0, 2.0, 30) == 10
    # 4.8 s an iteration (the workload): never fewer than the steady minimum.
    assert rounds.iterations_for(95.0, 21, 4.8, 2.0, 30) == MIN_ITERATIONS
    # Nothing measured: the most.
    assert rounds.iterations_for(95.0, 0, 4.8, 2.0, 30) == 30
    assert rounds.iterations_for(95.0, 21, 0.0, 2.0, 30) == 30
    assert rounds.planned_processes(6, rounds.AUTO, control=True) == 21
    assert rounds.planned_processes(2, 2, control=False) == 4


def test_a_time_target_stops_a_process_after_the_fewest_steady_iterations(tmp_path):
    path = write(tmp_path, "nap.py", """
        import time

        def nap():
            time.sleep(0.05)
    """)
    doc = runner.run_matrix(f"{path}:nap", {"iterations": 30, "seconds": 0.1}, {}, progress=False, control=False)
    assert len(doc["runs"][0]["phases"]["call"]["ns"]) == MIN_ITERATIONS
    doc = runner.run_matrix(f"{path}:nap", {"iterations": 5}, {}, progress=False, control=False)
    assert len(doc["runs"][0]["phases"]["call"]["ns"]) == 5, "no target: the count"


def test_a_worker_that_no_longer_fits_is_not_started(monkeypatch):
    # 10 s workers, a 25 s budget: the first round's workers have no estimate, yet the third cell is not
    # started once two workers took 20 s; the control's arm B still follows its arm A (one worker over).
    FakeWorkers(monkeypatch, lambda c: c["ms"], seconds=10.0)
    doc = runner.run_matrix("sleep", {"iterations": 1}, {"ms": [1.0, 2.0, 3.0]}, repeat=3, budget_s=25.0,
                            progress=False)
    assert [(r["cell"]["ms"], r.get("arm")) for r in doc["runs"]] == [(1.0, "A"), (2.0, None), (1.0, "B")]
    assert doc["stopped"] == "the 25 s budget ran out"


def test_the_probe_aims_at_a_share_of_the_budget_and_the_matrix_gets_the_iterations_that_fit(monkeypatch, tmp_path):
    target = write(tmp_path, "slow.py", "def step():\n    pass\n") + ":step"
    workers = FakeWorkers(monkeypatch, lambda c: 1000.0, seconds=5.0)  # 1 s an iteration
    given = []

    def worker(workload, args, *rest, **kw):
        given.append(args)
        return workers(workload, args, *rest, **kw)

    monkeypatch.setattr(runner, "run_worker", worker)
    said = []
    study = _study(tmp_path, [Probe({"threads": 1})], workload=target, args=explain.check_target(target, None),
                   matrix=None, census=None, budget_s=40.0)
    doc = pipeline.run_study(study, say=said.append)
    assert given[0] == {"iterations": 30, "seconds": pipeline.PROBE_SHARE * 40.0}
    # 2 cells, the paired control carried in the paired cell's workers, 3 processes each: 6 workers in about
    # 40 s, 1 s an iteration, no start cost left over in the fake probe (5 s for 11 iterations and its untimed
    # probe calls); the 3 carrying workers run 1.5x the iterations (7.5 workers' worth): 5 iterations each.
    sizing = doc["evidence"]["sizing"]
    assert (sizing["processes"], sizing["iteration_s"], sizing["start_s"]) == (6, pytest.approx(1.0, rel=0.05), 0.0)
    assert sizing["timed_shares"] == 7.5 and sizing["iterations"] == 5
    assert sorted(a["iterations"] for a in given[1:]) == [5, 5, 5, 8, 8, 8]  # ceil(5 x 1.5) for the carriers
    assert "5 iterations per worker: 1 s an iteration in the probe, 6 workers planned" in "\n".join(said)


def test_explain_runs_the_first_rounds_its_sizing_chose(monkeypatch, tmp_path):
    """Every probe paired under --repeat auto, the budget limiting 1 s iterations: five first rounds, in the file and
    in the header."""
    target = write(tmp_path, "slow.py", "def step():\n    pass\n") + ":step"
    workers = FakeWorkers(monkeypatch, lambda c: 1000.0, seconds=5.0)  # 1 s an iteration
    said = []
    study = _study(tmp_path, [Probe({"threads": 1})], workload=target, args=explain.check_target(target, None),
                   matrix=None, census=None, budget_s=40.0, repeat=rounds.AUTO, paired=True)
    doc = pipeline.run_study(study, say=said.append)
    assert doc["evidence"]["sizing"]["first_rounds"] == 5 == doc["metadata"]["runner"]["first_rounds"]
    assert [r["workers"] for r in doc["rounds"]][:5] == [1] * 5 and len(workers.calls) >= 1 + 5
    assert "5 processes per cell, then more for unresolved comparisons" in "\n".join(said)


@pytest.mark.slow
def test_explain_keeps_its_budget_for_an_iteration_of_a_second(tmp_path):
    target = write(tmp_path, "second.py", """
        import time

        def second():
            time.sleep(1.0)
    """) + ":second"
    budget_s = 40.0
    doc = explain.explain(target, budget_s=budget_s, progress=False)
    longest = max(r.get("duration_s", 0.0) for r in doc["runs"])  # a carried control's run has none
    assert doc["metadata"]["took_s"] <= budget_s + longest, (doc["metadata"]["took_s"], longest)
    assert doc["evidence"]["sizing"]["iterations"] >= MIN_ITERATIONS


def test_the_probes_own_untimed_probing_is_not_charged_as_every_workers_start(tmp_path):
    """A probe worker of 20 s: 10 timed iterations of 0.1 s, and 12 s of profiling and census after them
    (the profiler's first start alone took ~5 s here). Each matrix worker starts in the 7 s left, not 19 s."""
    study = _study(tmp_path, [], args={"iterations": 100})
    record = {"duration_s": 20.0, "phases": {"call": {"ns": [1e8] * 10}}, "notes": {"probe": {"probe_s": 12.0}}}
    sizing = pipeline._sizing(study, record, {"ms": [1.0]}, 100.0)
    assert sizing["start_s"] == pytest.approx(7.0)
    without = {**record, "notes": {}}  # a record without it: its probe calls counted as iterations
    assert pipeline._sizing(study, without, {"ms": [1.0]}, 100.0)["start_s"] == pytest.approx(20.0 - 1.0 - 0.2)


@pytest.mark.parametrize("matrix, paired, repeat, processes, header", [
    # Every probe paired: its cells, the paired A/A control carried in the paired cell's workers, no
    # fresh-process control (3 processes each) ...
    ({"with": [{}, {"ftz": "process"}]}, True, 3, 2 * 3, "no fresh-process A/A control (every probe is paired)"),
    # ... and under --repeat auto no process of the baseline's own: the paired ones time it as their arm A.
    ({"with": [{}, {"ftz": "process"}]}, True, rounds.AUTO, 3, "no process of the baseline's own"),
    # One probe needs fresh processes: the fresh-process control's second arm as well.
    ({"with": [{}, {"ftz": "process"}, {"alloc": "retain"}]}, True, 3, (3 + 1) * 3, "plus the baseline again"),
    ({"with": [{}, {"ftz": "process"}, {"alloc": "retain"}]}, True, rounds.AUTO, (3 + 1) * 3,
     "plus the baseline again"),
    ({"with": [{}, {"ftz": "process"}]}, False, 3, (2 + 1) * 3, "plus the baseline again as an A/A control"),
])
def test_the_sizing_and_the_header_count_the_controls_a_run_will_have(tmp_path, matrix, paired, repeat, processes,
                                                                      header):
    study = _study(tmp_path, [], args={"iterations": 30}, paired=paired, budget_s=120.0, repeat=repeat)
    record = {"duration_s": 2.0, "phases": {"call": {"ns": [1e6] * 10}}, "notes": {}}
    assert pipeline._sizing(study, record, matrix, 100.0)["processes"] == processes
    text = pipeline._header(study, matrix, 100.0)
    assert header in text and (("timed paired with the baseline" in text) == paired)


def test_a_paired_probe_sized_by_the_budget_gets_five_first_rounds_in_the_same_time(tmp_path):
    """Every probe paired and the budget, not ``iterations``, limiting the workers: five shorter workers in the time
    three longer ones would take; where ``iterations`` limits them, or a probe needs fresh processes, three."""
    paired_matrix = {"with": [{}, {"ftz": "process"}]}
    record = {"duration_s": 2.0, "phases": {"call": {"ns": [1e8] * 10}}, "notes": {"probe": {"probe_s": 0.0}}}

    def sizing(iterations, matrix=paired_matrix, left=100.0):
        study = _study(tmp_path, [], args={"iterations": iterations}, paired=True, budget_s=120.0,
                       repeat=rounds.AUTO)
        return study, pipeline._sizing(study, record, matrix, left)

    study, bound = sizing(10_000)  # 0.1 s an iteration: the budget buys far fewer than 10,000
    start = bound["start_s"]
    assert (bound["first_rounds"], bound["processes"]) == (5, 5)
    assert bound["iterations"] == rounds.iterations_for(100.0, 5, 0.1, start, 10_000, 5 * 1.5)
    three = rounds.iterations_for(100.0, 3, 0.1, start, 10_000, 3 * 1.5)
    assert bound["iterations"] < three < 10_000
    # The same timed work and starts in the same budget, split five ways instead of three.
    assert 5 * (start + 1.5 * bound["iterations"] * 0.1) == pytest.approx(3 * (start + 1.5 * three * 0.1), rel=0.02)
    assert "5 processes per cell" in pipeline._header(study, paired_matrix, 100.0, bound["first_rounds"])
    assert sizing(30)[1]["first_rounds"] == rounds.AUTO_START  # 30 iterations fit: the count limits them
    mixed = {"with": [{}, {"ftz": "process"}, {"alloc": "retain"}]}  # alloc needs fresh processes
    assert sizing(10_000, mixed)[1]["first_rounds"] == rounds.AUTO_START
    # Where five would each be cut to the floor, three stay (the budget then runs fewer, not shorter, workers).
    tight = sizing(10_000, left=5 * start + 5 * 1.5 * MIN_ITERATIONS * 0.1)[1]
    assert tight["first_rounds"] == rounds.AUTO_START
