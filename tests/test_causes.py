"""The cause library on synthetic explaining runs with known answers: each cause's pre-check and judgement."""

import re

import pytest

from benchctl._causes.allocator.rule import Allocator
from benchctl._causes.denormals.probe import PROBE as FLUSH_STATE, FlushState
from benchctl._causes.denormals.rule import Denormals, cpu_penalty_reason
from benchctl._causes.order.rule import Order
from benchctl._causes.placement.rule import Placement
from benchctl._causes.python_time.probe import PROBE as LIBRARY_SPLIT
from benchctl._causes.threads import rule as threads_rule
from benchctl._causes.threads.rule import Threads
from benchctl._libsplit import Kind, KindSamples, LibrarySplit
from benchctl._causes.warmup.rule import Warmup
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._studies import causes
from synthetic_results import make_doc

PROBES = [{}, {"ftz": "process"}, {"alloc": "retain"}, {"threads": 1}, {"busy": "pool"}, {"pin": "compact"}]
PENALTY = {"div": {"subnormal_ratio": 2.6, "zero_ratio": 1.0, "subnormal_ratio_ftz": 1.0, "class": "x",
                   "penalised_subnormal": True, "penalised_zero": False, "ftz_removes": True, "threads": 2},
           "mul": {"subnormal_ratio": 1.0, "zero_ratio": 1.0, "subnormal_ratio_ftz": 1.0, "class": "x",
                   "penalised_subnormal": False, "penalised_zero": False, "ftz_removes": None, "threads": 2}}


def facts(**changes):
    base_facts = dict(phases=["call"], median_ms={"call": 10.0},
                      counters={"call": {"minor_faults_per_iter": 20_000.0, "context_switches_per_iter": 3.0,
                                         "cpu_migrations_per_iter": 2.0}},
                      ops=["aten::div"], census={"outputs": {"values": 100, "subnormal": 100}}, cpus=2,
                      pools=[{"prefix": "libgomp", "user_api": "openmp", "num_threads": 2}])
    return Facts(**{**base_facts, **changes})


def run_with(planted, counters=lambda c: {}, phase="call"):
    """An explaining run where ``planted(probe) -> time factor``, three processes a cell, with the control."""
    doc = make_doc({"with": PROBES}, factor=lambda c: planted(c["with"]), counters=counters, phase=phase,
                   control=True)
    return analyse(doc)


def judge(cause, doc, penalty=PENALTY, phase="call", **fact_changes):
    ctx = rules.Context(doc, phase, queries.Comparisons(doc), facts=facts(**fact_changes), penalty=penalty)
    return cause.judge_phase(ctx)


def status(finding):
    return finding.status


def test_denormals_named_with_its_evidence_when_ftz_removes_the_slowdown():
    doc = run_with(lambda p: 0.4 if p == {"ftz": "process"} else 1.0)
    found = judge(Denormals(), doc)
    assert status(found) == Status.CAUSE and found.explains
    assert "with FTZ/DAZ on every thread it is 2.50× faster" in found.message
    assert "div 2.6×" in found.message and "outputs 100 subnormal of 100" in found.message


def test_denormals_names_a_flush_the_code_set_in_one_thread():
    doc = run_with(lambda p: 0.4 if p == {"ftz": "process"} else 1.0)
    partial = {FLUSH_STATE.key: FlushState(threads=3, reached=3, flushed=1, caller=True)}
    found = judge(Denormals(), doc, probed=partial)
    assert status(found) == Status.CAUSE
    assert "unchanged, FTZ/DAZ was on in 1 of 3 threads, the calling thread among them" in found.message
    assert "benchctl.set_flush_denormal(True) sets every thread" in found.message
    for none_or_all in (0, 3):  # no flush of its own, or one on every thread: nothing half-applied to say
        state = {FLUSH_STATE.key: FlushState(threads=3, reached=3, flushed=none_or_all, caller=bool(none_or_all))}
        assert "FTZ/DAZ was on in" not in judge(Denormals(), doc, probed=state).message


