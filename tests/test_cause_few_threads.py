"""The cause "fewer torch threads than the usable CPUs": the clamp that raises torch's count to every usable CPU
(``clamp=all``) against the code's own calls, its pre-check on the probe's facts, and its judgement on synthetic
results."""

import os

import pytest
import torch

from benchctl import settings
from benchctl._causes.cpu_fit import control
from benchctl._causes.cpu_fit.probe import PROBE as FIT, CpuFit
from benchctl._causes.few_threads import rule as few_threads
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc
from test_causes import facts

ALL = {"clamp": "all"}
ONE_OF_TWO = CpuFit(threads=1, team=1, team_cpus=[0, 1], quota=None, environment={"OMP_NUM_THREADS": "1"})
HELD = {"usable": 2, "ran": 2, "asked": [1], "quota": None}
two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to raise a count to")


def run_with(planted, held=HELD):
    def readback(cell):
        return {"clamp": {"requested": "all", "observed": held, "during": {"held": True, "seen": "all",
                                                                           "samples": 8}}} \
            if cell["with"] == ALL else {}

    doc = make_doc({"with": [{}, ALL]}, factor=lambda c: planted(c["with"]), phase="call", control=True,
                   readback=readback)
    return analyse(doc)


def judge(doc, fit=ONE_OF_TWO):
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=facts(probed={FIT.key: fit}))
    return few_threads.FewThreads().judge(ctx)


def test_probed_only_where_torch_runs_fewer_threads_than_its_cpus():
    cause = few_threads.FewThreads()
    assert cause.probes(None) == [ALL]
    assert cause.precheck(facts(probed={FIT.key: ONE_OF_TWO}), None) is None
    fits = CpuFit(threads=2, team=2, team_cpus=[0, 1], quota=None)
    assert cause.precheck(facts(probed={FIT.key: fits}), None) == \
        "torch runs 2 thread(s) on the 2 CPU(s) it may use: none left idle"
    one_cpu = CpuFit(threads=1, team=1, team_cpus=[0], quota=None, environment={"OMP_NUM_THREADS": "1"})
    assert "none left idle" in cause.precheck(facts(probed={FIT.key: one_cpu}), None)
    chosen = CpuFit(threads=1, team=1, team_cpus=[0, 1], quota=None, asked=[1])  # its setup's own call
    assert cause.precheck(facts(probed={FIT.key: chosen}), None) == (
        "its own code sets torch's count (torch.set_num_threads(1)) below the 2 CPU(s) it may use: taken as its "
        "choice (--set clamp=off,all in benchctl run measures every CPU)")
    at_import = CpuFit(threads=1, team=1, team_cpus=[0, 1], quota=None, environment={"OMP_NUM_THREADS": "2"})
    assert cause.precheck(facts(probed={FIT.key: at_import}), None) == (
        "torch runs 1 thread(s) on the 2 CPU(s) it may use, a count no variable of its environment sets "
        "(OMP_NUM_THREADS, MKL_NUM_THREADS): its code's own, set at its import, taken as its choice (--set "
        "clamp=off,all in benchctl run measures every CPU)")
    mkl = CpuFit(threads=1, team=1, team_cpus=[0, 1], quota=None, environment={"MKL_NUM_THREADS": " 1"})
    assert mkl.environment_count == ("MKL_NUM_THREADS", 1) and cause.precheck(facts(probed={FIT.key: mkl}), None) \
        is None
    assert "not known" in cause.precheck(Facts(phases=["call"]), None)


def test_named_with_what_the_code_asked_what_ran_and_the_fix_when_every_cpu_is_faster():
    [found] = judge(run_with(lambda p: 0.5 if p == ALL else 1.0))
    assert found.status is Status.CAUSE, found.message
    assert ("with torch's threads held at every CPU it may use (its code asked for 1 thread(s) "
            "(torch.set_num_threads); torch ran 2 on the 2 CPU(s) it may use) it is 2.00× faster") in found.message
    assert "unchanged it ran 1 thread(s) on the 2 CPU(s) it may use, as OMP_NUM_THREADS=1 in its environment asks" \
        in found.message
    assert few_threads.MECHANISM in found.message and few_threads.FIX in found.message


