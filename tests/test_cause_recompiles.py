"""The cause "torch.compile recompiling": dynamo's counters read after each iteration of a tiny compiled
function, the pre-check and the evidence-only judgement on synthetic facts."""

import sys

import torch

from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import CompileLog, Facts
from benchctl._results.findings import Status
from benchctl._causes.recompiles import rule as recompiles
from benchctl._workloads.probe_compile import CompileWatch
from synthetic_results import make_doc

GUARD = ("0/7: start == 7                                                 # for i in range(start + 1, end):  # "
         "planted/recompile_each_step.py:24 in accumulate (_dynamo/variables/tensor.py:2849 in evaluate_expr)")


def facts(compiles, compile_s, iteration_s=0.1, guards=(GUARD,)):
    log = CompileLog(tuple(compiles), tuple(compile_s), (iteration_s,) * len(compiles), guards)
    return Facts(phases=["run"], median_ms={"run": iteration_s * 1e3}, compile=log)


def judge(f):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="run", control=True))
    return recompiles.Recompiles().judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=f))


def test_precheck_rules_out_no_dynamo_no_compile_and_one_first_compile():
    assert "dynamo was not loaded" in recompiles.Recompiles().precheck(Facts(phases=["run"]), None)
    nothing = recompiles.Recompiles().precheck(facts([0] * 3, [0] * 3), None)
    assert "compiled nothing in its 3 timed iterations" in nothing
    assert "first timed iteration only" in recompiles.Recompiles().precheck(facts([1, 0, 0], [0.09, 0, 0]), None)
    assert recompiles.Recompiles().precheck(facts([1, 1, 1], [0.09] * 3), None) is None


def test_judged_a_cause_with_the_share_and_the_guard_that_failed():
    found = judge(facts([1] * 5, [0.09] * 5))
    assert found.status is Status.CAUSE and found.comparison is None
    assert ("dynamo compiled again in 4 of its 4 timed iterations after the first; compiling took 90% of the timed "
            "time (90 ms a compile, median); the guard that failed: 0/7: start == 7 # for i in range(start + 1, "
            "end): a guard on a value") in found.message
    assert "evidence.py" not in found.message and "_dynamo/variables" not in found.message
    assert recompiles.MECHANISM in found.message and "evidence only" in found.message


def test_a_small_share_is_open_or_not_the_cause_and_a_missing_timer_is_open():
    assert judge(facts([1, 1, 0, 0], [0.01, 0.02, 0, 0])).status is Status.UNCONFIRMED
    assert judge(facts([1, 1, 0, 0], [0.001, 0.001, 0, 0])).status is Status.NOT_CAUSE
    assert judge(facts([1, 1, 1], [0.0] * 3)).status is Status.UNCONFIRMED  # frames compiled, no time recorded
    assert CompileLog.from_json({}) is None and CompileLog.from_json(None) is None


def test_the_watch_counts_the_compiles_of_each_iteration_and_the_failed_guard():
    @torch.compile(backend="eager")
    def shifted(x, start):
        for i in range(start, start + 2):
            x = x + i
        return x

    x = torch.zeros(4)
    shifted(x, 0)  # the first compile, before the timed iterations
    watch = CompileWatch()
    watch.start()
    for start in (1, 2, 2):
        shifted(x, start)
        watch.after_iteration(0.01)
    log = CompileLog.from_json(watch.note())
    assert watch.compiled_any()
    assert log.compiles == (1, 1, 0), log
    assert log.compile_s[0] > 0 and log.compile_s[2] == 0
    assert log.guards and "start" in log.guards[0]


def test_the_watch_reads_nothing_when_dynamo_is_not_loaded(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils", raising=False)
    watch = CompileWatch()
    watch.start()
    watch.after_iteration(0.01)
    assert watch.note() == {} and not watch.compiled_any()
