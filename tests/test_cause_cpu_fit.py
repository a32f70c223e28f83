"""The cause 'threads beyond the usable CPUs': the cgroup readers, the clamp and its setting, the probe's
evidence, the pre-check and the judgement on synthetic explaining runs."""

import os
import textwrap

import pytest
import torch

from benchctl import settings
from benchctl._causes.cpu_fit import control, rule as cpu_fit_rule
from benchctl._causes.cpu_fit.probe import PROBE as FIT, CpuFit, CpuFitWatch
from benchctl._thread_calls import thread_calls
from benchctl._causes.threads.rule import Threads
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import make_doc
from test_causes import facts

PROBES = [{}, {"threads": 1}, {"busy": "pool"}, {"clamp": "usable"}]
TWO_ON_ONE = CpuFit(threads=2, team=2, team_cpus=[0], quota=None, groups=["cgroup v2 /: no CPU quota"])
CLAMP_READBACK = {"usable": 1, "ran": 1, "asked": [2], "quota": None}
two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to cut the mask below")


def run_with(planted, counters=lambda c: {}, readback=None):
    doc = make_doc({"with": PROBES}, factor=lambda c: planted(c["with"]), counters=counters, phase="call",
                   control=True, readback=readback)
    return analyse(doc)


def clamp_readback(cell, held=True):
    if cell["with"] != {"clamp": "usable"}:
        return {}
    during = {"held": True, "seen": "usable", "samples": 16} if held else \
        {"held": False, "seen": "2 threads on 1 CPUs", "samples": 16}
    return {"clamp": {"requested": "usable", "observed": CLAMP_READBACK, "during": during}}


def judge(doc, fit=TWO_ON_ONE):
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=facts(probed={FIT.key: fit}))
    return cpu_fit_rule.CpuFit().judge(ctx)


def judge_threads(doc, fit=TWO_ON_ONE):
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=facts(probed={FIT.key: fit}))
    return Threads().judge(ctx)


def switches(c):
    return {"context_switches": 2.0 if c["with"] == {"clamp": "usable"} else 300.0}


# ------------------------------------------------------------------ the facts and the pre-check


def test_a_team_fits_its_cpus_or_not():
    assert TWO_ON_ONE.usable == 1 and TWO_ON_ONE.over
    fits = CpuFit(threads=2, team=2, team_cpus=[0, 1], quota=None)
    assert fits.usable == 2 and not fits.over
    assert CpuFit(threads=8, team=8, team_cpus=list(range(8)), quota=2.5).usable == 3  # the quota, rounded up
    assert CpuFit(threads=2, team=2, team_cpus=[0, 1], quota=None, throttled=4).over  # throttled: over
    assert "a team of 2 threads on CPUs [0] (no cgroup quota)" in TWO_ON_ONE.text


def test_precheck_rules_out_a_team_that_fits_and_keeps_one_that_does_not():
    fits = CpuFit(threads=2, team=2, team_cpus=[0, 1], quota=None)
    reason = cpu_fit_rule.CpuFit().precheck(facts(probed={FIT.key: fits}), None)
    assert reason.startswith("its team fits the CPUs it may use: a team of 2 threads on CPUs [0, 1]")
    assert cpu_fit_rule.CpuFit().precheck(facts(probed={FIT.key: TWO_ON_ONE}), None) is None
    quota = CpuFit(threads=4, team=4, team_cpus=[0, 1, 2, 3], quota=1.0)
    assert cpu_fit_rule.CpuFit().precheck(facts(probed={FIT.key: quota}), None) is None
    assert cpu_fit_rule.CpuFit().precheck(facts(probed={}), None) is None  # not measured: nothing ruled out


def test_the_facts_survive_the_results_file():
    saved = facts(probed={FIT.key: TWO_ON_ONE}).to_json()
    assert Facts.from_json(saved).of(FIT) == TWO_ON_ONE


def test_the_thread_count_cause_leaves_a_count_the_code_sets_past_one_cpu_to_this_one():
    sets_two = CpuFit(threads=2, team=2, team_cpus=[0], quota=None, asked=[2])
    reason = Threads().precheck(facts(probed={FIT.key: sets_two}), None)
    assert reason == ("its own code sets torch's thread count (torch.set_num_threads(2)) past the 1 CPU it may "
                      "use: threads=1 would be undone by it, and one thread held against it is the probe of "
                      f"{cpu_fit_rule.CpuFit.title}")
    assert cpu_fit_rule.CpuFit().precheck(facts(probed={FIT.key: sets_two}), None) is None
    assert Threads().precheck(facts(probed={FIT.key: TWO_ON_ONE}), None) is None  # the code sets no count
    fits = CpuFit(threads=2, team=2, team_cpus=[0, 1], quota=None, asked=[2])
    assert Threads().precheck(facts(probed={FIT.key: fits}), None) is None
    four_of_eight = CpuFit(threads=8, team=8, team_cpus=list(range(8)), quota=4.0, asked=[8])
    assert Threads().precheck(facts(probed={FIT.key: four_of_eight}), None) is None  # clamp=usable is 4, not 1


# ------------------------------------------------------------------ the judgement