def test_the_flush_state_probe_reads_a_flush_set_in_the_calling_thread_alone():
    import torch

    from benchctl import fpenv
    from benchctl._probe import ProbedCall

    if not fpenv.supported()[0]:
        pytest.skip(fpenv.supported()[1])
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    torch.ones(1 << 20).mul_(2.0)  # a parallel op: torch's team exists
    before = fpenv.thread_state()
    try:
        torch.set_flush_denormal(True)
        seen = FLUSH_STATE.read(FLUSH_STATE.record(ProbedCall()))
        assert seen.caller and seen.flushed == 1 and seen.partial, seen
        fpenv.set_flush_denormal(True, scope="process")
        seen = FLUSH_STATE.read(FLUSH_STATE.record(ProbedCall()))
        assert seen.flushed == seen.reached >= 2 and not seen.partial, seen
    finally:
        fpenv.set_flush_denormal(False, scope="process")
        fpenv.set_thread_state(before["ftz"], bool(before["daz"]))
        torch.set_num_threads(threads)
    assert FLUSH_STATE.read({}) is None


def test_a_census_that_fails_leaves_the_flush_state_unknown_not_the_probe_failed(monkeypatch):
    from benchctl import fpenv
    from benchctl._probe import ProbedCall

    def unreachable(**kwargs):
        raise RuntimeError("a thread did not answer the census signal")

    monkeypatch.setattr(fpenv, "supported", lambda: (True, "MXCSR"))
    monkeypatch.setattr(fpenv, "census", unreachable)
    assert FLUSH_STATE.record(ProbedCall()) == {}


def test_denormals_ruled_out_by_the_census_or_the_penalty_profile():
    assert "no subnormal values" in Denormals().precheck(
        facts(census={"outputs": {"values": 100, "subnormal": 0}}), PENALTY)
    assert "does not penalise" in Denormals().precheck(facts(ops=["aten::mul"]), PENALTY)
    assert Denormals().precheck(facts(), PENALTY) is None  # div is penalised and the values hold subnormals
    assert Denormals().precheck(facts(census=None), None) is None  # nothing known: nothing ruled out
    counted_nothing = facts(census={"outputs": {"values": 0, "subnormal": 0}})  # it returns no tensor
    assert counted_nothing.subnormals() is None and Denormals().precheck(counted_nothing, None) is None



def test_denormals_kept_in_by_a_slowdown_under_the_penalty_ratio_that_ftz_removes():
    # An AMD EPYC of family 23 divides subnormals 1.3x slower, a row the profile says has no penalty (under its
    # 1.5x), and FTZ/DAZ took 1.31x off a division-bound call there: ruling it out before running missed it.
    def div(ratio, ftz):
        return {**PENALTY, "div": {**PENALTY["div"], "subnormal_ratio": ratio, "subnormal_ratio_ftz": ftz,
                                   "penalised_subnormal": False, "ftz_removes": None}}

    assert Denormals().precheck(facts(), div(1.3, 0.9)) is None
    assert cpu_penalty_reason(div(1.3, 0.9), ("div",)) == (
        True, "this CPU runs subnormal inputs of the ops it runs slower, though by less than the profile calls a "
              "penalty, and FTZ/DAZ removes it (div 1.3× on subnormal inputs, penalty profile)")
    assert "does not penalise" in Denormals().precheck(facts(), div(1.16, 0.9))  # within the noise of identical work
    assert "does not penalise" in Denormals().precheck(facts(), div(1.3, 1.3))  # FTZ/DAZ does not take it away
    assert "does not penalise" in Denormals().precheck(facts(ops=["aten::mul"]), div(1.3, 0.9))  # not an op it runs


def test_denormals_kept_by_subnormal_inputs_where_the_outputs_hold_none(tmp_path):
    # A conv2d of a global of 1e-39s returns normal values (its bias): the probe worker's census of what its ops
    # read keeps the cause, and says so.
    from benchctl._run import runner

    path = tmp_path / "tiny_inputs.py"
    path.write_text("import torch\nconv = torch.nn.Conv2d(2, 2, 3, padding=1)\nx = torch.full((1, 2, 8, 8), 1e-39)\n\n"
                    "def step():\n    with torch.no_grad():\n        return conv(x)\n")
    doc = runner.run_matrix(f"{path}:step", {"iterations": 3}, {}, repeat=1, control=False, progress=False, probe=True)
    found = Facts.from_probe(doc)
    assert found.census["outputs"]["subnormal"] == 0 and found.census["op_inputs"]["subnormal"] == 128
    assert found.subnormals() == 128 and Denormals().precheck(found, None) is None
    assert "op inputs 128 subnormal of" in found.census_text()


