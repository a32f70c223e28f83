"""The contention gate: workers run beside other load are set aside by a rule that reads no timing."""

import pytest

from benchctl import _cpustat
from benchctl._cli import render
from benchctl._results import contention_gate as gate
from benchctl._results import document as results
from benchctl._run import runner


@pytest.fixture(autouse=True)
def _the_gate_as_shipped(monkeypatch):
    """The suite turns the gate off (conftest.py); these tests judge it at its shipped share."""
    monkeypatch.setattr(gate, "GATE_CPUS", 0.5)


def test_the_gate_share_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(gate.ENV_VAR, "1.5")
    assert gate._from_environment(0.5) == 1.5
    monkeypatch.setenv(gate.ENV_VAR, "inf")
    assert gate._from_environment(0.5) == float("inf")
    monkeypatch.delenv(gate.ENV_VAR)
    assert gate._from_environment(0.5) == 0.5
    for bad in ("-1", "0", "nan", "lots"):
        monkeypatch.setenv(gate.ENV_VAR, bad)
        with pytest.raises(ValueError, match="BENCHCTL_GATE_CPUS"):
            gate._from_environment(0.5)


def _record(other, busy, cpus=2, status="ok", steal=0.0, cell=None):
    return {"cell": cell or {}, "repetition": 0, "status": status,
            "beside": {"cpus": cpus, "busy_cpus": busy, "other_cpus": other, "steal_cpus": steal}}


@pytest.mark.parametrize("other, steal, busy, cpus, aside", [
    (0.9, 0.0, 1.95, 2, True),    # a neighbour took most of a CPU the two-thread workload wanted
    (0.4, 0.2, 1.95, 2, True),    # the hypervisor's steal counts as other load
    (0.3, 0.0, 1.9, 2, False),    # a 30% neighbour: under the gate
    (0.9, 0.0, 3.0, 16, False),   # a neighbour on CPUs the workload left idle takes nothing from it
    (0.9, 0.0, 1.4, 2, False),    # more than the gate's share stayed idle: the neighbour took none of it
])
def test_the_gate_reads_the_load_beside_a_worker_never_its_time(other, steal, busy, cpus, aside):
    record = _record(other, busy, cpus, steal=steal)
    assert (gate.reason(record) is not None) is aside
    if aside:
        assert f"{other + steal:.2f} CPUs busy beside it" in gate.reason(record)


def test_the_gate_measures_a_worker_against_the_runs_usual_load():
    """A steady neighbour falls on every cell alike: after the first worker it sets nothing aside (two 50%-duty
    neighbours on 2 CPUs had the gate set aside 28 of 29 workers and answer nothing); a burst that stands out
    over the earlier workers' load still does."""
    steady = _record(0.75, 2.0)
    assert gate.reason(steady) is not None                      # the first worker: nothing earlier, usual 0
    assert gate.reason(steady, [0.72, 0.81]) is None            # the usual load: kept
    assert gate.usual_load([0.72, 0.81, 0.7]) == 0.72
    line = gate.reason(_record(1.3, 2.0), [0.72, 0.81, 0.7])    # 0.58 over the usual 0.72
    assert line is not None and "the run's usual load was 0.72" in line
    assert gate.reason(_record(0.6, 2.0), [0.0, 0.02, 0.9]) is not None  # a burst on a quiet machine
    assert gate.reason(_record(0.6, 2.0), [0.0, 0.9, 0.9]) is None


def test_unknown_load_and_failed_workers_are_not_the_gates():
    assert gate.reason({"cell": {}, "status": "ok"}) is None  # nothing recorded beside it
    assert gate.reason(_record(None, None)) is None           # /proc/stat unreadable
    assert gate.reason(_record(1.5, 2.0, status="failed")) is None