def test_named_with_what_the_code_asked_and_what_ran_when_the_clamp_is_faster():
    doc = run_with(lambda p: 0.02 if p == {"clamp": "usable"} else 1.0, counters=switches, readback=clamp_readback)
    [found] = judge(doc)
    assert found.status == Status.CAUSE, found.message
    assert "with torch's threads held at the CPUs it may use (its code asked for 2 thread(s) " \
           "(torch.set_num_threads); torch ran 1 on the 1 CPU(s) it may use) it is 50.00× faster" in found.message
    assert "context switches/iter go from 300 to 2" in found.message
    assert "a team of 2 threads on CPUs [0]" in found.message and cpu_fit_rule.FIX in found.message


def test_the_thread_count_is_not_named_for_what_holding_the_usable_cpus_removes():
    doc = run_with(lambda p: 0.02 if p in ({"clamp": "usable"}, {"threads": 1}) else 1.0, counters=switches,
                   readback=clamp_readback)
    [threads] = judge_threads(doc)
    assert threads.status == Status.NOT_CAUSE and not threads.explains, threads.message
    assert "1 thread against holding torch's threads at the usable CPUs changes nothing beyond" in threads.message
    assert ("holding torch's threads at the usable CPUs makes it 50.00× faster [95% CI" in threads.message
            and "torch's own thread count is not the cause, its CPU mask or quota is" in threads.message)
    [fit] = judge(doc)
    assert fit.status == Status.CAUSE


def test_faster_without_fewer_context_switches_is_unconfirmed():
    doc = run_with(lambda p: 0.5 if p == {"clamp": "usable"} else 1.0, readback=clamp_readback)
    [found] = judge(doc)
    assert found.status == Status.UNCONFIRMED and "the mechanism is unconfirmed" in found.message


def test_the_wait_for_a_cpu_confirms_the_clamp_where_switches_do_not_fall():
    def waits(c):
        return {"context_switches": 4.0, "runqueue_wait_ns": 0.0 if c["with"] == {"clamp": "usable"} else 3e6}
    doc = run_with(lambda p: 0.5 if p == {"clamp": "usable"} else 1.0, counters=waits, readback=clamp_readback)
    [found] = judge(doc)
    assert found.status == Status.CAUSE and "ms waiting for a CPU/iter go from 3 to 0" in found.message


def test_no_effect_is_not_the_cause():
    [found] = judge(run_with(lambda p: 1.0, counters=switches, readback=clamp_readback))
    assert found.status == Status.NOT_CAUSE and "threads held at the usable CPUs changes nothing" in found.message


def test_a_clamp_the_code_got_past_is_reported_not_judged():
    doc = run_with(lambda p: 0.02 if p == {"clamp": "usable"} else 1.0, counters=switches,
                   readback=lambda c: clamp_readback(c, held=False))
    [found] = judge(doc)
    assert found.status == Status.UNRESOLVED
    assert "the workload's own code set clamp=2 threads on 1 CPUs during the timed iterations" in found.message


# ------------------------------------------------------------------ the cgroup readers


def _tree(tmp_path, v2_max="max 100000", v1_quota="-1", throttled=0):
    v2, v1 = tmp_path / "v2" / "job", tmp_path / "v1" / "job"
    v2.mkdir(parents=True), v1.mkdir(parents=True)
    (v2 / "cpu.max").write_text(v2_max + "\n")
    (v2 / "cpu.stat").write_text(f"usage_usec 5\nnr_periods 9\nnr_throttled {throttled}\n")
    (v1 / "cpu.cfs_quota_us").write_text(v1_quota + "\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "cpu.stat").write_text("nr_periods 0\nnr_throttled 1\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"31 23 0:28 / {tmp_path / 'v2'} rw - cgroup2 cgroup2 rw\n"
                         f"32 31 0:29 / {tmp_path / 'v1'} rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
                         f"33 31 0:30 / {tmp_path / 'mem'} rw,relatime - cgroup cgroup rw,memory\n")
    groups = tmp_path / "cgroup"
    groups.write_text("4:memory:/job\n2:cpu,cpuacct:/job\n0::/job\n")
    return mountinfo, groups


@pytest.fixture
def tree(tmp_path, monkeypatch):
    def make(**kw):
        mountinfo, groups = _tree(tmp_path, **kw)
        monkeypatch.setattr(control, "_MOUNTINFO", str(mountinfo))
        monkeypatch.setattr(control, "_OWN_GROUPS", str(groups))
    return make


def test_both_hierarchies_and_the_ancestors_are_read(tree):
    tree(v2_max="250000 100000", v1_quota="50000", throttled=7)
    found = control.quotas()
    assert [(q.version, q.path, q.cpus) for q in found] == [(2, "/job", 2.5), (2, "/", None), (1, "/job", 0.5),
                                                            (1, "/", None)]
    assert control.quota_cpus(found) == 0.5 and control.throttled_periods(found) == 8
    assert control.usable_cpus(0.5) == 1 and control.usable_cpus(None) == len(os.sched_getaffinity(0))


def test_no_quota_reads_as_none(tree):
    tree()
    assert control.quota_cpus() is None and "no CPU quota" in control.quotas()[0].text


