"""The A/A control in every run, and the stop rules of --repeat auto and --budget.

The rounds are driven through the real runner with its worker replaced by a
fake that answers at once with planted timings (and advances a fake clock by
the duration it reports), so each rule is checked exactly and fast; one test
runs real workers.
"""

import numpy as np

from benchctl._cli.render import render
from benchctl._results import document, queries, report
from benchctl._results.analysis import analyse
from benchctl._results.findings import Finding
from benchctl._run import rounds, runner
from synthetic_results import make_doc

ORDERS = ["eval_only", "train_then_eval"]


class FakeWorkers:
    """Stands in for run.launch.run_worker: per-process medians planted by cell."""

    def __init__(self, monkeypatch, median_ms, spread=lambda cell: 0.005, seconds=1.0, seed=0):
        self.median_ms, self.spread = median_ms, spread
        self.seconds_of = lambda cell: seconds
        self.rng = np.random.default_rng(seed)
        self.calls = []
        self.now = 1000.0
        monkeypatch.setattr(runner, "run_worker", self)
        monkeypatch.setattr(rounds.time, "monotonic", lambda: self.now)

    def __call__(self, workload, args, cell, env, workdir, timeout_s=None, probe=False, server=None, pair=None,
                 starts_as=None, carry_control=False, rotation=0, probe_limit_s=None):
        self.calls.append(cell)
        seconds = self.seconds_of(cell)
        self.now += seconds
        process = np.exp(self.rng.normal(0.0, self.spread(cell)))

        def phases(of):
            ns = list(self.median_ms(of) * 1e6 * process * (1 + 0.002 * np.arange(-5, 6)))
            return {"sleep": {"ns": ns, "ticks": [], "counters": {}, "warmup": 0}}

        # A paired worker: both arms in one process, sharing its factor (arm A the baseline it starts as).
        paired = {} if pair is None else {"pair": {"pair": pair.to_json(), "phases": phases(starts_as)}}
        if carry_control:  # the paired A/A control as arm C of the same process
            paired["control"] = {"phases": phases(starts_as), "readback": {},
                                 "pair": {"pair": {"a": {}, "b": {}}, "phases": phases(starts_as), "letter": "C"}}
        return {"started_at": "t", "duration_s": seconds, "status": "ok", "exit_status": 0, "signal": None,
                "phases": phases(cell), "readback": {}, **paired,
                "notes": {}, "counters_info": None, "beside": None, "worker": {"pid": 1}, "error": None,
                "stderr_tail": None, "stdout_tail": None}


def _run(**kwargs):
    return runner.run_matrix("sleep", {"iterations": 1}, {"ms": [1.0, 2.0]}, progress=False, **kwargs)


def test_the_control_arms_are_in_the_json_and_interleaved(monkeypatch, tmp_path):
    workers = FakeWorkers(monkeypatch, lambda c: c["ms"])
    path = str(tmp_path / "r.json")
    doc = _run(repeat=2, json_path=path)
    assert document.load(path)["control"] == {"cell": {"ms": 1.0}, "arms": ["A", "B"]}
    labels = [(r["cell"]["ms"], r.get("arm"), r["repetition"]) for r in doc["runs"]]
    assert labels == [(1.0, "A", 0), (2.0, None, 0), (1.0, "B", 0), (1.0, "A", 1), (2.0, None, 1), (1.0, "B", 1)]
    assert len(workers.calls) == 6
    [arm_b] = [e for e in doc["summary"] if e.get("arm") == "B"]
    assert arm_b["processes"] == 2


def test_no_control(monkeypatch):
    FakeWorkers(monkeypatch, lambda c: c["ms"])
    doc = _run(repeat=2, control=False)
    assert doc["control"] is None and not [r for r in doc["runs"] if "arm" in r]
    assert "no A/A control in this run" in report.format_report(doc)


