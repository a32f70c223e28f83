"""The OpenMP wait-policy cause: its evidence (torch's runtime and team, the wait variables, the CPUs
the workload's other threads and children use), its setting (``omp_wait``) and its judgement on
synthetic explaining runs."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from benchctl import settings
from benchctl._probe import ProbedCall
from benchctl._causes.omp_wait import probe as omp_probe, rule as omp_rule, setting as omp_setting
from benchctl._causes.omp_wait.probe import PROBE as OMP, TeamWait
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc

BUSY = TeamWait("libgomp", 2, {}, 0.8, 80.0)
PROBE = {"omp_wait": "passive"}


def _run(factor, switches_passive, switches_default=30.0, runtimes=("libgomp",), variables=None):
    def counters(cell):
        return {"context_switches": switches_passive if cell["with"] == PROBE else switches_default}

    def readback(cell):
        if cell["with"] != PROBE:
            return {}
        passive = omp_setting.PASSIVE_WAIT if variables is None else variables
        seen = {"runtimes": list(runtimes), "variables": dict(passive)}
        return {"omp_wait": {"requested": "passive", "applied": None, "observed": seen}}
    doc = make_doc({"with": [{}, PROBE]}, factor=lambda c: factor if c["with"] == PROBE else 1.0,
                   counters=counters, readback=readback, phase="run", control=True)
    return analyse(doc)


def _judge(doc, wait=BUSY):
    ctx = rules.Context(doc, "run", queries.Comparisons(doc), facts=Facts(phases=["run"], probed={OMP.key: wait}))
    return omp_rule.OmpWait().judge_phase(ctx)


def test_precheck_rules_it_out_where_no_team_can_spin_or_nothing_else_needs_the_cpus():
    cause = omp_rule.OmpWait()
    assert "no OpenMP runtime" in cause.precheck(Facts(probed={OMP.key: TeamWait(None, 2, {}, 0.8)}), None)
    assert "team is one thread" in cause.precheck(Facts(probed={OMP.key: TeamWait("libgomp", 1, {}, 0.8)}), None)
    spun_down = TeamWait("libgomp", 2, {"GOMP_SPINCOUNT": "0"}, 0.8)
    assert "already sleeps at once (GOMP_SPINCOUNT=0)" in cause.precheck(Facts(probed={OMP.key: spun_down}), None)
    intel = TeamWait("libiomp5", 2, {"KMP_BLOCKTIME": "0"}, 0.8)
    assert "(KMP_BLOCKTIME=0)" in cause.precheck(Facts(probed={OMP.key: intel}), None)
    # libgomp reads no KMP_BLOCKTIME: it still spins.
    assert cause.precheck(Facts(probed={OMP.key: TeamWait("libgomp", 2, {"KMP_BLOCKTIME": "0"}, 0.8)}), None) is None
    quiet = TeamWait("libgomp", 2, {}, 0.001, 10.0)
    assert "kept 0.001 CPUs busy, 10.0 CPU ms, over the probe's timed iterations" in \
        cause.precheck(Facts(probed={OMP.key: quiet}), None)
    short = TeamWait("libgomp", 2, {}, 0.19, 2.0)  # a few CPU ms in all: nothing that a spinning team slows
    assert "kept 0.190 CPUs busy, 2.0 CPU ms" in cause.precheck(Facts(probed={OMP.key: short}), None)
    assert "was not read" in cause.precheck(Facts(probed={}), None)
    assert cause.precheck(Facts(probed={OMP.key: BUSY}), None) is None
    assert cause.precheck(Facts(probed={OMP.key: TeamWait("libgomp", 2, {}, None)}), None) is None  # unknown: kept


def test_named_when_passive_is_faster_and_the_runtime_started_with_it():
    found = _judge(_run(0.1, switches_passive=31.0))
    assert found.status == Status.CAUSE and found.explains, found.message
    assert "with omp_wait=passive it is 10.00× faster [95% CI" in found.message
    assert "libgomp started with OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0, KMP_BLOCKTIME=0" in found.message
    assert "context switches/iter go from 30 to 31" in found.message
    assert "kept 0.800 CPUs busy beside the team" in found.message
    assert settings.SETTINGS["omp_wait"].mechanism in found.message


def test_not_named_when_passive_changes_nothing_or_no_runtime_started_with_it():
    same = _judge(_run(1.0, switches_passive=90.0))
    assert same.status == Status.NOT_CAUSE and "changes nothing beyond" in same.message
    for unread in (_run(0.5, 30.0, runtimes=()), _run(0.5, 30.0, variables={"KMP_BLOCKTIME": "0"}),
                   _run(0.5, 30.0, runtimes=("libiomp5",), variables={"GOMP_SPINCOUNT": "0"})):
        found = _judge(unread)
        assert found.status == Status.UNCONFIRMED and "the mechanism is unconfirmed" in found.message, found.message
    intel = _judge(_run(0.5, 30.0, runtimes=("libiomp5",), variables={"KMP_BLOCKTIME": "0"}))
    assert intel.status == Status.CAUSE  # Intel's runtime reads its own variable


def test_the_setting_sets_every_runtimes_passive_policy_and_owns_it():
    wait = settings.SETTINGS["omp_wait"]
    assert wait.canonical("PASSIVE") == "passive" and wait.canonical("default") == "default"
    with pytest.raises(settings.SettingError, match="choose one of default, passive"):
        wait.canonical("active")
    env = settings.cell_environment({"omp_wait": "passive"}, {"PATH": "/bin"})
    assert env == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}
    assert settings.cell_environment({"omp_wait": "default"}, {"GOMP_SPINCOUNT": "7"}) == {"GOMP_SPINCOUNT": "7"}
    with pytest.raises(settings.SettingError, match="both set GOMP_SPINCOUNT"):
        settings.cell_environment({"omp_wait": "passive", "env": {"GOMP_SPINCOUNT": "1000"}}, {})


_READBACK = """
import json, torch
from benchctl import settings
torch.ones(4).sum()
print(json.dumps(settings.SETTINGS["omp_wait"].readback("passive")))
"""


def test_the_readback_names_the_runtime_and_what_it_started_with():
    env = {**os.environ, **settings.SETTINGS["omp_wait"].environment("passive", {}, {})}
    out = subprocess.run([sys.executable, "-c", _READBACK], env=env, capture_output=True, text=True, timeout=120)
    seen = json.loads(out.stdout)
    assert "libgomp" in seen["runtimes"]  # torch's wheels bundle it
    assert seen["variables"] == omp_setting.PASSIVE_WAIT
    assert "libgomp started with OMP_WAIT_POLICY=PASSIVE" in settings.SETTINGS["omp_wait"].facts_phrase(seen)


def test_the_collector_counts_the_cpu_of_threads_outside_torchs_team():
    import torch

    torch.ones(1 << 16).sum()  # torch's team exists
    stop = threading.Event()

    def burn():
        while not stop.is_set():
            sum(range(10_000))

    with OMP.watch() as quiet:
        time.sleep(0.2)
    evidence = OMP.record(ProbedCall(watched={OMP.key: quiet}))
    assert evidence["omp_runtime"] == "libgomp" and evidence["omp_team"] == torch.get_num_threads()
    neighbour = threading.Thread(target=burn)
    neighbour.start()
    try:
        with OMP.watch() as busy:
            time.sleep(0.3)  # the main thread sleeps: the neighbour has the GIL
    finally:
        stop.set()
        neighbour.join()
    burnt = OMP.record(ProbedCall(watched={OMP.key: busy}))["cpus_beside_team"]
    assert evidence["cpus_beside_team"] < omp_rule.QUIET_BESIDE_CPUS < burnt, (evidence, burnt)
    assert OMP.record(ProbedCall(watched={OMP.key: busy}))["cpu_ms_beside_team"] > omp_rule.QUIET_BESIDE_MS
    wait = TeamWait.from_probe(evidence)
    assert wait.runtime == "libgomp" and TeamWait.from_probe({}) is None
    assert Facts.from_json(json.loads(json.dumps(Facts(probed={OMP.key: BUSY}).to_json()))).of(OMP) == BUSY


def test_the_wait_variables_are_listed_once_and_the_passive_values_and_each_runtimes_drawn_from_them():
    assert tuple(omp_setting.WAIT_VARIABLES) == ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "KMP_LIBRARY")
    assert omp_setting.PASSIVE_WAIT == {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}
    assert omp_setting.RUNTIME_WAIT_VARIABLES == {"libgomp": ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"),
                                                  "libiomp5": ("OMP_WAIT_POLICY", "KMP_BLOCKTIME"),
                                                  "libomp": ("OMP_WAIT_POLICY", "KMP_BLOCKTIME")}
    assert set(omp_probe.omp_wait_evidence(None)["omp_wait_env"]) <= set(omp_setting.WAIT_VARIABLES)


def test_the_whole_process_and_its_children_used_cpus_and_a_waiting_call_rules_out_what_changes_cpu_work():
    from benchctl import _thread_cpu
    from benchctl._causes.denormals.rule import Denormals
    from benchctl._causes.threads.rule import Threads

    # A child that burns CPU and ends inside the watch: its time is counted once it was waited for.
    with _thread_cpu.ThreadCpuWatch(_thread_cpu.task_ns) as child:
        subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                        "while time.process_time() < end: pass"], check=True)
    assert child.used[_thread_cpu.REAPED] >= 0.2e9, child.used
    with _thread_cpu.ThreadCpuWatch(_thread_cpu.task_ns) as asleep:
        time.sleep(0.3)
    with _thread_cpu.ThreadCpuWatch(_thread_cpu.task_ns) as busy:
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
    slept = TeamWait.from_probe(omp_probe.omp_wait_evidence(asleep))
    worked = TeamWait.from_probe(omp_probe.omp_wait_evidence(busy))
    assert slept.used_cpus < omp_probe.WAITING_CPUS < worked.used_cpus, (slept, worked)
    assert worked.waited_text() is None and slept.waited_text().startswith(f"its timed calls kept "
                                                                           f"{slept.used_cpus:.2f} CPUs busy")

    waiting = Facts(probed={OMP.key: TeamWait("libgomp", 2, {}, 0.0, 0.0, 0.03)}, torch_threads=2, cpus=2)
    working = Facts(probed={OMP.key: TeamWait("libgomp", 2, {}, 0.0, 0.0, 0.95)}, torch_threads=2, cpus=2)
    for cause in (Denormals(), Threads()):
        assert cause.precheck(waiting, None).endswith("changes at most that share of their time"), cause.name
        assert "CPUs busy" not in (cause.precheck(working, None) or ""), cause.name
    assert Denormals().precheck(Facts(probed={OMP.key: TeamWait("libgomp", 2, {})}), None) is None  # not measured