# ------------------------------------------------------------------ the clamp and its setting


@two_cpus
def test_the_clamp_holds_torchs_count_at_the_usable_cpus_and_restores_everything():
    before, original = torch.get_num_threads(), torch.set_num_threads
    mask = os.sched_getaffinity(0)
    try:
        with control.clamped() as clamp:
            os.sched_setaffinity(0, {min(mask)})
            torch.set_num_threads(len(mask))
            assert torch.get_num_threads() == 1 and clamp.asked == [len(mask)] and clamp.holds()
            clamp._original(2)  # code that reached torch's own function
            assert not clamp.holds() and clamp.state()["ran"] == 2
            raise KeyError("inside")
    except KeyError:
        pass
    finally:
        os.sched_setaffinity(0, mask)
    assert torch.set_num_threads is original and torch.get_num_threads() == before


def test_the_clamp_setting():
    clamp = settings.SETTINGS["clamp"]
    assert clamp.canonical("USABLE") == "usable" and clamp.canonical("off") == "off"
    with pytest.raises(settings.SettingError):
        clamp.canonical("2")
    assert clamp.during("off") is None and clamp.probe == "usable"
    assert clamp.facts_phrase(clamp.facts(CLAMP_READBACK)) == \
        "its code asked for 2 thread(s) (torch.set_num_threads); torch ran 1 on the 1 CPU(s) it may use"


@two_cpus
def test_a_worker_holds_the_count_against_the_setup_that_cuts_the_mask_and_resizes_past_it(tmp_path):
    path = tmp_path / "cuts_mask.py"
    path.write_text(textwrap.dedent("""
        import os
        import torch

        def setup():
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            torch.set_num_threads(2)

        def run(state):
            sum(range(1000))
    """))
    doc = runner.run_matrix(f"{path}", {"iterations": 3}, {"clamp": ["usable"]}, progress=False, control=False)
    [run] = doc["runs"]
    assert run["status"] == "ok", run.get("error")
    back = run["readback"]["clamp"]
    assert (back["during"]["held"], back["during"]["seen"]) == (True, "usable") and 1 <= back["during"]["samples"] <= 3
    assert back["observed"]["asked"] == [2] and back["observed"]["ran"] == 1 and back["observed"]["usable"] == 1


# ------------------------------------------------------------------ the probe's evidence


def test_the_codes_own_thread_counts_are_recorded_and_torchs_function_put_back():
    before, original = torch.get_num_threads(), torch.set_num_threads
    try:
        with thread_calls() as calls:
            torch.set_num_threads(1)
            assert torch.get_num_threads() == 1  # passed on unchanged
            raise KeyError("inside")
    except KeyError:
        pass
    finally:
        torch.set_num_threads(before)
    assert calls.asked == [1] and calls.calls == 1 and torch.set_num_threads is original
    with thread_calls(active=False) as idle:
        torch.set_num_threads(before)
    assert idle.asked == []


def test_a_count_the_code_gives_in_every_call_is_said_once_with_its_calls():
    before = torch.get_num_threads()
    try:
        with thread_calls() as calls:
            for n in (1, 1, 1, 2, 2, 1):
                torch.set_num_threads(n)
    finally:
        torch.set_num_threads(before)
    assert calls.asked == [1, 2, 1] and calls.calls == 6
    fit = CpuFit(threads=1, team=1, team_cpus=[0, 1], quota=None, asked=calls.asked, asked_calls=calls.calls)
    assert fit.asked_text == "torch.set_num_threads(1), torch.set_num_threads(2), torch.set_num_threads(1), 6 calls"
    assert CpuFit(threads=2, team=2, team_cpus=[0], quota=None, asked=[2]).asked_text == "torch.set_num_threads(2)"


@two_cpus
def test_the_probe_worker_sees_the_setup_cut_the_mask_and_size_torch_past_it(tmp_path):
    path = tmp_path / "cuts_mask.py"
    path.write_text(textwrap.dedent("""
        import os
        import torch

        def setup():
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            torch.set_num_threads(2)
            return torch.ones(128, 128)

        def run(a):
            return torch.mm(a, a)
    """))
    doc = runner.run_matrix(f"{path}", {"iterations": 3}, {}, repeat=1, control=False, progress=False, probe=True)
    fit = Facts.from_probe(doc).of(FIT)
    assert fit.asked == [2] and fit.team_cpus == [min(os.sched_getaffinity(0))] and fit.over, fit
    assert cpu_fit_rule.CpuFit().precheck(Facts.from_probe(doc), None) is None


def test_the_probe_reads_the_team_and_its_cpus():
    with CpuFitWatch() as watch:
        torch.mm(torch.ones(64, 64), torch.ones(64, 64))
    note = watch.note()["cpu_fit"]
    assert note["threads"] == torch.get_num_threads() and note["team"] >= 1
    assert os.sched_getaffinity(0) <= set(note["team_cpus"])  # the calling thread is the team's thread 0
    assert note["throttled"] >= 0 and all("cgroup v" in g for g in note["groups"])
    assert CpuFit.from_note(note).usable >= 1