def test_too_busy_is_said_first_only_when_half_the_workers_were_set_aside():
    kept = [_record(0.0, 1.0) for _ in range(3)]
    doc = {"runs": kept, gate.KEY: [_record(1.2, 2.0), _record(0.8, 2.0)]}
    assert gate.too_busy(doc) is None
    doc[gate.KEY].append(_record(1.0, 2.0))
    line = gate.too_busy(doc)
    assert line.startswith("the machine was too busy for a full answer: 3 of 6 workers")
    assert "a median 1.00 CPUs, up to 1.20" in line and "--budget" in line
    assert gate.too_busy({"runs": kept}) is None  # a document written before the gate


def test_a_steady_load_the_gate_kept_is_said_first_when_it_was_beside_half_the_workers():
    busy = [_record(0.75, 2.0), _record(0.72, 2.0), _record(0.9, 2.0)]
    quiet = [_record(0.0, 1.0) for _ in range(3)]
    line = gate.too_busy({"runs": busy + quiet})  # something left open: what to do
    assert line.startswith("the machine was too busy for a full answer: 3 of 6 workers ran beside other load "
                           "(a median 0.75 CPUs, up to 0.90), kept as a steady load")
    assert "--budget" in line and "uptime" in line
    settled = gate.too_busy({"runs": busy + quiet}, settled=True)
    assert settled.startswith("the machine was busy: 3 of 6 workers") and "held" in settled
    assert gate.too_busy({"runs": busy[:2] + quiet}) is None  # 2 of 5: a quiet machine's answer
    # a failed worker is none of the kept ones
    assert gate.too_busy({"runs": busy[:2] + [_record(0.9, 2.0, status="failed")] + quiet[:2]}) is not None


def test_a_set_aside_worker_runs_again_and_stays_out_of_the_comparisons(tmp_path, monkeypatch):
    """The first attempt of every slot ran beside a neighbour: it is kept in the set-aside list, its slot runs
    again, and the runs the comparisons read are the quiet ones; the report and the answer say so."""
    attempts = []
    real = runner.run_worker

    def neighbour_on_first_attempts(*args, **kwargs):
        record = real(*args, **kwargs)
        attempts.append(record)
        if len(attempts) % 2 == 1:  # every slot's first attempt
            record["beside"] = {**record["beside"], "cpus": 2, "busy_cpus": 2.0, "other_cpus": 1.1, "steal_cpus": 0.0}
        else:
            record["beside"] = {**record["beside"], "cpus": 2, "busy_cpus": 1.0, "other_cpus": 0.0, "steal_cpus": 0.0}
        return record

    waits = []
    monkeypatch.setattr(runner, "run_worker", neighbour_on_first_attempts)
    monkeypatch.setattr(runner, "wait_for_quiet",
                        lambda most, max_s, sample_s, since: waits.append((most, since)) or 0.5)
    path = str(tmp_path / "r.json")
    doc = runner.run_matrix("sleep", {"iterations": 3, "ms": 0.1}, {"ms": [0.1, 0.2]}, json_path=path,
                            repeat=2, progress=False, control=False)
    assert len(attempts) == 8 and len(waits) == 8
    # each wait is for the load the gate admits: the usual load (the kept workers', 0 here: no worker was set
    # aside right after another) plus the share
    assert [most for most, _ in waits] == pytest.approx([gate.GATE_CPUS] * 8)
    assert waits[0][1] is None and all(since is not None for _, since in waits[1:])  # the gap since the last worker
    saved = results.load(path)
    assert len(saved[gate.KEY]) == 4 and all("set_aside" in r for r in saved[gate.KEY])
    assert not any(r.get(gate.PERSISTED) for r in saved[gate.KEY])
    assert len(saved["runs"]) == 4 and all(r["beside"]["other_cpus"] == 0.0 for r in saved["runs"])
    assert saved["metadata"]["runner"]["gate"]["cpus"] == gate.GATE_CPUS
    assert saved["metadata"]["runner"]["quiet_wait_s"] == pytest.approx(4.0)
    text = render.render(doc)
    assert "contention gate: 4 worker(s) set aside, other load beside them 1.10-1.10 CPUs" in text
    assert "the machine was too busy" in text  # as many set aside as kept