def test_the_census_of_op_inputs_runs_beside_an_optimizer_step(tmp_path):
    # torch.optim's step loads dynamo without compiling anything: the census of what the ops read still runs.
    from benchctl._run import runner

    path = tmp_path / "adam_step.py"
    path.write_text("import torch\nmodel = torch.nn.Linear(8, 2)\nopt = torch.optim.Adam(model.parameters())\n"
                    "x = torch.full((4, 8), 1e-39)\n\n"
                    "def step():\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n")
    doc = runner.run_matrix(f"{path}:step", {"iterations": 3}, {}, repeat=1, control=False, progress=False, probe=True)
    found = Facts.from_probe(doc)
    assert found.census["op_inputs"]["subnormal"] >= 32, found.census


def test_the_probe_workers_census_counts_float16_subnormals_apart_in_every_part(tmp_path):
    # A float16 layer whose weights and outputs are float16 subnormals (3e-6 and 1.2e-5, under 6.1e-5): every part of
    # the census counts them as float16's, so none is taken for a float32 share (the weights' part summed only
    # values and subnormals, and a model of them read "too few subnormals to matter").
    from benchctl._run import runner

    path = tmp_path / "half_layer.py"
    path.write_text("import torch\n\n\nclass Half:\n    @staticmethod\n    def setup():\n"
                    "        layer = torch.nn.Linear(4, 4).half()\n        with torch.no_grad():\n"
                    "            layer.weight.fill_(3e-6)\n            layer.bias.zero_()\n"
                    "        return layer, torch.ones(2, 4, dtype=torch.float16)\n\n"
                    "    @staticmethod\n    def run(state):\n        layer, x = state\n        with torch.no_grad():\n"
                    "            return layer(x)\n")
    doc = runner.run_matrix(f"{path}:Half", {"iterations": 3}, {}, repeat=1, control=False, progress=False,
                            probe=True)
    found = Facts.from_probe(doc)
    weights = found.census["weights"]
    assert weights["subnormal"] == weights["float16_subnormal"] == 16 and weights["densest"] == 0.0, found.census
    assert found.subnormals_all_float16() and found.densest_subnormal_share() == 0.0


def test_allocator_named_only_when_faults_fall_with_the_time():
    def faults(c):
        return {"minor_faults": 100.0 if c["with"] == {"alloc": "retain"} else 20_000.0}
    doc = run_with(lambda p: 0.5 if p == {"alloc": "retain"} else 1.0, counters=faults)
    found = judge(Allocator(), doc)
    assert status(found) == Status.CAUSE
    assert "minor page faults/iter go from 20k to 100" in found.message
    flat = run_with(lambda p: 0.5 if p == {"alloc": "retain"} else 1.0, counters=lambda c: {"minor_faults": 9.0})
    assert status(judge(Allocator(), flat)) == Status.UNCONFIRMED


def test_allocator_ruled_out_when_its_faults_cost_next_to_nothing():
    few = facts(counters={"call": {"minor_faults_per_iter": 3.0}})
    assert "under 1%" in Allocator().precheck(few, None)
    assert Allocator().precheck(facts(), None) is None


def test_threads_oversubscription_with_context_switches():
    def switches(c):
        return {"context_switches": 5.0 if c["with"] == {"threads": 1} else 400.0}
    doc = run_with(lambda p: 0.3 if p == {"threads": 1} else (1.5 if p == {"busy": "pool"} else 1.0),
                   counters=switches)
    found = judge(Threads(), doc)
    assert status(found) == Status.CAUSE and "with 1 thread it is 3.33× faster" in found.message
    assert "context switches/iter go from 400 to 5" in found.message
    assert "another busy BLAS pool beside it makes it 1.50× slower" in found.message
    assert "other processes" not in found.message
    for run in doc["runs"]:
        run["beside"] = {"other_cpus": 1.2, "steal_cpus": 0.1}  # another program kept the CPUs busy
    found = judge(Threads(), doc)
    assert "other processes kept 1.30 CPUs busy beside it" in found.message