def test_unconfirmed_where_the_count_did_not_hold_and_not_the_cause_where_it_does_not_help():
    [found] = judge(run_with(lambda p: 0.5 if p == ALL else 1.0, held={**HELD, "ran": 1}))
    assert found.status is Status.UNCONFIRMED and "did not hold at every usable CPU" in found.message
    [slower] = judge(run_with(lambda p: 1.5 if p == ALL else 1.0))
    assert slower.status is Status.NOT_CAUSE and "its count is not what slows it" in slower.message
    [same] = judge(run_with(lambda p: 1.0))
    assert same.status is Status.NOT_CAUSE


@two_cpus
def test_the_filling_clamp_raises_the_codes_count_to_every_usable_cpu_and_restores_everything():
    before, original = torch.get_num_threads(), torch.set_num_threads
    usable = len(os.sched_getaffinity(0))
    torch.set_num_threads(1)
    try:
        with control.clamped(fill=True) as clamp:
            assert torch.get_num_threads() == usable and clamp.holds()
            torch.set_num_threads(1)  # the code's own call, held at every CPU
            assert torch.get_num_threads() == usable and clamp.asked == [1] and clamp.holds()
            clamp._original(1)  # code that reached torch's own function
            assert not clamp.holds()
            raise KeyError("inside")
    except KeyError:
        pass
    finally:
        torch.set_num_threads(before)
    assert torch.set_num_threads is original


@two_cpus
def test_the_clamp_setting_switches_between_its_kinds_and_back_to_the_codes_count():
    clamp = settings.SETTINGS["clamp"]
    assert clamp.canonical("ALL") == "all" and clamp.changes_cpus_used
    before, original = torch.get_num_threads(), torch.set_num_threads
    usable = len(os.sched_getaffinity(0))
    try:
        torch.set_num_threads(1)
        state = clamp.switch("all")
        assert state["ran"] == usable and clamp.during("all") == "all"
        torch.set_num_threads(1)
        assert torch.get_num_threads() == usable
        assert clamp.switch("usable")["ran"] == 1  # the other kind: the code's 1 back, then cut (not raised)
        assert clamp.switch("off") == {"ran": 1} and torch.set_num_threads is original
    finally:
        clamp.switch("off")
        torch.set_num_threads(before)


@two_cpus
def test_a_count_from_the_environment_is_probed_and_one_set_at_import_is_not(tmp_path):
    from benchctl._run import runner

    step = tmp_path / "matmul.py"
    step.write_text("import torch\na = torch.randn(256, 256)\n\ndef step():\n    return a @ a\n")
    at_import = tmp_path / "one_thread_at_import.py"
    at_import.write_text("import torch\ntorch.set_num_threads(1)\na = torch.randn(256, 256)\n\n"
                         "def step():\n    return a @ a\n")
    before = torch.get_num_threads()
    try:
        from_env = runner.run_matrix(f"{step}:step", {"iterations": 3}, {"env": ["OMP_NUM_THREADS=1"]}, repeat=1,
                                     control=False, progress=False, probe=True)
        from_code = runner.run_matrix(f"{at_import}:step", {"iterations": 3}, {}, repeat=1, control=False,
                                      progress=False, probe=True)
    finally:
        torch.set_num_threads(before)  # in case a target was imported here too
    env_fit = Facts.from_probe(from_env).of(FIT)
    assert env_fit.threads == 1 and env_fit.environment_count == ("OMP_NUM_THREADS", 1), env_fit
    assert few_threads.FewThreads().precheck(Facts.from_probe(from_env), None) is None
    code_fit = Facts.from_probe(from_code).of(FIT)
    assert code_fit.threads == 1 and not code_fit.asked and code_fit.environment_count is None
    assert "its code's own, set at its import" in few_threads.FewThreads().precheck(
        Facts.from_probe(from_code), None)