def test_a_slot_set_aside_each_time_is_left_unfilled_within_its_retries(tmp_path, monkeypatch):
    real = runner.run_worker
    calls = []

    def busier_each_time(*args, **kwargs):  # each attempt's load stands out over the earlier ones'
        record = real(*args, **kwargs)
        calls.append(1)
        record["beside"] = {**record["beside"], "cpus": 4, "busy_cpus": 4.0, "other_cpus": 0.6 * len(calls),
                            "steal_cpus": 0.0}
        return record

    monkeypatch.setattr(runner, "run_worker", busier_each_time)
    monkeypatch.setattr(runner, "wait_for_quiet", lambda *a, **k: 0.0)
    doc = runner.run_matrix("sleep", {"iterations": 2, "ms": 0.1}, {}, json_path=str(tmp_path / "r.json"),
                            progress=False, control=False)
    assert len(calls) == 1 + gate.RETRIES
    assert doc["runs"] == [] and len(doc[gate.KEY]) == 1 + gate.RETRIES
    answer = render.render(doc).split("Answer for")[1]
    assert answer.splitlines()[1].startswith(" the machine was too busy for a full answer: 3 of 3 workers")


def _workers_beside(monkeypatch, other_cpus):
    """Every worker reports ``other_cpus`` of other load beside it on a 2-CPU machine left no idle CPU."""
    real = runner.run_worker

    def beside(*args, **kwargs):
        record = real(*args, **kwargs)
        record["beside"] = {**record["beside"], "cpus": 2, "busy_cpus": 2.0, "other_cpus": other_cpus,
                            "steal_cpus": 0.0}
        return record

    monkeypatch.setattr(runner, "run_worker", beside)


def test_a_steady_neighbour_costs_the_first_two_workers(tmp_path, monkeypatch):
    """Every worker ran beside the same 0.75 CPUs: the first is set aside (nothing earlier to call it usual), and
    so is its slot's second attempt (against the usual load without the first, which a burst would leave); beside
    two workers in a row the load is the usual one, and every later worker is kept; the answer says first how busy
    the machine was."""
    _workers_beside(monkeypatch, 0.75)
    waits = []
    monkeypatch.setattr(runner, "wait_for_quiet", lambda most, *a, **k: waits.append(most) or 0.0)
    doc = runner.run_matrix("sleep", {"iterations": 3, "ms": 0.1}, {"ms": [0.1, 0.2]},
                            json_path=str(tmp_path / "r.json"), repeat=2, progress=False, control=False)
    assert len(doc[gate.KEY]) == 2 and len(doc["runs"]) == 4 and all(r[gate.PERSISTED] for r in doc[gate.KEY])
    # the second is judged, and waited for, against the usual load without the first (a burst the next worker does
    # not see); beside both, the load is the usual one from then on
    assert waits == pytest.approx([gate.GATE_CPUS] * 2 + [0.75 + gate.GATE_CPUS] * 4)
    assert "2 of them were set aside two in a row" in render.render(doc)
    first = render.render(doc).split("Answer for")[1].splitlines()[1]
    assert first.startswith(" the machine was") and "4 of 4 workers ran beside other load (a median 0.75 CPUs" in first


def _workers_beside_in_turn(monkeypatch, loads):
    """The workers report ``loads`` of other load beside them in turn, on a 2-CPU machine left no idle CPU."""
    real, given = runner.run_worker, iter(loads)

    def beside(*args, **kwargs):
        record = real(*args, **kwargs)
        record["beside"] = {**record["beside"], "cpus": 2, "busy_cpus": 2.0, "other_cpus": next(given),
                            "steal_cpus": 0.0}
        return record

    monkeypatch.setattr(runner, "run_worker", beside)


