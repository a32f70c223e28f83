"""The cause "time outside torch's ops": its collectors (warnings, cProfile frames) on tiny in-process
calls, its pre-check and its evidence-only judgement on synthetic facts."""

import warnings

import numpy as np
import torch

from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts, OpRow, PyFrame, WarningSeen
from benchctl._results.findings import Status
from benchctl._causes.python_time import rule as python_time
from benchctl._causes.profiler.probe import PROBE as PROFILER_WATCH, ProfilerFacts
from benchctl._causes.python_time.probe import CHILDREN, ChildProcesses
from benchctl._causes.tracing.probe import PROBE as TRACING_WATCH, TracingFacts
from benchctl._workloads import probe_python
from synthetic_results import make_doc

SLOW_LIST = WarningSeen("UserWarning", "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
                        "consider converting the list to a single numpy.ndarray with numpy.array() before "
                        "converting to a tensor. (Triggered internally at tensor_new.cpp:252.)", "plant.py:12", 1)
FRAME = PyFrame("torch.tensor", "built-in", 41_000.0, 1, False, "run (plant.py:12)")


def facts(inside_us, wall_us=50_000.0, median_ms=45.0, **changes):
    table = (OpRow("aten::mm", ("float",), 1, inside_us, inside_us),)
    return Facts(**{"phases": ["run"], "median_ms": {"run": median_ms}, "op_table": table, "call_wall_us": wall_us,
                    **changes})


def judge(f):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="run", control=True))
    return python_time.PythonTime().judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=f))


def test_precheck_rules_out_a_call_spent_in_torchs_ops_and_keeps_one_spent_outside():
    assert "90% of its profiled call is in torch's ops" in python_time.PythonTime().precheck(facts(45_000.0), None)
    assert python_time.PythonTime().precheck(facts(5_000.0), None) is None
    assert "not measured" in python_time.PythonTime().precheck(Facts(phases=["run"]), None)  # no profiled call


def test_compiling_is_not_counted_as_python_time():
    compiled = facts(5_000.0, call_compile_us=40_000.0)
    assert abs(compiled.outside_share() - 0.1) < 1e-9
    said = python_time.PythonTime().precheck(compiled, None)
    assert "90% of its profiled call is in torch's ops or compiling" in said


def test_judged_a_cause_with_the_share_the_frames_and_torchs_warning():
    found = judge(facts(5_000.0, python_frames=(FRAME,), warnings=(SLOW_LIST,)))
    assert found.status is Status.CAUSE and found.comparison is None
    assert "90% of its profiled call (50 ms) is outside torch's ops called from Python (5 ms in them)" in found.message
    # The frames' times are cProfile's, which slows Python code: the finding says so beside them.
    assert "in a second call under cProfile (which slows Python code) by own time: torch.tensor 41 ms (called from " \
           "run (plant.py:12))" in found.message
    assert ("torch warned: UserWarning: Creating a tensor from a list of numpy.ndarrays is extremely slow "
            "(at plant.py:12)") in found.message
    assert python_time.MECHANISM in found.message and "evidence only" in found.message
    assert found.evidence["outside_share"] == 0.9


def test_open_when_the_profiler_made_the_call_much_longer_and_not_a_cause_under_the_share():
    slowed = judge(facts(5_000.0, median_ms=50.0 / (python_time.PROFILER_TRUSTED + 1)))
    assert slowed.status is Status.UNCONFIRMED and "the profiler's own cost may be what is outside" in slowed.message
    assert judge(facts(45_000.0)).status is Status.NOT_CAUSE
    assert judge(Facts(phases=["run"])) is None


def test_open_where_the_code_runs_the_profiler_itself():
    # profiler_on.py on an AMD EPYC VM: 50% of its profiled call outside the ops, the most of it under the
    # profiler's own __exit__ (5.9 ms of 16.9), named * beside the profiler cause: the sessions' work is that cause's.
    sessions = ProfilerFacts(starts=30)
    found = judge(facts(5_000.0, python_frames=(FRAME,), probed={PROFILER_WATCH.key: sessions}))
    assert found.status is Status.UNCONFIRMED, found.message
    assert (f"yet {sessions.text()}: its sessions' own work (starting and stopping them, collecting their events) "
            "is outside torch's ops too, the profiler's cost and not Python's (see profiler)") in found.message
    assert judge(facts(5_000.0, probed={PROFILER_WATCH.key: ProfilerFacts(on_before=True)})).status is \
        Status.UNCONFIRMED
    assert judge(facts(5_000.0, probed={PROFILER_WATCH.key: ProfilerFacts()})).status is Status.CAUSE  # none seen