def test_auto_stops_after_three_rounds_when_everything_is_resolved(monkeypatch):
    FakeWorkers(monkeypatch, lambda c: c["ms"])  # a 2x difference, processes within ~0.5%
    doc = _run(repeat="auto")
    assert len(doc["rounds"]) == rounds.AUTO_START and doc["stopped"] == "every comparison resolved"
    assert {f["comparison"]["outcome"] for f in doc["verdict"]} == {"effect"}


def test_auto_adds_rounds_only_for_unresolved_cells_and_the_control(monkeypatch):
    """ms=2 is 6% slower, its processes disagree by ~4%: unresolved at 3 processes, resolved later."""
    matrix = {"ms": [1.0, 1.06, 1.5]}
    workers = FakeWorkers(monkeypatch, lambda c: c["ms"], spread=lambda c: 0.04 if c["ms"] == 1.06 else 0.002)
    doc = runner.run_matrix("sleep", {"iterations": 1}, matrix, repeat="auto", progress=False)
    later = [r for r in doc["runs"] if r["repetition"] >= rounds.AUTO_START]
    assert later, "an unresolved comparison must get more processes"
    assert {r["cell"]["ms"] for r in later} <= {1.0, 1.06}, "the resolved cell gets no more"
    assert {r.get("arm") for r in later if r["cell"]["ms"] == 1.0} == {"A", "B"}, "the control keeps pace"
    assert len(workers.calls) == len(doc["runs"])


def test_auto_runs_no_control_arms_when_only_other_cells_are_open(monkeypatch):
    """The gap (ms=2 vs ms=1, 1.3x) is settled at three processes; whether iterations=2 closes it is not
    (1.06x with processes 5% apart). Later rounds run only the two cells with iterations=2: the baseline's
    arms would take the budget those cells need."""
    planted = {(2.0, 1): 1.3, (1.0, 1): 1.0, (2.0, 2): 1.06, (1.0, 2): 1.0}
    workers = FakeWorkers(monkeypatch, lambda c: planted[c["ms"], c["iterations"]],
                          spread=lambda c: 0.05 if c["iterations"] == 2 else 0.002)
    doc = runner.run_matrix("sleep", {}, {"ms": [2.0, 1.0], "iterations": [1, 2]}, repeat="auto", focus="ms",
                            progress=False)
    later = [r for r in doc["runs"] if r["repetition"] >= rounds.AUTO_START]
    assert later, "whether iterations=2 closes the gap is open at three processes"
    assert {r["cell"]["iterations"] for r in later} == {2} and not [r for r in later if "arm" in r]
    assert len(workers.calls) == len(doc["runs"])


def test_auto_stops_at_the_cap(monkeypatch):
    """A difference on the band's edge never resolves: the rounds stop at the most processes a cell gets."""
    FakeWorkers(monkeypatch, lambda c: 1.0 if c["ms"] == 1.0 else 1.05, spread=lambda c: 0.05)
    doc = _run(repeat="auto")
    assert len(doc["rounds"]) == rounds.AUTO_MAX_PROCESSES
    assert doc["stopped"].startswith(f"{rounds.AUTO_MAX_PROCESSES} processes per cell")
    assert [line for line in render(doc).splitlines() if line.startswith(" ? ") and "settle it" in line]


def test_budget_stops_the_rounds(monkeypatch):
    FakeWorkers(monkeypatch, lambda c: 1.0 if c["ms"] == 1.0 else 1.05, spread=lambda c: 0.05, seconds=10.0)
    doc = _run(repeat="auto", budget_s=125.0)
    # 3 slots a round at 10 s each: four whole rounds (120 s), then nothing more fits.
    assert len(doc["runs"]) == 12 and doc["stopped"] == "the 125 s budget ran out"
    assert "stopped: the 125 s budget ran out" in report.format_report(doc)


