"""doctor: each check on the real machine, and each verdict on a staged one."""

import json
import subprocess
import sys
import types

import pytest

from benchctl import _cli as cli, fpenv
from benchctl._system import doctor
from benchctl._system.doctor import ERROR, INFO, OK, WARN, Probe

STATUSES = {OK, WARN, INFO}


def staged(**facts):
    probe = Probe()
    for name, value in facts.items():
        setattr(probe, name, value)
    return probe


def run_one(check, probe=None):
    (finding,) = doctor.run_checks([check], probe or Probe())
    return finding


def test_doctor_json_lists_every_check_with_a_status():
    done = subprocess.run([sys.executable, "-m", "benchctl", "doctor", "--json", "-"],
                          capture_output=True, text=True, timeout=120)
    data = json.loads(done.stdout)
    names = [c["name"] for c in data["checks"]]
    assert names == [c.name for c in doctor.CHECKS]
    for c in data["checks"]:
        assert c["status"] in STATUSES, c
        assert c["summary"]
        if c["status"] == WARN:
            assert c["advice"], c
    assert sum(data["counts"].values()) == len(names)
    assert done.returncode == 0, done.stderr


def test_doctor_text_output(capsys):
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    for check in doctor.CHECKS:
        assert check.name in out


def test_a_check_that_cannot_run_is_an_error_and_fails_the_command(monkeypatch, capsys):
    class Broken(doctor.Check):
        name, title = "broken", "always fails"

        def run(self, probe):
            raise RuntimeError("cannot read")

    monkeypatch.setattr(doctor, "CHECKS", (Broken(), doctor.TscCheck()))
    findings = doctor.run_checks()
    assert [f.status for f in findings][0] == ERROR and "cannot read" in findings[0].summary
    assert findings[1].status in STATUSES
    assert cli.main(["doctor"]) == 1


def test_tsc_check_reports_the_clock_in_use():
    from benchctl import clock
    f = run_one(doctor.TscCheck())
    assert f.status in STATUSES
    assert f.data["tick_source"] == clock.info()["source"]


def test_frequency_check_verdicts(monkeypatch):
    hidden = dict(cpufreq_visible=False, governors=None, drivers=None, current_khz=None,
                  turbo=None, turbo_source=None)
    monkeypatch.setattr(doctor.metadata, "frequency", lambda: hidden)
    assert run_one(doctor.FrequencyCheck()).status == INFO
    noisy = dict(hidden, cpufreq_visible=True, governors={"0": "powersave", "1": "powersave"},
                 turbo=True, turbo_source="intel_pstate/no_turbo")
    monkeypatch.setattr(doctor.metadata, "frequency", lambda: noisy)
    f = run_one(doctor.FrequencyCheck())
    assert f.status == WARN and "powersave" in f.summary
    assert "performance" in f.advice and "no_turbo" in f.advice
    quiet = dict(noisy, governors={"0": "performance"}, turbo=False)
    monkeypatch.setattr(doctor.metadata, "frequency", lambda: quiet)
    assert run_one(doctor.FrequencyCheck()).status == OK


def core(cpus, siblings):
    return {"socket": 0, "core_id": cpus[0], "node": 0, "cpus": cpus, "siblings": siblings}


def test_smt_check_verdicts():
    # We may use cpu0 only; its hyperthread sibling cpu2 belongs to someone else.
    topo = {"allowed_cpus": [0], "cores": [core([0], [0, 2])]}
    busy_sibling = staged(topology=topo, cpu_busy={0: 0.0, 2: 0.9})
    f = run_one(doctor.SmtSiblingsCheck(), busy_sibling)
    assert f.status == WARN and "cpu2 90%" in f.summary
    idle = staged(topology=topo, cpu_busy={0: 0.0, 2: 0.0})
    assert run_one(doctor.SmtSiblingsCheck(), idle).status == INFO
    # Both threads of the core are ours: our own threads, never a busy stranger.
    ours = staged(topology={"allowed_cpus": [0, 2], "cores": [core([0, 2], [0, 2])]}, cpu_busy={0: 0.9, 2: 0.9})
    assert run_one(doctor.SmtSiblingsCheck(), ours).status == INFO
    none = staged(topology={"allowed_cpus": [0, 1], "cores": [core([0], [0]), core([1], [1])]})
    assert run_one(doctor.SmtSiblingsCheck(), none).status == OK


def test_smt_check_reads_the_machine_topology():
    from benchctl.topology import cpu_topology
    f = run_one(doctor.SmtSiblingsCheck())
    assert (f.status == OK) == (not any(len(c["siblings"]) > 1 for c in cpu_topology()["cores"]))