def test_threads_oversubscription_shown_by_the_wait_for_a_cpu_where_switches_barely_move():
    # Few, long slices (EEVDF): 3 context switches an iteration against 2, while the team waited 6 of its 10 ms;
    # on one thread its idle members still wait 3.5 ms (spinning after the blocks on two): the 2.5 ms it fell by
    # are over a quarter of the 4 ms saved, though not half of what it was.
    def counted(c):
        one = c["with"] == {"threads": 1}
        return {"context_switches": 2.0 if one else 3.0, "runqueue_wait_ns": 3.5e6 if one else 6e6}
    faster = lambda p: 0.6 if p == {"threads": 1} else 1.0  # noqa: E731 (saves 4 ms of 10)
    found = judge(Threads(), run_with(faster, counters=counted))
    assert status(found) == Status.CAUSE, found.message
    assert "context switches/iter go from 3 to 2; ms waiting for a CPU/iter go from 6 to 3.5" in found.message
    assert found.evidence["runqueue_wait_ns_per_iter"] == {"all": 6e6, "1": 3.5e6}
    # Halved, but by 0.5 ms of the 4 ms saved (under a quarter of it): not what made it faster.
    found = judge(Threads(), run_with(faster, counters=lambda c: {
        "context_switches": 2.0 if c["with"] == {"threads": 1} else 3.0,
        "runqueue_wait_ns": 0.5e6 if c["with"] == {"threads": 1} else 1.0e6}))
    assert status(found) == Status.UNCONFIRMED
    assert "yet the wait for a CPU does not fall by 25% of the time saved" in found.message, found.message
    # Switches that fall, 2 an iteration to none, beside a wait of 0.11 ms of the ~9.6 ms saved: read, the wait
    # decides (the switches alone once called a conv on subnormals 27x faster on the one thread its code had set
    # FTZ in "oversubscribed").
    found = judge(Threads(), run_with(lambda p: 0.04 if p == {"threads": 1} else 1.0, counters=lambda c: {
        "context_switches": 0.0 if c["with"] == {"threads": 1} else 2.0,
        "runqueue_wait_ns": 0.004e6 if c["with"] == {"threads": 1} else 0.11e6}))
    assert status(found) == Status.UNCONFIRMED, found.message
    assert "context switches/iter go from 2 to 0" in found.message and "see denormals" not in found.message
    flushed = {FLUSH_STATE.key: FlushState(threads=5, reached=5, flushed=2, caller=True)}
    found = judge(Threads(), run_with(lambda p: 0.04 if p == {"threads": 1} else 1.0, counters=lambda c: {
        "context_switches": 0.0 if c["with"] == {"threads": 1} else 2.0,
        "runqueue_wait_ns": 0.004e6 if c["with"] == {"threads": 1} else 0.11e6}), probed=flushed)
    assert status(found) == Status.UNCONFIRMED
    assert ("its one thread is the calling thread, the one that flushes subnormals (unchanged, FTZ/DAZ was on in 2 "
            "of 5 threads, the calling thread among them): see denormals") in found.message
    # Not read (an older results file, or a kernel without schedstat): the switches alone decide, and say so.
    found = judge(Threads(), run_with(faster, counters=lambda c: {"context_switches": 3.0}))
    assert status(found) == Status.UNCONFIRMED and "waiting for a CPU/iter" not in found.message
    assert "yet neither context switches nor the wait for a CPU fall with it" in found.message