def test_a_burst_that_dropped_before_the_next_worker_is_not_the_usual_load(tmp_path, monkeypatch):
    """A 1-second worker beside 30% bursts of 0.5-3 s: set aside at 0.99 CPUs, the next kept at 0.02; the one
    after, in a burst again at 0.98, was kept against the median of both (0.51) and gave a paired ratio of 10.9
    where the others gave 0.52. The next worker did not see the first one's load: a burst, not the usual load."""
    _workers_beside_in_turn(monkeypatch, [0.99, 0.02, 0.98, 0.01])
    waits = []
    monkeypatch.setattr(runner, "wait_for_quiet", lambda most, *a, **k: waits.append(most) or 0.3)
    doc = runner.run_matrix("sleep", {"iterations": 2, "ms": 0.1}, {}, repeat=2, progress=False, control=False,
                            json_path=str(tmp_path / "r.json"))
    assert [gate.Beside.of(r).other_cpus for r in doc[gate.KEY]] == [0.99, 0.98]
    assert [gate.Beside.of(r).other_cpus for r in doc["runs"]] == [0.02, 0.01]
    assert waits == pytest.approx([gate.GATE_CPUS, gate.GATE_CPUS, 0.02 + gate.GATE_CPUS, 0.02 + gate.GATE_CPUS])
    assert not any(r.get(gate.PERSISTED) for r in doc[gate.KEY])


def test_a_resumed_run_counts_the_loads_set_aside_two_in_a_row(tmp_path, monkeypatch):
    """Two workers set aside in a row are marked in the file and their loads stay the usual load on --resume; a
    set-aside one without the mark stays out of it."""
    _workers_beside_in_turn(monkeypatch, [0.9, 0.9, 0.9, 1.3])  # the first run's three workers, the resumed one's
    monkeypatch.setattr(runner, "wait_for_quiet", lambda *a, **k: 0.0)
    path = str(tmp_path / "r.json")
    first = runner.run_matrix("sleep", {"iterations": 2, "ms": 0.1}, {}, json_path=path, repeat=1,
                              progress=False, control=False)
    assert len(first[gate.KEY]) == 2 and len(first["runs"]) == 1
    assert all(r[gate.PERSISTED] for r in results.load(path)[gate.KEY])  # the first too, saved with the second
    waits = []
    monkeypatch.setattr(runner, "wait_for_quiet", lambda most, *a, **k: waits.append(most) or 0.0)
    doc = runner.run_matrix("sleep", {"iterations": 2, "ms": 0.1}, {}, json_path=path, repeat=2, resume=True,
                            progress=False, control=False)
    assert waits == pytest.approx([0.9 + gate.GATE_CPUS]) and len(doc["runs"]) == 2  # 1.3 is not 0.5 over 0.9
    assert gate.loads_of_the_usual(doc["runs"], doc[gate.KEY]) == pytest.approx([0.9, 1.3, 0.9, 0.9])
    unmarked = {**doc[gate.KEY][0]}
    unmarked.pop(gate.PERSISTED)
    assert gate.loads_of_the_usual(doc["runs"], [unmarked]) == pytest.approx([0.9, 1.3])


def test_a_resumed_run_keeps_its_usual_load(tmp_path, monkeypatch):
    """--resume reads the usual load from the file's workers: the steady neighbour sets none of the new ones
    aside."""
    _workers_beside(monkeypatch, 0.75)
    monkeypatch.setattr(runner, "wait_for_quiet", lambda *a, **k: 0.0)
    path = str(tmp_path / "r.json")
    first = runner.run_matrix("sleep", {"iterations": 3, "ms": 0.1}, {}, json_path=path, repeat=2,
                              progress=False, control=False)
    assert len(first[gate.KEY]) == 2 and len(first["runs"]) == 2
    doc = runner.run_matrix("sleep", {"iterations": 3, "ms": 0.1}, {}, json_path=path, repeat=4, resume=True,
                            progress=False, control=False)
    assert len(doc[gate.KEY]) == 2 and len(doc["runs"]) == 4