def test_load_check_verdicts():
    busy = staged(allowed_cpus=[0, 1], cpu_busy={0: 0.5, 1: 0.3}, load_average=(0.2, 0.1, 0.1))
    f = run_one(doctor.LoadCheck(), busy)
    assert f.status == WARN and "0.80 of our 2 CPUs" in f.summary
    loaded = staged(allowed_cpus=[0, 1], cpu_busy={0: 0.0, 1: 0.0}, load_average=(3.0, 1.0, 1.0))
    assert run_one(doctor.LoadCheck(), loaded).status == WARN
    quiet = staged(allowed_cpus=[0, 1], cpu_busy={0: 0.01, 1: 0.02}, load_average=(0.1, 0.1, 0.1))
    assert run_one(doctor.LoadCheck(), quiet).status == OK


def test_load_probe_measures_real_cpus():
    busy = Probe().cpu_busy
    assert busy and all(0.0 <= v <= 1.0 for v in busy.values())


def test_thread_count_check_verdicts(monkeypatch):
    for var in doctor._THREAD_ENV:
        monkeypatch.delenv(var, raising=False)
    pools = [{"internal_api": "openmp", "filepath": "/x/libgomp.so.1", "num_threads": 2}]
    probe = staged(allowed_cpus=[0, 1], threadpools=pools, torch_num_threads=2)
    assert run_one(doctor.ThreadCountCheck(), probe).status == INFO
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert run_one(doctor.ThreadCountCheck(), probe).status == OK
    torch_too_many = staged(allowed_cpus=[0, 1], threadpools=pools, torch_num_threads=8)
    f = run_one(doctor.ThreadCountCheck(), torch_too_many)
    assert f.status == WARN and "torch.get_num_threads()=8" in f.summary
    monkeypatch.setenv("OMP_NUM_THREADS", "8,2")
    f = run_one(doctor.ThreadCountCheck(), probe)
    assert f.status == WARN and "OMP_NUM_THREADS=8" in f.summary and "at most 2" in f.advice
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert "unparsable" in run_one(doctor.ThreadCountCheck(), probe).summary
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    big_pool = staged(allowed_cpus=[0, 1], threadpools=[dict(pools[0], num_threads=16)], torch_num_threads=1)
    assert "pool of 16" in run_one(doctor.ThreadCountCheck(), big_pool).summary


def test_openmp_runtimes_check_verdicts():
    gomp = {"kind": "libgomp", "path": "/usr/lib/libgomp.so.1"}
    iomp = {"kind": "libiomp5", "path": "/opt/libiomp5.so"}
    f = run_one(doctor.OpenMpRuntimesCheck(), staged(openmp_runtimes=[gomp, iomp]))
    assert f.status == WARN and "2 OpenMP runtimes" in f.summary
    assert run_one(doctor.OpenMpRuntimesCheck(), staged(openmp_runtimes=[gomp])).status == OK
    assert run_one(doctor.OpenMpRuntimesCheck(), staged(openmp_runtimes=[])).status == INFO


def test_openmp_runtimes_check_sees_torchs_runtime():
    torch = pytest.importorskip("torch")
    f = run_one(doctor.OpenMpRuntimesCheck())
    if "OpenMP" in torch.__config__.parallel_info():
        assert f.status in (OK, WARN) and f.data["runtimes"]


def test_torch_thread_count_probe_reads_torch():
    torch = pytest.importorskip("torch")
    assert Probe().torch_num_threads == torch.get_num_threads()


def test_ftz_check_uses_fpenv_census(monkeypatch):
    def fake(census, supported=(True, "")):
        mod = types.SimpleNamespace(supported=lambda: supported, census=lambda scope="process": census,
                                    is_flushed=fpenv.is_flushed)
        monkeypatch.setattr(doctor, "fpenv", mod)

    def t(tid, ftz, reached=True):
        return dict(tid=tid, name="t", ftz=ftz, daz=ftz, raw=0, reached=reached)

    fake([t(1, True), t(2, False), t(3, False)])
    f = run_one(doctor.FtzDazCheck())
    assert f.status == WARN and "1 of 3" in f.summary and "scope='process'" in f.advice
    fake([t(1, False), t(2, False)])
    f = run_one(doctor.FtzDazCheck())
    assert f.status == OK and "IEEE default" in f.summary
    fake([t(1, True), t(2, True, reached=False)])
    assert run_one(doctor.FtzDazCheck()).status == INFO
    fake([], supported=(False, "no MXCSR on this CPU"))
    f = run_one(doctor.FtzDazCheck())
    assert f.status == INFO and "no MXCSR on this CPU" in f.summary


def test_perf_check_agrees_with_the_counters():
    from benchctl.counters import HARDWARE_EVENTS, CounterGroup
    with CounterGroup("process") as g:
        missing = set(g.unavailable)
    f = run_one(doctor.PerfEventsCheck())
    if missing - set(HARDWARE_EVENTS):
        assert f.status == WARN
    elif missing:
        assert f.status == INFO and "hardware" in f.summary
    else:
        assert f.status == OK
    assert "perf_event_paranoid" in f.data