def test_threads_waiting_on_their_own_team_are_named_by_the_openmp_runtimes_share():
    # A small LSTM: 2.3x faster on one thread, its wait for a CPU nil on both sides, while the OpenMP runtime (fork,
    # barriers, the team's idle wait) held most of its CPU time: the team waits on itself.
    faster = lambda p: 0.43 if p == {"threads": 1} else 1.0  # noqa: E731
    counted = lambda c: {"context_switches": 0.0, "runqueue_wait_ns": 1e3}  # noqa: E731
    waiting = LibrarySplit(kinds=(KindSamples(Kind.OPENMP, 230), KindSamples(Kind.TORCH_CPU, 96)), samples=326,
                           cpu_ns=326_000_000, kernel_ns=0, period_ns=1_000_000)
    found = judge(Threads(), run_with(faster, counters=counted), probed={LIBRARY_SPLIT.key: waiting})
    assert status(found) == Status.CAUSE, found.message
    assert "the OpenMP runtime held 71% of the CPU time of its timed iterations (at least 65% by its 326 samples" \
        in found.message
    assert threads_rule.SYNC_MECHANISM in found.message and threads_rule.SYNC_FIX in found.message
    # 9 of 28 samples: 32%, yet at least 18% by so few: not enough to name it.
    few = LibrarySplit(kinds=(KindSamples(Kind.OPENMP, 9), KindSamples(Kind.TORCH_CPU, 19)), samples=28,
                       cpu_ns=28_000_000, kernel_ns=0, period_ns=1_000_000)
    found = judge(Threads(), run_with(faster, counters=counted), probed={LIBRARY_SPLIT.key: few})
    assert status(found) == Status.UNCONFIRMED and "the wait for a CPU does not fall" in found.message
    # A team whose calling thread alone flushes subnormals waits on its slow threads: the denormals cause's.
    flushed = FlushState(threads=2, reached=2, flushed=1, caller=True)
    found = judge(Threads(), run_with(faster, counters=counted),
                  probed={LIBRARY_SPLIT.key: waiting, FLUSH_STATE.key: flushed})
    assert status(found) == Status.UNCONFIRMED and "see denormals" in found.message


def test_threads_that_do_useful_work_are_not_a_cause():
    doc = run_with(lambda p: 1.8 if p == {"threads": 1} else 1.0)
    found = judge(Threads(), doc)
    assert status(found) == Status.NOT_CAUSE and "its threads do useful work" in found.message


def test_threads_ruled_out_where_the_code_itself_runs_one_thread():
    assert "one thread already" in Threads().precheck(facts(torch_threads=1), None)
    assert Threads().precheck(facts(torch_threads=2), None) is None
    assert Threads().precheck(facts(), None) is None  # not known: probed


def test_placement_and_the_ruled_out_cases():
    def migrations(c):
        return {"cpu_migrations": 0.0 if c["with"] == {"pin": "compact"} else 6.0}
    doc = run_with(lambda p: 0.8 if p == {"pin": "compact"} else 1.0, counters=migrations)
    assert status(judge(Placement(), doc)) == Status.CAUSE
    still = facts(counters={"call": {"cpu_migrations_per_iter": 0.1}})
    assert "do not move between CPUs" in Placement().precheck(still, None)
    assert "one CPU" in Placement().precheck(facts(cpus=1), None)


def test_no_planted_cause_is_named():
    doc = run_with(lambda p: 1.0)
    for cause in (Denormals(), Allocator(), Placement()):
        found = judge(cause, doc)
        assert status(found) == Status.NOT_CAUSE and not found.explains, found.message
        assert "changes nothing beyond ±5%" in found.message


def _first_call_slower(factor):
    doc = run_with(lambda p: 1.0)
    for run in doc["runs"]:
        run["phases"]["call"]["ns"][0] *= factor
    return doc


def test_warmup_named_when_the_first_iteration_costs_the_series_more_than_the_band():
    found = judge(Warmup(), _first_call_slower(50))  # lazy initialisation on the first call
    assert status(found) == Status.CAUSE and re.search(r"takes 50\.\d\d× its steady median", found.message)
    assert re.search(r"makes a series \+30\d\.\d% \[95% CI", found.message), found.message  # 49 / 16
    # Too few iterations for the detector to find a warm-up (none recorded): the first one is it.
    assert "settles after 1 iteration(s)" in found.message, found.message