def test_waiting_for_quiet_is_bounded(monkeypatch):
    class Busy:
        def finish(self):
            return {"other_cpus": 1.5, "steal_cpus": 0.0, "wall_s": 0.05}

    monkeypatch.setattr(_cpustat, "BusySampler", Busy)
    waited = _cpustat.wait_for_quiet(0.5, 0.3, 0.05)
    assert 0.2 <= waited <= 0.6

    class Quiet:
        def finish(self):
            return {"other_cpus": 0.1, "steal_cpus": 0.1, "wall_s": 0.01}

    monkeypatch.setattr(_cpustat, "BusySampler", Quiet)
    assert _cpustat.wait_for_quiet(0.5, 10.0, 0.01) < 1.0

    class QuietSinceTheLastWorker(Quiet):
        def finish(self):
            return {**super().finish(), "wall_s": 6.0}

    started = _cpustat.time.monotonic()
    assert _cpustat.wait_for_quiet(0.5, 10.0, 5.0, since=QuietSinceTheLastWorker()) < 0.1
    assert _cpustat.time.monotonic() - started < 1.0  # the gap since the last worker was the look: no sleep


def test_a_probe_worker_is_not_the_gates(tmp_path, monkeypatch):
    """explain's probe worker gathers evidence compared with no other cell: however busy the machine, it runs
    once, without waiting, and is kept."""
    _workers_beside(monkeypatch, 1.5)
    monkeypatch.setattr(runner, "wait_for_quiet", lambda *a, **k: pytest.fail("a probe worker waited"))
    doc = runner.run_matrix("sleep", {"iterations": 2, "ms": 0.1}, {}, repeat=1, control=False, progress=False,
                            probe=True)
    assert len(doc["runs"]) == 1 and not doc.get(gate.KEY)


def test_a_process_the_workload_starts_is_its_own_load_not_a_neighbour():
    """The planted oversubscription starts its own spinning neighbour: that is the workload's load (the gate set
    its workers aside as 'other load' until the sampler counted the processes below the worker as its own)."""
    import subprocess
    import sys

    sampler = _cpustat.BusySampler()
    spin = "import time\nend = time.time() + 0.6\nwhile time.time() < end: pass"
    child = subprocess.Popen([sys.executable, "-c", spin])
    try:
        _cpustat.time.sleep(0.5)  # measured while the child still runs: it has not been waited for
        beside = sampler.finish()
    finally:
        child.wait()
    assert beside["own_cpus"] >= 0.5, beside
    if beside["other_cpus"] is not None:  # /proc/stat readable
        assert beside["other_cpus"] < beside["own_cpus"], beside


def test_a_paired_worker_that_switches_the_thread_count_is_the_gates(tmp_path, monkeypatch):
    """A neighbour that holds a CPU falls on the arm that uses it: a paired worker switching the thread count goes
    through the gate as a fresh one does; one switching FTZ/DAZ (both arms on the same CPU) runs as it comes."""
    from test_control import FakeWorkers

    class PairedBeside(FakeWorkers):
        """Every paired worker ran beside 1.5 CPUs of other load on a 2-CPU machine, every fresh one beside none."""

        def __call__(self, *args, **kwargs):
            record = super().__call__(*args, **kwargs)
            other = 1.5 if kwargs.get("pair") is not None else 0.0
            record["beside"] = {"cpus": 2, "busy_cpus": 2.0, "other_cpus": other, "steal_cpus": 0.0}
            return record

    monkeypatch.setattr(runner, "wait_for_quiet", lambda *a, **k: 0.0)
    for switched, aside in (({"threads": 1}, 2), ({"ftz": "process"}, 0)):
        PairedBeside(monkeypatch, lambda c: 1.0)
        doc = runner.run_matrix("sleep", {"iterations": 1}, {"with": [{}, switched]}, repeat=2, progress=False,
                                paired=True, json_path=str(tmp_path / f"{aside}.json"))
        assert doc["paired"]["cells"] == [{"with": switched}]
        # Gated, the first paired worker is set aside against the baseline's usual 0 CPUs, and so is its slot's
        # second attempt; the third, against their median 1.5 (two in a row), is kept, and so is the next round's.
        assert [r["cell"] for r in doc.get(gate.KEY) or []] == [{"with": switched}] * aside
        assert len([r for r in doc["runs"] if r["cell"] == {"with": switched}]) == 2