def test_open_where_a_trace_function_was_on_over_its_calls():
    # A line tracer left on (sys.settrace at import): every Python frame outside the ops pays for it, the tracing
    # cause's and not the code's Python.
    tracers = TracingFacts(trace="tracer")
    found = judge(facts(5_000.0, python_frames=(FRAME,), probed={TRACING_WATCH.key: tracers}))
    assert found.status is Status.UNCONFIRMED, found.message
    assert (f"yet {tracers.text()}: the interpreter calls such a function on every Python frame outside torch's "
            "ops, its cost and not the code's (see tracing)") in found.message
    assert judge(facts(5_000.0, probed={TRACING_WATCH.key: TracingFacts()})).status is Status.CAUSE  # none on


def test_a_call_that_ran_no_torch_op_is_all_outside_them_unless_the_profile_was_taken_over():
    # A pure Python step (a sort of tuples): an intact profile with no op in it.
    sort = PyFrame("builtins.sorted", "built-in", 3_100.0, 1, False, "step (sortpy.py:5)")
    pure = Facts(phases=["call"], median_ms={"call": 5.0}, call_wall_us=5_000.0, python_frames=(sort,))
    assert pure.inside_ops_share() == 0.0 and pure.outside_share() == 1.0 and pure.called_phase() == "call"
    assert python_time.PythonTime().precheck(pure, None) is None
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True))
    found = python_time.PythonTime().judge_phase(rules.Context(doc, "call", queries.Comparisons(doc), facts=pure))
    assert found.status is Status.CAUSE, found.message
    assert "100% of its profiled call (5 ms) is outside torch's ops called from Python (0 ms in them)" \
        in found.message and "builtins.sorted 3.1 ms" in found.message
    taken = Facts(phases=["call"], call_wall_us=5_000.0, profile_intact=False)
    assert taken.outside_share() is None
    assert "took over the probe's profiler session" in python_time.PythonTime().precheck(taken, None)


def test_open_when_cprofile_puts_the_most_own_time_in_a_torch_ops_call():
    # competing_pools.py on a quiet machine: numpy's product beside torch.mm left 53% outside torch's ops,
    # and under cProfile torch.mm (aten::mm) took the most own time: not Python.
    mm = PyFrame("torch.mm", "built-in", 4_060.0, 1, False, "run (plant.py:32)")
    dot = PyFrame("dot", "built-in", 0.3, 1, False, "run (plant.py:32)")
    found = judge(facts(5_000.0, python_frames=(dot, mm)))
    assert found.status is Status.UNCONFIRMED, found.message
    assert "under cProfile the function with the most own time is torch.mm, a call of torch's aten::mm" \
        in found.message
    assert python_time.op_call_on_top(facts(5_000.0, python_frames=(FRAME,))) is None  # torch.tensor: no op
    assert judge(facts(5_000.0, python_frames=(FRAME, dot))).status is Status.CAUSE


def test_open_when_the_calling_thread_waited_through_the_time_outside_the_ops():
    # 45 ms of a 50 ms call outside the ops; the calling thread on a CPU 5 ms in the ops and 10 ms outside.
    waited = facts(5_000.0, call_cpu_us=15_000.0, python_frames=(FRAME,))
    assert abs(waited.outside_on_cpu_share() - 10 / 45) < 1e-9
    found = judge(waited)
    assert found.status is Status.UNCONFIRMED, found.message
    assert "its calling thread ran on a CPU for 22% of that time outside the ops: it mostly waited" in found.message
    busy = facts(5_000.0, call_cpu_us=49_000.0, python_frames=(FRAME,))  # a conversion: on a CPU throughout
    assert judge(busy).status is Status.CAUSE and busy.outside_on_cpu_share() > python_time.ON_CPU_SHARE
    assert facts(5_000.0).outside_on_cpu_share() is None  # not measured (an older results file): as before
    assert Facts.from_json(waited.to_json()).call_cpu_us == 15_000.0
    pool = ChildProcesses(forks=2, cpu_ms=45.1)
    forked = judge(facts(5_000.0, call_cpu_us=15_000.0, python_frames=(FRAME,), probed={CHILDREN.key: pool}))
    assert forked.status is Status.UNCONFIRMED and ("; in its profiled call it forked 2 processes, and the child "
                                                    "processes it waited for ran 45.1 ms of CPU") in forked.message
    none = judge(facts(5_000.0, call_cpu_us=15_000.0, probed={CHILDREN.key: ChildProcesses()}))
    assert "forked" not in none.message


def test_the_child_processes_of_the_profiled_call_are_counted_and_survive_the_results_file():
    import json
    import os

    from benchctl._probe import ProbedCall

    def forks_two():
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                sum(range(200_000))
                os._exit(0)
            os.waitpid(pid, 0)

    with CHILDREN.watch_call() as seen:
        forks_two()
    found = CHILDREN.read(CHILDREN.record(ProbedCall(call=forks_two, called={CHILDREN.key: seen})))
    assert found.forks == 2 and found.cpu_ms > 0 and found.started, found
    with CHILDREN.watch_call() as seen:
        sum(range(1_000))
    assert seen == {"forks": 0, "cpu_ms": 0.0}
    assert CHILDREN.record(ProbedCall()) == {} and CHILDREN.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={CHILDREN.key: found}).to_json())))
    assert again.of(CHILDREN) == found