def test_budget_trims_a_round_to_the_workers_that_fit(monkeypatch):
    FakeWorkers(monkeypatch, lambda c: c["ms"], seconds=10.0)
    doc = _run(repeat=3, budget_s=45.0)
    assert len(doc["runs"]) == 4 and doc["stopped"] == "the 45 s budget ran out"


def test_a_cut_round_keeps_the_control_arms_together(monkeypatch):
    """The last round fits 25 s: the baseline's arm A (10 s) and arm B (10 s) run, the 30 s cell does not;
    cutting at the first slot that does not fit would have run arm A alone and left the arms 3 and 2."""
    workers = FakeWorkers(monkeypatch, lambda c: c["ms"])
    workers.seconds_of = lambda cell: 30.0 if cell["ms"] == 2.0 else 10.0
    doc = _run(repeat=3, budget_s=125.0)
    last = [(r["cell"]["ms"], r.get("arm")) for r in doc["runs"] if r["repetition"] == 2]
    assert last == [(1.0, "A"), (1.0, "B")] and doc["stopped"] == "the 125 s budget ran out"
    arms = {e.get("arm"): e["processes"] for e in doc["summary"] if e["cell"] == {"ms": 1.0}}
    assert arms == {None: 3, "B": 3}  # the summary names arm B only; arm A is the cell itself


def test_a_round_with_room_for_one_arm_runs_neither(monkeypatch):
    """The last 15 s fit one 10 s worker: the other cell's runs, neither arm does (arm A alone would have
    left the arms 3 and 2)."""
    FakeWorkers(monkeypatch, lambda c: c["ms"], seconds=10.0)
    doc = _run(repeat=3, budget_s=75.0)
    assert [(r["cell"]["ms"], r.get("arm")) for r in doc["runs"] if r["repetition"] == 2] == [(2.0, None)]
    arms = {e.get("arm"): e["processes"] for e in doc["summary"] if e["cell"] == {"ms": 1.0}}
    assert arms == {None: 2, "B": 2} and doc["stopped"] == "the 75 s budget ran out"


def test_an_arm_that_overran_keeps_its_partner(monkeypatch):
    """Arm A of the last round takes 40 s instead of its 10: arm B still runs beside it (the budget is kept
    within one worker), the cell after it no longer starts."""
    workers = FakeWorkers(monkeypatch, lambda c: c["ms"], seconds=10.0)
    durations = iter([10.0] * 6 + [40.0] + [10.0] * 10)
    workers.seconds_of = lambda cell: next(durations)
    doc = _run(repeat=3, budget_s=95.0)
    last = [(r["cell"]["ms"], r.get("arm")) for r in doc["runs"] if r["repetition"] == 2]
    assert last == [(1.0, "A"), (1.0, "B")]


def test_a_cut_round_runs_what_fits_after_a_slot_that_does_not(monkeypatch):
    """Without a control: the 30 s cell does not fit the last 15 s, the 10 s cell after it still runs."""
    workers = FakeWorkers(monkeypatch, lambda c: c["ms"])
    workers.seconds_of = lambda cell: 30.0 if cell["ms"] == 1.0 else 10.0
    doc = _run(repeat=3, budget_s=95.0, control=False)
    assert [(r["cell"]["ms"], r["repetition"]) for r in doc["runs"]][-1] == (2.0, 2)
    assert len(doc["runs"]) == 5 and doc["stopped"] == "the 95 s budget ran out"


def test_an_unreliable_control_calls_no_effect():
    """Arm B's processes run 20% slower than arm A's: identical arms differ, so the run is unreliable."""
    doc = make_doc({"order": ORDERS}, factor=lambda c: 1.5 if c["order"] == "eval_only" else 1.0, control=True)
    for run in doc["runs"]:
        if run.get("arm") == "B":
            run["phases"]["eval"]["ns"] = [v * 1.2 for v in run["phases"]["eval"]["ns"]]
    analyse(doc, focus="order")
    gap = next(f for f in map(Finding.from_json, doc["verdict"]) if f.rule == "gap")
    assert gap.comparison.outcome == "unresolved" and "A/A control arms differ" in gap.message
    assert "UNRELIABLE: two identical arms differ" in report.format_report(doc)