def _paired_start(run, first_factor):
    """``run`` as a paired process's would hold it: its first iteration left out after the switch to arm A (the
    process's start), arm A's iterations under ``pair``, arm B's as its phases."""
    ns = run["phases"]["call"]["ns"]
    run["pair"] = {"phases": {"call": {"ns": list(ns[1:]), "warmup": 0}},
                   "schedule": {"call": "a" + "A" * (len(ns) - 1) + "b" + "B" * len(ns)},
                   "settling_ns": {"call": [ns[0] * first_factor, ns[0]]}}
    run["phases"]["call"] = {**run["phases"]["call"], "ns": list(ns), "warmup": 0}
    return run


def test_warmup_reads_a_paired_processs_start_and_counts_each_process_once():
    """Every probe paired: the baseline has one process of its own, and each paired process starts as the baseline's
    (its first iterations, left out after the switch to arm A, run under the baseline's settings). A lazy start
    there is the process's warm-up; the paired control a cell's worker carried is the same process, not another."""
    doc = run_with(lambda p: 1.0)
    base = [r for r in doc["runs"] if r["cell"] == {"with": {}} and r.get("arm") in (None, "A")]
    others = [r for r in doc["runs"] if r not in base]
    paired = [_paired_start(r, 50) for r in others[:3]]
    carried = [{**_paired_start(dict(r), 50), "arm": "P", "carried_by": r["cell"]} for r in paired]
    for run in base[:1]:
        run["phases"]["call"]["ns"][0] *= 50
    doc["runs"] = base[:1] + paired + carried
    found = judge(Warmup(), doc)
    assert status(found) == Status.CAUSE and "(medians of 4 processes)" in found.message, found.message
    assert re.search(r"takes 50\.\d\d× its steady median", found.message), found.message
    # The same processes with an ordinary start: no lazy initialisation.
    for run in paired + carried:
        run["pair"]["settling_ns"]["call"][0] /= 50
    base[0]["phases"]["call"]["ns"][0] /= 50
    assert status(judge(Warmup(), doc)) == Status.NOT_CAUSE
    # Every cell paired under --repeat auto: no process of the baseline's own, the paired processes' starts alone.
    for run in paired + carried:
        run["pair"]["settling_ns"]["call"][0] *= 50
    doc["runs"] = paired + carried
    found = judge(Warmup(), doc)
    assert status(found) == Status.CAUSE and "(medians of 3 processes)" in found.message, found.message


def test_a_start_of_a_few_iterations_is_not_lazy_initialisation():
    found = judge(Warmup(), _first_call_slower(1.6))  # 0.6 / 16 iterations: under 4% of the series
    assert status(found) == Status.NOT_CAUSE and "costs 0.6 steady iterations" in found.message, found.message
    found = judge(Warmup(), _first_call_slower(8))  # +44% of this short series, yet only 7 iterations
    assert status(found) == Status.NOT_CAUSE and "not lazy initialisation" in found.message, found.message
    flat = judge(Warmup(), run_with(lambda p: 1.0))
    assert status(flat) == Status.NOT_CAUSE and "costs 0.0 steady iterations" in flat.message, flat.message


def test_order_alone_against_after_the_earlier_phase():
    doc = make_doc({"with": [{}, {"only": "eval"}]}, factor=lambda c: 1.4 if c["with"] else 1.0, control=True)
    analyse(doc)
    found = judge(Order(), doc, phase="eval", phases=["train", "eval"])
    assert status(found) == Status.CAUSE
    assert "eval alone in a fresh process is 1.40× slower than after train [95% CI 1.3" in found.message
    assert "one phase" in Order().precheck(facts(), None)


def test_every_cause_has_a_name_and_the_library_lists_each_once():
    names = [c.name for c in causes.CAUSES]
    assert len(set(names)) == len(names) and all(c.title for c in causes.CAUSES)


@pytest.mark.parametrize("cause", causes.CAUSES, ids=lambda c: c.name)
def test_a_ruled_out_cause_is_marked_as_such(cause):
    found = cause.ruled_out("because")
    assert found.phase is None and status(found) == Status.RULED_OUT and found.mark == "-"
    assert found.message == f"{cause.title}: ruled out before running: because"