def test_warnings_are_recorded_with_their_count_and_place_and_the_filters_restored():
    before = list(warnings.filters)
    with probe_python.recorded_warnings() as seen:
        rows = [np.zeros(3, dtype=np.float32) for _ in range(4)]
        torch.tensor(rows)
        for _ in range(3):
            warnings.warn("planted", RuntimeWarning)
    found = [WarningSeen.from_json(r) for r in probe_python.warning_rows(seen)]
    assert warnings.filters == before
    planted = [w for w in found if w.message == "planted"]
    assert planted and planted[0].category == "RuntimeWarning" and __file__ in planted[0].where
    assert not planted[0].from_torch


def test_top_frames_name_the_users_function_and_the_builtin_it_calls():
    def convert_rows():
        return torch.tensor([[float(i)] * 64 for i in range(2_000)])

    frames = [PyFrame.from_json(r) for r in probe_python.top_frames(convert_rows)]
    assert frames and len(frames) <= probe_python.MAX_FRAMES
    tensor = [f for f in frames if f.function == "torch.tensor"]
    assert tensor and tensor[0].called_from.startswith("convert_rows (") and __file__ in tensor[0].called_from
    assert not any("benchctl" in f.where for f in frames)  # its own frames are not the user's


def test_top_frames_keep_the_call_whose_time_is_beneath_it():
    import random
    import statistics

    values = random.Random(0).sample(range(300_000), 300_000)

    def step():  # direct calls with more own time than statistics.median, whose time is in the sort beneath it
        n = range(100_000)
        sum(n), max(n), min(n), list(n), tuple(n), set(n)
        return statistics.median(values)

    rows = probe_python.top_frames(step)
    median = [r for r in rows if r["function"] == "median"]
    assert len(rows) <= probe_python.MAX_FRAMES and median, [r["function"] for r in rows]
    assert median[0]["total_us"] > 2 * median[0]["own_us"] and median[0]["called_from"].startswith("step (")


def test_the_call_whose_time_is_beneath_it_is_named():
    load = PyFrame("load", "/torch/serialization.py:1210", 60.0, 1, False, "step (plant.py:7)", total_us=1_900.0)
    found = judge(facts(5_000.0, python_frames=(FRAME, load)))
    assert found.status is Status.CAUSE
    assert ("; the call of its code that took the most: load (/torch/serialization.py:1210) 1.9 ms with what it "
            "called (called from step (plant.py:7))") in found.message
    own = PyFrame("torch.tensor", "built-in", 41_000.0, 1, False, "run (plant.py:12)", total_us=41_500.0)
    assert "took the most" not in judge(facts(5_000.0, python_frames=(own,))).message, "its time is its own"
    assert "took the most" not in judge(facts(5_000.0, python_frames=(FRAME,))).message, "an old file: not kept"


def test_the_evidence_facts_survive_the_results_file():
    import json

    from benchctl._results.facts import CompileLog, LayoutCopy

    deep = PyFrame("load", "/torch/serialization.py:1210", 60.0, 1, False, "step (plant.py:7)", total_us=1_900.0)
    f = facts(5_000.0, call_compile_us=10.0, python_frames=(FRAME, deep), warnings=(SLOW_LIST,),
              layout_copies=(LayoutCopy((2, 4, 8, 8), "contiguous", "channels_last", "aten::conv2d", 2, 30.0),),
              compile=CompileLog((1, 1), (0.1, 0.2), (0.2, 0.3), ("0/1: start == 1",)))
    assert Facts.from_json(json.loads(json.dumps(f.to_json()))) == f


def test_the_probe_worker_records_the_calling_threads_cpu_time_beside_the_calls_wall_time(tmp_path):
    from benchctl._run import runner

    path = tmp_path / "waits.py"
    path.write_text("import time\nfrom concurrent.futures import ThreadPoolExecutor\nimport torch\n"
                    "_pool = ThreadPoolExecutor(1)\n\n"
                    "def step():\n    _pool.submit(time.sleep, 0.05).result()\n    return torch.ones(4).sum()\n")
    doc = runner.run_matrix(f"{path}:step", {"iterations": 3}, {}, repeat=1, control=False, progress=False, probe=True)
    found = Facts.from_probe(doc)
    assert found.call_wall_us >= 45_000 and found.call_cpu_us is not None
    assert found.call_cpu_us < 0.5 * found.call_wall_us, found  # it waited for its pool's thread
    assert found.outside_on_cpu_share() < python_time.ON_CPU_SHARE