def test_a_noisy_control_widens_the_band():
    """Arm B's processes scatter by about 10%: a 7% difference, clear within tight cells, is not called."""
    doc = make_doc({"order": ORDERS}, factor=lambda c: 1.07 if c["order"] == "eval_only" else 1.0, control=True)
    for run, scale in zip((r for r in doc["runs"] if r.get("arm") == "B"), (0.9, 1.0, 1.1)):
        run["phases"]["eval"]["ns"] = [v * scale for v in run["phases"]["eval"]["ns"]]
    analyse(doc, focus="order")
    gap = next(f for f in map(Finding.from_json, doc["verdict"]) if f.rule == "gap").comparison
    assert gap.band > 0.07 and gap.outcome != "effect"
    text = report.format_report(doc)
    ctl = queries.control(doc, "eval")
    assert gap.band == ctl.band and ctl.resolves > ctl.band
    assert (f"this run resolves differences of {ctl.resolves:.0%} or more in this phase between two cells of "
            f"3 and 3 processes as noisy as the arms: identical processes differ by {gap.band:.0%} here") in text


def test_comparisons_with_the_baseline_count_both_arms():
    """Arm B is the baseline cell run again: a comparison against the baseline has its 3 + 3 processes,
    while the baseline's own row, the control and the other cells keep their own."""
    matrix = {"order": ORDERS, "alloc": ["default", "retain"]}
    doc = make_doc(matrix, factor=lambda c: 1.5 if c["order"] == "eval_only" else 1.0, control=True)
    base = {"order": "eval_only", "alloc": "default"}
    other = {"order": "train_then_eval", "alloc": "default"}
    third = {"order": "train_then_eval", "alloc": "retain"}
    comparisons = queries.Comparisons(doc)
    cmp = comparisons.compare("eval", other, base)
    assert (cmp.k_a, cmp.k_b) == (3, 6)
    assert len(queries.process_medians(doc, "eval", base)) == 3
    assert comparisons.compare("eval", other, third).k_b == 3
    ctl = comparisons.control("eval").comparison
    assert (ctl.k_a, ctl.k_b) == (3, 3)


def test_identical_cells_in_real_workers_call_no_difference():
    """Two cells that differ only in an unused environment variable, plus the control: real workers."""
    doc = runner.run_matrix("sleep", {"iterations": 6, "ms": 3.0}, {"env": ["BENCHCTL_AA=1", "BENCHCTL_AA=2"]},
                            repeat=3, progress=False)
    assert [r["status"] for r in doc["runs"]] == ["ok"] * 9
    assert not [f for f in map(Finding.from_json, doc["verdict"]) if f.comparison and f.comparison.beyond_band], \
        [f["message"] for f in doc["verdict"]]
    for r in doc["runs"]:
        assert set(r["beside"]) >= {"busy_cpus", "own_cpus", "other_cpus", "steal_cpus", "load_average_start"}


def test_resume_of_an_auto_run_keeps_deciding(monkeypatch, tmp_path):
    """A file started with one process per cell, resumed with --repeat auto: it goes on to three."""
    FakeWorkers(monkeypatch, lambda c: c["ms"])
    path = str(tmp_path / "r.json")
    _run(repeat=1, json_path=path)
    doc = _run(repeat="auto", json_path=path, resume=True)
    assert doc["repeat"] == "auto" and doc["stopped"] == "every comparison resolved"
    counts = {ms: sum(1 for r in doc["runs"] if r["cell"]["ms"] == ms) for ms in (1.0, 2.0)}
    assert counts == {1.0: 2 * rounds.AUTO_START, 2.0: rounds.AUTO_START}  # arms A and B, and the other cell
    assert [r["repetition"] for r in doc["runs"]].count(0) == 3, "round 0 was not run again"
