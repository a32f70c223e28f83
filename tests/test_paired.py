"""Paired cells: a cell timed in the baseline's processes, switched between ABBA blocks (benchctl._run.paired).

Which cells pair (pair_for, plan_matrix), every in-process setting's ``unapplied`` value, the paired recorder's
schedule (driven by a fake in-process setting, on a fake clock where the schedule must be exact), the paired
comparison and its band, its calibration on synthetic machines whose speed moves between processes, how a
document's paired cells are read and compared, which slots --repeat auto runs for an open paired cell, and
(in the slow tier) a real paired run and its resume.
"""

import copy
import math
import re
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from benchctl import settings
from benchctl._results import document, processes, queries, report
from benchctl._results.analysis import analyse
from benchctl._results.comparison import FLOOR, Outcome
from benchctl._run import paired, rounds, runner
from benchctl._run.paired import Pair, PairedRecorder, pair_for
from benchctl._run.recorder import Recorder
from benchctl._run.worker import _phases
from benchctl._setting import Setting
from benchctl._validate import ArgumentError

BASE = {"with": {}}
THREADS_CELL = {"with": {"threads": 1}}
PAIRED_MATRIX = {"with": [{}, {"threads": 1}]}


# ----------------------------------------------------------------------------------------- which cells pair


def test_pair_for_gives_the_switched_settings_of_each_arm():
    assert pair_for({"with": {}}, {"with": {"ftz": "process"}}) == Pair(a={}, b={"ftz": "process"})
    assert pair_for({"ftz": "off"}, {"ftz": "process"}) == Pair(a={"ftz": "off"}, b={"ftz": "process"})
    # The reverse star: the baseline names the setting, the cell does not (arm B switches to its unapplied value).
    assert pair_for({"with": {"ftz": "process"}}, {"with": {}}) == Pair(a={"ftz": "process"}, b={})
    # A setting both share is not switched: only the one that differs is.
    assert pair_for({"alloc": "retain", "ftz": "off"}, {"alloc": "retain", "ftz": "process"}) == Pair(
        a={"ftz": "off"}, b={"ftz": "process"})
    assert Pair(a={}, b={"ftz": "process"}).names == ["ftz"] and not Pair(b={"ftz": "process"}).is_control
    assert Pair().is_control and Pair().names == []
    assert Pair.from_json(Pair({"ftz": "off"}, {"ftz": "process"}).to_json()) == Pair({"ftz": "off"},
                                                                                      {"ftz": "process"})


@pytest.mark.parametrize("baseline, cell", [
    ({"with": {}}, {"with": {"alloc": "retain"}}),                 # an allocator needs a fresh process
    ({"with": {}}, {"with": {"omp_wait": "passive"}}),             # read once as the runtime starts
    ({"alloc": "default"}, {"alloc": "retain"}),
    ({"with": {}}, {"with": {"ftz": "process", "alloc": "retain"}}),  # one fresh-only setting spoils the pair
    ({"ftz": "off", "ms": 1.0}, {"ftz": "process", "ms": 2.0}),    # a workload parameter differs
    ({"ftz": "off", "ms": 1.0}, {"ftz": "off", "ms": 2.0}),
    ({"ftz": "process"}, {"ftz": "process"}),                      # identical: nothing to switch
    ({"with": {}}, {"with": {}}),
    ({"with": {}}, {"with": {"pools": "capped"}}),                 # switchable, but its effect carries over
])
def test_pair_for_refuses_what_a_running_process_cannot_switch(baseline, cell):
    assert pair_for(baseline, cell) is None


def test_the_settings_whose_effect_carries_over_a_switch_can_switch_but_never_pair():
    carrying = sorted(name for name, s in settings.SETTINGS.items() if s.carries_over)
    # profiler: a session from the import, stopped, stays stopped; gc: the first pass after the switch back
    assert carrying == ["gc", "pools", "profiler"]
    assert all(settings.SETTINGS[name].in_process for name in carrying)


def test_plan_matrix_pairs_only_when_asked():
    matrix = {"with": [{}, {"threads": 1}, {"alloc": "retain"}]}
    plan = runner.plan_matrix("sleep", {"iterations": 1}, matrix, paired=True)
    assert plan.pairs == {1: Pair(a={}, b={"threads": 1})}  # alloc=retain runs in its own fresh processes
    assert runner.plan_matrix("sleep", {"iterations": 1}, matrix, paired=False).pairs == {}
    assert runner.plan_matrix("sleep", {"iterations": 1}, matrix).pairs == {}
    # A parameter axis crossed with a setting: only the cell with the baseline's parameters pairs.
    crossed = runner.plan_matrix("sleep", {}, {"ms": [1.0, 2.0], "ftz": ["off", "process"]}, paired=True)
    assert crossed.cells[1] == {"ms": 1.0, "ftz": "process"}
    assert crossed.pairs == {1: Pair(a={"ftz": "off"}, b={"ftz": "process"})}
    # A baseline's thread count sizes the pools at start too, but the switch resizes them whatever they were
    # sized to: paired, from a worker that starts with the baseline's count in its environment.
    sized = runner.plan_matrix("sleep", {}, {"threads": [2, 1]}, paired=True)
    assert sized.pairs == {1: Pair(a={"threads": 2}, b={"threads": 1})}
    assert sized.environments[0]["OMP_NUM_THREADS"] == "2"
    # Unless another baseline setting's start reads that count: pin=compact places as many threads as it names.
    placed = runner.plan_matrix("sleep", {}, {"threads": [2, 1], "pin": ["compact"]}, paired=True)
    assert placed.pairs == {}


def test_only_the_thread_count_switches_away_from_what_its_environment_set_at_start():
    undoing = sorted(name for name, s in settings.SETTINGS.items() if s.switch_undoes_environment)
    assert undoing == ["threads"]
    assert all(settings.SETTINGS[name].in_process for name in undoing)
    # pin's environment binds the team at start, which no switch undoes.
    assert pair_for({"pin": "compact"}, {"pin": "off"}) is None
    assert pair_for({"threads": 1}, {"threads": 2}) == Pair(a={"threads": 1}, b={"threads": 2})


def test_only_a_pair_that_switches_the_thread_count_is_gated():
    # Its arms use different numbers of CPUs, so a neighbour that holds one falls on one arm (the contention gate):
    # threads=, and the clamp that cuts or raises torch's count to the usable CPUs.
    assert sorted(name for name, s in settings.SETTINGS.items() if s.changes_cpus_used) == ["clamp", "threads"]
    assert Pair(a={}, b={"threads": 1}).gated and Pair(a={"ftz": "off"}, b={"ftz": "process", "threads": 2}).gated
    assert Pair(a={}, b={"clamp": "all"}).gated
    assert not Pair(a={}, b={"ftz": "process"}).gated and not Pair().gated


def test_a_placed_baseline_is_not_timed_paired_from_its_placed_environment():
    plan = runner.plan_matrix("sleep", {"iterations": 1}, {"pin": ["compact", "off"]}, paired=True)
    placed = sorted(k for k in plan.environments[0] if k in ("OMP_PLACES", "OMP_PROC_BIND", "KMP_AFFINITY"))
    # The runner starts a paired worker with plan.environments[0]; either the cell is not paired, or that
    # environment leaves the team unplaced.
    assert 1 not in plan.pairs or not placed, (plan.pairs, placed)


# ----------------------------------------------------------------------------- every setting's unapplied value


IN_PROCESS = sorted(name for name, s in settings.SETTINGS.items() if s.in_process)


def test_there_are_in_process_settings_to_check():
    assert {"ftz", "threads", "pin"} <= set(IN_PROCESS)
    assert "alloc" not in IN_PROCESS and "omp_wait" not in IN_PROCESS


@pytest.mark.parametrize("name", IN_PROCESS)
def test_each_in_process_setting_has_an_unapplied_value_it_accepts(name):
    setting = settings.SETTINGS[name]
    if name == "threads":
        pytest.importorskip("torch")  # its unapplied value is torch's thread count as the code left it
    value = setting.unapplied
    assert value is not None, f"{name}: an in-process setting needs an unapplied value"
    assert setting.canonical(value) == value
    assert type(setting.canonical(value)) is type(value)


# ------------------------------------------------------------------------------------- the paired recorder


class FakeSwitch(Setting):
    """An in-process setting that records its switches; ``stuck``: values a switch to does not take."""

    name = "fake_switch"
    in_process = True
    unapplied = "off"

    def __init__(self, clock=None, stuck=(), switch_s=0.0):
        self.calls: list[str] = []
        self.current = "off"
        self.clock, self.stuck, self.switch_s = clock, stuck, switch_s

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "on"))

    def switch(self, value: str) -> str:
        self.calls.append(value)
        if self.clock is not None:
            self.clock.now += self.switch_s
        if value not in self.stuck:
            self.current = value
        return self.current

    def during(self, value: str) -> str:
        return self.current


class FakeClock:
    """Stands in for paired's ``time``: the schedule then sees exactly the seconds a test gives it."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def fake_setting(monkeypatch):
    def install(**kwargs):
        setting = FakeSwitch(**kwargs)
        monkeypatch.setitem(settings.SETTINGS, FakeSwitch.name, setting)
        return setting
    return install


@pytest.fixture
def fake_clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(paired, "time", clock)
    return clock


def _drive(rec, n, clock=None, seconds=0.0025, phase="run"):
    for _ in range(n):
        with rec.iteration(phase):
            if clock is None:
                time.sleep(seconds)
            else:
                clock.now += seconds


def _schedule(rec, phase="run"):
    return "".join(rec.labels[phase])


def _runs(schedule: str, arm: str) -> int:
    """How many runs of ``arm`` (its steady and left-out letters) ``schedule`` holds: its windows of iterations where
    none closes by time."""
    return len(re.findall(f"[{arm}{arm.lower()}]+", schedule))


# With the default 1 ms settling and 4 ms blocks, iterations of 2.5 ms (not 2: 2 + 2 ms on a float clock can
# fall a hair short of 4): 1 left out after each switch (2.5 >= 1 ms), 2 steady a block (2.5 < 4; 5 >= 4),
# blocks A B B A A B B...: consecutive blocks of one arm run on with no switch between them.
EXACT = "a" + "A" * 2 + "b" + "B" * 4 + "a" + "A" * 4 + "b" + "B" * 3


def test_the_schedule_is_abba_blocks_of_equal_time_with_settling_left_out(fake_setting, fake_clock):
    assert (paired.SETTLE_S, paired.BLOCK_S, paired.PATTERN) == (0.001, 0.004, "ABBA")
    fake = fake_setting(clock=fake_clock, switch_s=0.001)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))
    _drive(rec, len(EXACT), fake_clock)
    assert _schedule(rec) == EXACT
    assert fake.calls == ["off", "on", "off", "on"]  # arm A's value is the setting's unapplied one
    assert rec.values == {"A": {FakeSwitch.name: "off"}, "B": {FakeSwitch.name: "on"}}
    assert [s["to"] for s in rec.switches] == ["A", "B", "A", "B"] and rec.arm == "B"
    assert [s["seconds"] for s in rec.switches] == pytest.approx([0.001] * 4)  # each switch timed
    assert not [s for s in rec.switches if "not_held" in s]
    # Each arm's settings were checked where each window of its iterations closed (a window never spans a switch:
    # at least once a run of the arm, at most once an iteration), and held; the last closes where the worker ends.
    rec.finish()
    for arm in "AB":
        watch = rec.watches[arm][FakeSwitch.name].to_json()
        assert (watch["held"], watch["seen"]) == (True, rec.values[arm][FakeSwitch.name])
        assert _runs(EXACT, arm) <= watch["samples"] <= EXACT.upper().count(arm)


def test_the_schedule_runs_across_phases_and_each_phase_keeps_its_letters(fake_setting, fake_clock):
    fake_setting(clock=fake_clock)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))
    _drive(rec, 10, fake_clock, phase="first")
    _drive(rec, len(EXACT) - 10, fake_clock, phase="second")
    assert _schedule(rec, "first") + _schedule(rec, "second") == EXACT


def test_short_iterations_are_capped_by_count_so_a_short_worker_holds_both_arms(fake_setting, fake_clock):
    """30 iterations of 8 us (tests/planted/lazy_init.py's): by time alone they would all be arm A's."""
    assert (paired.SETTLE_ITERATIONS, paired.BLOCK_ITERATIONS) == (2, 4)
    fake_setting(clock=fake_clock)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))
    _drive(rec, 30, fake_clock, seconds=8e-6)
    assert _schedule(rec) == "aa" + "A" * 4 + "bb" + "B" * 8 + "aa" + "A" * 8 + "bb" + "BB"
    rec.finish()
    _, record = rec.split(_phases(rec))
    assert (record["settle_iterations"], record["block_iterations"]) == (2, 4)


def test_a_time_target_stops_a_paired_worker_only_once_each_arm_has_its_iterations(fake_setting, fake_clock,
                                                                                     monkeypatch):
    """A user workload's ``seconds`` target, met by its first iterations (vs_peers' 0.05 s processes), stopped
    the worker after 'aAA': no arm B, no ratio. It now waits for MIN_ITERATIONS steady ones of each arm."""
    from benchctl._workloads import user

    monkeypatch.setattr(user, "time", fake_clock)  # the target's own reading of the time
    fake_setting(clock=fake_clock)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))

    def slow_call():
        fake_clock.now += 0.02  # three of these already exceed the target

    user._timed(rec, "run", slow_call, {"iterations": 1000, "seconds": 0.05})
    schedule = _schedule(rec)
    assert schedule.count("B") >= user.MIN_ITERATIONS and schedule.count("A") >= user.MIN_ITERATIONS
    # 20 ms iterations: one left out after each switch, one steady a block (ABBA); it stops once both arms have 3.
    assert schedule == "aA" + "bBB" + "aAA" + "bB"
    # An unpaired worker still stops after MIN_ITERATIONS once the target is met.
    plain = Recorder()
    user._timed(plain, "run", slow_call, {"iterations": 1000, "seconds": 0.05})
    assert len(plain.ticks["run"]) == user.MIN_ITERATIONS


def test_an_iteration_count_that_runs_out_before_arm_b_is_stretched_until_each_arm_has_one(fake_setting, fake_clock,
                                                                                           monkeypatch):
    """explain sized 3 iterations a worker where its budget was short: a paired worker of 20 ms calls ran 'aAb', no
    arm B, so no ratio, and its cause fell out of the answer. It now goes on until each arm has a steady iteration."""
    from benchctl._workloads import user

    monkeypatch.setattr(user, "time", fake_clock)
    fake_setting(clock=fake_clock)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))

    def slow_call():
        fake_clock.now += 0.02

    user._timed(rec, "run", slow_call, {"iterations": 3, "seconds": 0.0})
    assert _schedule(rec) == "aAbB"
    # Never beyond ARMS_EXTRA more: a schedule that reaches no arm B (a pattern of arm A only) stops there.
    stuck = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))
    monkeypatch.setattr(stuck, "pattern", "A")
    user._timed(stuck, "run", slow_call, {"iterations": 3, "seconds": 0.0})
    assert len(_schedule(stuck)) == 3 + user.ARMS_EXTRA
    # An unpaired worker runs its count, no more.
    plain = Recorder()
    user._timed(plain, "run", slow_call, {"iterations": 2, "seconds": 0.0})
    assert len(plain.ticks["run"]) == 2


def test_blocks_hold_block_s_of_steady_time_on_a_real_clock(fake_setting, monkeypatch):
    monkeypatch.setattr(paired, "SETTLE_S", 0.003)
    monkeypatch.setattr(paired, "BLOCK_S", 0.010)
    monkeypatch.setattr(paired, "SETTLE_ITERATIONS", 1000)  # the time rule alone here
    monkeypatch.setattr(paired, "BLOCK_ITERATIONS", 1000)
    fake = fake_setting()
    rec = PairedRecorder(None, Pair(a={FakeSwitch.name: "off"}, b={FakeSwitch.name: "on"}))
    _drive(rec, 70, seconds=0.002)
    rec.finish()
    labels = rec.labels["run"]
    ns = _phases(rec)["run"]["ns"]
    assert len(labels) == len(ns) == 70
    # Runs of one arm: each starts with its settling iterations (lowercase), and only there.
    runs = [m.span() for m in re.finditer(r"([aA]+|[bB]+)", "".join(labels))]
    assert len(runs) == len(rec.switches) == len(fake.calls) >= 3
    arms = ["A" if labels[start] == "a" else "B" for start, _ in runs]
    assert arms == ["AB"[i % 2] for i in range(len(runs))]
    max_ns = max(ns)
    for i, (start, end) in enumerate(runs):
        letters = "".join(labels[start:end])
        assert re.fullmatch(r"[ab]+[AB]*", letters), letters
        settle = [ns[j] for j in range(start, end) if labels[j].islower()]
        assert settle, "at least one iteration is left out after every switch"
        assert sum(settle[:-1]) < paired.SETTLE_S * 1e9, "settling stops once SETTLE_S has passed"
        if i < len(runs) - 1:  # a finished stretch: 1 block (the first), else 2 (A B B A: B B, A A)
            assert sum(settle) >= 0.6 * paired.SETTLE_S * 1e9
            blocks = 1 if i == 0 else 2
            steady = sum(ns[j] for j in range(start, end) if labels[j].isupper())
            assert 0.6 * blocks * paired.BLOCK_S * 1e9 <= steady <= blocks * (paired.BLOCK_S * 1e9 + max_ns), (
                i, steady, letters)
    assert all(s["seconds"] >= 0 for s in rec.switches)


def test_split_keeps_arm_b_as_the_phases_and_arm_a_under_pair(fake_setting, fake_clock):
    fake_setting(clock=fake_clock)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))
    _drive(rec, len(EXACT), fake_clock)
    rec.finish()
    full = _phases(rec)
    b_phases, record = rec.split(full)
    ns = full["run"]["ns"]
    assert b_phases["run"]["ns"] == [ns[i] for i, c in enumerate(EXACT) if c == "B"]
    assert b_phases["run"]["ticks"] == [full["run"]["ticks"][i] for i, c in enumerate(EXACT) if c == "B"]
    assert record["phases"]["run"]["ns"] == [ns[i] for i, c in enumerate(EXACT) if c == "A"]
    assert record["settling_ns"]["run"] == [ns[i] for i, c in enumerate(EXACT) if c.islower()]
    assert b_phases["run"]["counters"] == record["phases"]["run"]["counters"] == {}  # no counter group
    assert record["schedule"] == {"run": EXACT}
    assert record["pair"] == {"a": {}, "b": {FakeSwitch.name: "on"}}
    assert record["values"] == {"A": {FakeSwitch.name: "off"}, "B": {FakeSwitch.name: "on"}}
    assert record["switches"] == 4 and len(record["switch_s"]) == 4 and record["not_held"] == []
    during_a = record["during_a"][FakeSwitch.name]
    assert (during_a["held"], during_a["seen"]) == (True, "off")
    assert _runs(EXACT, "A") <= during_a["samples"] <= EXACT.upper().count("A")
    assert (record["settle_s"], record["block_s"], record["pattern"]) == (0.001, 0.004, "ABBA")
    # What the settings read where the phase ended stays with the run's (arm B's) phase.
    readings = set(full["run"]) - {"ticks", "ns", "counters"}
    assert set(b_phases["run"]) - {"ticks", "ns", "counters"} == readings
    assert set(record["phases"]["run"]) == {"ticks", "ns", "counters"}


def test_split_slices_ticks_ns_and_counters_alike():
    rec = PairedRecorder(None, Pair(a={}, b={"ftz": "process"}))
    rec.labels = {"eval": list("aAAbBBaA"), "train": list("bB")}
    phases = {
        "eval": {"ticks": list(range(8)), "ns": [10.0 + i for i in range(8)],
                 "counters": {"cycles": [100 + i for i in range(8)], "faults": [None] * 7 + [5]},
                 "malloc": {"arena": 1}},
        "train": {"ticks": [0, 1], "ns": [1.0, 2.0]},  # no counters at all
    }
    b, record = rec.split(phases)
    assert b["eval"] == {"ticks": [4, 5], "ns": [14.0, 15.0],
                         "counters": {"cycles": [104, 105], "faults": [None, None]}, "malloc": {"arena": 1}}
    a = record["phases"]["eval"]
    assert a == {"ticks": [1, 2, 7], "ns": [11.0, 12.0, 17.0], "counters": {"cycles": [101, 102, 107],
                                                                             "faults": [None, None, 5]}}
    assert record["settling_ns"] == {"eval": [10.0, 13.0, 16.0], "train": [1.0]}
    assert b["train"] == {"ticks": [1], "ns": [2.0], "counters": {}}
    assert record["phases"]["train"] == {"ticks": [], "ns": [], "counters": {}}
    assert record["schedule"] == {"eval": "aAAbBBaA", "train": "bB"}


def test_a_switch_the_process_does_not_hold_is_recorded(fake_setting, fake_clock):
    fake_setting(clock=fake_clock, stuck=("on",))
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))
    _drive(rec, len(EXACT), fake_clock)
    _, record = rec.split(_phases(rec))
    assert [s["to"] for s in record["not_held"]] == ["B", "B"]
    assert all(s["not_held"] == {FakeSwitch.name: "off"} for s in record["not_held"])
    assert not [s for s in rec.switches if s["to"] == "A" and "not_held" in s]
    assert rec.watches["B"][FakeSwitch.name].to_json()["held"] is False
    assert rec.watches["A"][FakeSwitch.name].to_json()["held"] is True


def test_a_setting_held_by_the_calls_is_not_read_at_the_switch_before_any_call(fake_setting, fake_clock):
    # hooks, inference, ... read "held" from the calls since the switch: at the switch none has run, and every
    # switch to arm B was recorded as not held.
    setting = fake_setting(clock=fake_clock, stuck=("on",))
    setting.held_by_calls = True
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}))
    _drive(rec, len(EXACT), fake_clock)
    _, record = rec.split(_phases(rec))
    assert record["not_held"] == [] and record["switches"] > 2
    assert rec.watches["B"][FakeSwitch.name].to_json()["held"] is False  # the in-run check still reads the calls
    assert all(s.held_by_calls for s in (settings.SETTINGS[n] for n in ("hooks", "inference", "train_mode",
                                                                         "parametrize", "modes", "autocast_cache",
                                                                         "saved_hooks", "grad_hooks", "tracing")))
    assert not any(settings.SETTINGS[n].held_by_calls for n in ("ftz", "threads", "pin", "anomaly"))


class CountingSwitch(FakeSwitch):
    """A setting held by the calls: its counts start again at each switch, as hooks' and inference's do."""

    held_by_calls = True

    def switch(self, value):
        self.counted = {"calls": 0, "held": 0}
        return super().switch(value)

    def readback(self, value):
        return {"on": self.current == "on", **self.counted}


def test_a_paired_readback_of_a_setting_held_by_the_calls_counts_every_span_of_its_arm(monkeypatch, fake_clock):
    # Read back after the worker switched back to arm B, its counts had started again at zero: "every timed call
    # read back with them detached" was never said of a paired cell.
    from benchctl._run.worker import _paired_read_back, _Stage

    setting = CountingSwitch()
    monkeypatch.setitem(settings.SETTINGS, CountingSwitch.name, setting)
    rec = PairedRecorder(None, Pair(a={}, b={CountingSwitch.name: "on"}))
    b_calls = 0
    for _ in range(len(EXACT)):
        with rec.iteration("run"):
            fake_clock.now += 0.0025
        setting.counted["calls"] += 1
        setting.counted["held"] += 1
        b_calls += rec.arm == "B"
    back = _paired_read_back(rec, _Stage())[CountingSwitch.name]["observed"]
    assert b_calls > 2 and back == {"on": True, "calls": b_calls, "held": b_calls}


def test_the_paired_control_switches_nothing_and_still_alternates(fake_setting, fake_clock):
    fake = fake_setting(clock=fake_clock)
    rec = PairedRecorder(None, Pair())
    _drive(rec, len(EXACT), fake_clock)
    assert fake.calls == []
    assert _schedule(rec) == EXACT
    assert [s["to"] for s in rec.switches] == ["A", "B", "A", "B"]
    assert rec.values == {"A": {}, "B": {}} and rec.watches == {"A": {}, "B": {}}
    b, record = rec.split(_phases(rec))
    assert len(b["run"]["ns"]) == EXACT.count("B") and len(record["phases"]["run"]["ns"]) == EXACT.count("A")
    assert record["pair"] == {"a": {}, "b": {}}


def test_a_worker_carrying_the_control_alternates_each_arm_with_a_and_balances_all_three(fake_setting, fake_clock):
    """The paired A/A control as arm C of a cell's worker: C switches to arm A's values, settles and is blocked as
    B is; each arm's mean block position in a cycle is the same, and each cycle puts A next to B and A next to C
    (the runs of blocks each ratio is taken between)."""
    pattern = paired.PATTERN_WITH_CONTROL
    assert len({sum(i for i, arm in enumerate(pattern) if arm == want) for want in "ABC"}) == 1
    for other in "BC":  # with the third arm's blocks left out, A next to the other arm both ways
        kept = [arm for arm in pattern + pattern if arm in ("A", other)]
        assert {(x, y) for x, y in zip(kept, kept[1:]) if x != y} == {("A", other), (other, "A")}, other
    fake = fake_setting(clock=fake_clock)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}), carry_control=True)
    _drive(rec, 60, fake_clock)  # 2.5 ms iterations: one left out after a switch, two steady a block
    schedule = _schedule(rec)
    assert schedule.startswith("aAA" + "bBB" + "cCCCC" + "bBB" + "aAAAA" + "bBB"), schedule
    assert rec.values == {"A": {FakeSwitch.name: "off"}, "B": {FakeSwitch.name: "on"}, "C": {FakeSwitch.name: "off"}}
    assert fake.calls[:4] == ["off", "on", "off", "on"]  # A, B, then C: arm A's value switched to again
    fewest = min(schedule.count(arm) for arm in "ABC")  # the time target waits for every arm, the control's too
    assert not rec.timed_enough("run", fewest + 1) and rec.timed_enough("run", fewest)
    phases = _phases(rec)
    b, cell_record = rec.split(phases)
    c, control_record = rec.split_control(phases, cell_record)
    assert len(b["run"]["ns"]) == schedule.count("B") and len(c["run"]["ns"]) == schedule.count("C")
    assert cell_record["phases"] == control_record["phases"]  # both compare with the same arm A
    assert len(control_record["settling_ns"]["run"]) == schedule.count("a") + schedule.count("c")
    assert (control_record["pair"], control_record["letter"], cell_record.get("letter")) == (
        {"a": {}, "b": {}}, "C", None)
    assert cell_record["pattern"] == control_record["pattern"] == pattern
    assert PairedRecorder(None, Pair()).split_control(phases, cell_record) is None  # a worker that carries no control


def test_the_repetition_rotates_which_arm_starts_the_schedule(fake_setting, fake_clock):
    """The first block after a process's start runs slow more often than later ones: the arm it falls on changes
    from one process to the next, so it shows as spread between processes instead of a bias in each."""
    assert [paired.rotated("ABBA", "AB", r) for r in range(3)] == ["ABBA", "BAAB", "ABBA"]
    assert [paired.rotated("ABCCBA", "ABC", r) for r in range(3)] == ["ABCCBA", "BCAACB", "CABBAC"]
    fake_setting(clock=fake_clock)
    for rotation, first in ((0, "a"), (1, "b")):
        rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}), rotation=rotation)
        _drive(rec, 20, fake_clock)
        assert _schedule(rec)[0] == first and rec.split(_phases(rec))[1]["pattern"] == paired.rotated(
            paired.PATTERN, "AB", rotation)
    rec = PairedRecorder(None, Pair(a={}, b={FakeSwitch.name: "on"}), carry_control=True, rotation=2)
    _drive(rec, 20, fake_clock)
    assert _schedule(rec).startswith("cCC" + "aAA")


def test_a_carrying_worker_runs_half_as_many_iterations_again():
    assert paired.carrier_args({"iterations": 30, "seconds": 0.0, "ms": 1.0}) == {
        "iterations": 45, "seconds": 0.0, "ms": 1.0}
    assert paired.carrier_args({"iterations": 31, "seconds": 2.0}) == {"iterations": 47, "seconds": 3.0}
    assert paired.carrier_args({"size": 64}) == {"size": 64}  # a workload that takes neither


def test_the_carried_controls_ratio_is_taken_between_a_and_c_blocks_only():
    """A process whose arm C ran 1.2x arm A and arm B 1.5x, in the schedule of a worker that carries the control:
    each run's ratio compares its own arm with A's neighbouring blocks, never with the third arm's."""
    schedule = "aAAbBBcCCaAAcCCbBBBBcCCaAAcCCbBBaAAAA"
    a_ns = [1e6] * schedule.count("A")
    cell = _run(THREADS_CELL, 0, 1.0, pair_median=1.0)
    cell["phases"]["run"]["ns"] = [1.5e6] * schedule.count("B")
    cell["pair"]["phases"]["run"]["ns"] = a_ns
    cell["pair"]["schedule"] = {"run": schedule}
    control = _run(BASE, 0, 1.0, pair_median=1.0)
    control["arm"] = "P"
    control["phases"]["run"]["ns"] = [1.2e6] * schedule.count("C")
    control["pair"] = {**cell["pair"], "pair": {"a": {}, "b": {}}, "letter": "C"}
    doc = {"paired": {"baseline": BASE, "cells": [THREADS_CELL]}, "runs": [cell, control]}
    a, b = queries.paired_medians(doc, "run", THREADS_CELL)
    assert b[0] / a[0] == pytest.approx(1.5)
    a, c = queries.paired_medians(doc, "run", BASE, "P")
    assert c[0] / a[0] == pytest.approx(1.2)


# ---------------------------------------------------------------------------------------- the paired rule


def test_compare_paired_is_the_geometric_mean_of_the_per_process_ratios():
    rng = np.random.default_rng(3)
    a = 1e6 * np.array([1.0, 1.8, 0.6, 1.3, 0.9])  # machines 3x apart: the ratio inside each cancels it
    b = a * 2.0 * np.exp(rng.normal(0.0, 0.01, a.size))
    cmp = processes.compare_paired(b, a)
    assert cmp.ratio == pytest.approx(math.exp(np.mean(np.log(b / a))))
    assert cmp.ratio == pytest.approx(2.0, rel=0.02)
    assert cmp.ci95[0] < 2.0 < cmp.ci95[1] and cmp.ci95[1] / cmp.ci95[0] < 1.1
    assert cmp.outcome is Outcome.EFFECT and cmp.slower
    assert (cmp.k_a, cmp.k_b, cmp.df) == (5, 5, 4.0) and cmp.method.startswith("paired")
    assert cmp.median_a == pytest.approx(math.exp(np.mean(np.log(b))))
    assert cmp.median_b == pytest.approx(math.exp(np.mean(np.log(a))))
    # The same medians unpaired: the machines' spread swamps the 2x.
    assert processes.compare(b, a).ci95[1] / processes.compare(b, a).ci95[0] > 3 * cmp.ci95[1] / cmp.ci95[0]
    back = processes.compare_paired(a, b)
    assert back.ratio == pytest.approx(1 / cmp.ratio)
    assert back.ci95 == pytest.approx((1 / cmp.ci95[1], 1 / cmp.ci95[0]))
    assert back.faster and back.p_value == pytest.approx(cmp.p_value)


def test_compare_paired_exact_ratios_and_edge_cases():
    a = [3e6, 1e6, 7e6]
    exact = processes.compare_paired([2 * x for x in a], a)
    assert exact.ratio == pytest.approx(2.0) and exact.ci95 == pytest.approx((2.0, 2.0))
    assert exact.outcome is Outcome.EFFECT
    one = processes.compare_paired([2e6], [1e6])
    assert one.ci95 is None and one.outcome is Outcome.ONE_PROCESS and one.ratio == pytest.approx(2.0)
    with pytest.raises(ValueError, match="one a and one b per process, got 3 and 2"):
        processes.compare_paired(a, a[:2])
    same = processes.compare_paired(a, a)
    assert same.ratio == 1.0 and same.outcome is Outcome.NO_EFFECT and not same.beyond_band
    assert same.band == FLOOR and same.p_value == 1.0
    with pytest.raises(ValueError, match="finite and > 0"):
        processes.compare_paired([1e6, 0.0], [1e6, 1e6])


def test_the_paired_band_comes_from_the_paired_control():
    assert processes.band_from_paired_control(None) == FLOOR
    assert processes.band_from_paired_control(processes.compare_paired([2e6], [1e6])) == FLOOR  # no interval
    base = np.array([1e6, 2e6, 0.5e6, 1.5e6])
    tight = processes.compare_paired(base * np.exp([0.004, -0.003, 0.001, -0.002]), base)
    assert processes.band_from_paired_control(tight) == FLOOR
    logs = np.array([0.12, -0.09, 0.05, -0.1])
    noisy = processes.compare_paired(base * np.exp(logs), base)
    band = processes.band_from_paired_control(noisy)
    assert band == pytest.approx(math.expm1(np.std(logs, ddof=1))) and band > 0.09


def test_a_paired_spread_is_never_taken_narrower_than_the_paired_controls():
    base = np.array([1e6, 2e6])
    control = processes.compare_paired(base * np.exp([0.02, -0.02]), base)
    assert processes.paired_sd(control) == pytest.approx(0.02 * math.sqrt(2))
    # Two processes whose ratios agree by chance (vs_peers, ftz: 1.00045 and 1.00046).
    lucky = [1.00045, 1.00046]
    alone = processes.compare_paired(base * lucky, base)
    assert alone.ci95[1] / alone.ci95[0] < 1.001  # what the two ratios alone claim
    floored = processes.compare_paired(base * lucky, base, control=control)
    assert floored.ratio == alone.ratio and floored.df == 1.0
    assert floored.log_se == pytest.approx(processes.paired_sd(control) / math.sqrt(2))
    assert floored.ci95[0] < 0.8 and floored.ci95[1] > 1.25 and "the paired A/A control's" in floored.method
    # A comparison noisier than the control keeps its own spread.
    noisy = base * np.exp([0.3, 0.1])
    assert processes.compare_paired(noisy, base, control=control).ci95 == processes.compare_paired(noisy, base).ci95
    assert processes.paired_sd(None) is None and processes.paired_sd(processes.compare_paired([2e6], [1e6])) is None


# --------------------------------------------------------------------------------- calibration of the rule


def _paired_processes(rng, k, effect, machine_sd=0.25, within_sd=0.01):
    """(arm A, arm B) medians of ``k`` paired processes: each process's machine speed shared by both arms."""
    machine = np.exp(rng.normal(0.0, machine_sd, k))
    a = 10e6 * machine * np.exp(rng.normal(0.0, within_sd, k))
    b = 10e6 * machine * effect * np.exp(rng.normal(0.0, within_sd, k))
    return a, b


def _judged(rng, effect, k=3):
    """One simulated run: a paired cell and a paired A/A control of ``k`` processes each, judged as the
    document's comparisons are; and the unpaired comparison of the same medians."""
    ca, cb = _paired_processes(rng, k, 1.0)
    control = processes.compare_paired(cb, ca)
    a, b = _paired_processes(rng, k, effect)
    cmp = processes.compare_paired(b, a, control=control).judged(processes.band_from_paired_control(control),
                                                                unreliable=control.beyond_band)
    return cmp, processes.compare(b, a)


def _width(cmp):
    return math.log(cmp.ci95[1] / cmp.ci95[0])


def test_the_paired_rule_calls_few_effects_between_identical_cells():
    rng = np.random.default_rng(20240601)
    runs = [_judged(rng, 1.0) for _ in range(400)]
    called = sum(cmp.beyond_band for cmp, _ in runs)
    assert called <= 0.06 * len(runs), called
    paired_width = float(np.median([_width(cmp) for cmp, _ in runs]))
    unpaired_width = float(np.median([_width(u) for _, u in runs]))
    assert paired_width * 5 <= unpaired_width, (paired_width, unpaired_width)
    # Unpaired, the machine's speed between processes hides even the question: most runs stay unresolved.
    assert sum(u.outcome is Outcome.UNRESOLVED for _, u in runs) > 0.9 * len(runs)


def test_the_paired_rule_finds_a_planted_effect_through_machine_noise():
    rng = np.random.default_rng(7)
    runs = [_judged(rng, 1.3) for _ in range(400)]
    found = sum(cmp.slower for cmp, _ in runs)
    assert found > 0.9 * len(runs), found
    assert float(np.median([cmp.ratio for cmp, _ in runs])) == pytest.approx(1.3, rel=0.02)
    assert sum(u.slower for _, u in runs) < 0.5 * len(runs)  # what the unpaired rule would have found


# -------------------------------------------------------------------------------- a document's paired cells


ALLOC_CELL = {"with": {"alloc": "retain"}}
MACHINES = [1.0, 1.4, 0.7]
PAIRED_RATIOS = [1.5, 1.62, 1.44]
CONTROL_RATIOS = [1.0, 1.09, 0.93]


def _ns(median):
    """Five iterations whose median is exactly ``median``."""
    return [median * (1 + 0.01 * d) for d in (-2, -1, 0, 1, 2)]


def _run(cell, rep, median, arm=None, pair_median=None):
    run = {"cell": cell, "repetition": rep, "status": "ok",
           "phases": {"run": {"ticks": [], "ns": _ns(median), "counters": {}, "warmup": 0}},
           "readback": {}, "notes": {}, "exit_status": 0, "stderr_tail": None}
    if arm is not None:
        run["arm"] = arm
    if pair_median is not None:
        run["pair"] = {"pair": {"a": {}, "b": {}}, "phases": {"run": {"ns": _ns(pair_median), "warmup": 0}}}
    return run


def _paired_doc():
    """The baseline (control arms A and B), a cell paired with it, an unpaired cell, and the paired A/A control:
    three processes each, machines up to 2x apart."""
    matrix = {"with": [{}, {"threads": 1}, {"alloc": "retain"}]}
    doc = document.new_document("sleep", {}, matrix, 3, {"hostname": "test"}, control_cell=BASE)
    doc["paired"] = {"baseline": BASE, "cells": [THREADS_CELL]}
    for rep, machine in enumerate(MACHINES):
        doc["runs"] += [
            _run(BASE, rep, 1e6 * machine, arm="A"),
            _run(THREADS_CELL, rep, 1e6 * machine * PAIRED_RATIOS[rep], pair_median=1e6 * machine),
            _run(ALLOC_CELL, rep, 1e6 * [1.1, 0.9, 1.3][rep]),
            _run(BASE, rep, 1e6 * [1.2, 0.8, 1.1][rep], arm="B"),
            _run(BASE, rep, 1e6 * machine * CONTROL_RATIOS[rep], arm="P", pair_median=1e6 * machine),
        ]
    return doc


def test_a_paired_cell_is_compared_from_its_per_process_ratios():
    doc = _paired_doc()
    assert pair_for(BASE, THREADS_CELL) == Pair(a={}, b={"threads": 1})
    comparisons = queries.Comparisons(doc)
    cmp = comparisons.compare("run", THREADS_CELL, BASE)
    assert cmp.method.startswith("paired")
    assert cmp.ratio == pytest.approx(math.exp(np.mean(np.log(PAIRED_RATIOS))))
    assert (cmp.k_a, cmp.k_b) == (3, 3)  # the paired processes alone, not the baseline's six of both arms
    back = comparisons.compare("run", BASE, THREADS_CELL)
    assert back.method.startswith("paired") and back.ratio == pytest.approx(1 / cmp.ratio)
    ctl = comparisons.paired_control("run")
    assert ctl is not None and ctl.comparison.ratio == pytest.approx(math.exp(np.mean(np.log(CONTROL_RATIOS))))
    assert ctl.band == pytest.approx(math.expm1(np.std(np.log(CONTROL_RATIOS), ddof=1))) and ctl.band > FLOOR
    assert cmp.band == ctl.band == back.band
    assert comparisons.band("run") > 2 * ctl.band  # the processes' own A/A control is far noisier
    assert cmp.outcome is Outcome.EFFECT and not cmp.unreliable
    unpaired = comparisons.compare("run", ALLOC_CELL, BASE)
    assert not unpaired.method.startswith("paired") and unpaired.band == comparisons.band("run")
    assert unpaired.k_b == 6  # both control arms count as the baseline's processes; the paired control does not


def test_the_queries_tell_paired_runs_from_the_baselines():
    doc = _paired_doc()
    assert [r["arm"] for r in queries.ok_runs(doc, BASE)] == ["A"] * 3
    assert [r["arm"] for r in queries.ok_runs(doc, BASE, "P")] == ["P"] * 3
    assert [r["arm"] for r in queries.ok_runs(doc, BASE, "B")] == ["B"] * 3
    assert len(queries.process_medians(doc, "run", BASE)) == 3
    a, b = queries.paired_medians(doc, "run", THREADS_CELL)
    assert a == pytest.approx([1e6 * m for m in MACHINES])
    assert b == pytest.approx([1e6 * m * r for m, r in zip(MACHINES, PAIRED_RATIOS)])
    assert queries.paired_medians(doc, "run", ALLOC_CELL) == ([], [])  # no pair record: not a paired process
    assert queries.paired_medians(doc, "other", THREADS_CELL) == ([], [])
    assert queries.is_paired(doc, THREADS_CELL) and not queries.is_paired(doc, ALLOC_CELL)
    assert not queries.is_paired(doc, BASE)
    assert queries.paired_cell(doc, THREADS_CELL, BASE) == (THREADS_CELL, True)
    assert queries.paired_cell(doc, BASE, THREADS_CELL) == (THREADS_CELL, False)
    assert queries.paired_cell(doc, ALLOC_CELL, BASE) is None
    assert queries.paired_cell(doc, THREADS_CELL, ALLOC_CELL) is None
    unpaired = {k: v for k, v in doc.items() if k != "paired"}
    assert queries.paired_cell(unpaired, THREADS_CELL, BASE) is None
    assert queries.paired_control(unpaired, "run") is None


def test_a_process_ratio_is_taken_between_neighbouring_blocks_not_between_the_arms_medians():
    """The machine runs twice as slow over the first three runs of blocks (A, B B, A A) and at full speed after:
    arm A's median is then a slow one and arm B's a fast one, and their ratio (0.75) says B is faster. The median
    over neighbouring runs of blocks (1.5, 1.5, 0.75 where the speed changed, 1.5, 1.5) keeps the true 1.5."""
    schedule = "a" + "AA" + "b" + "BBBB" + "a" + "AAAA" + "b" + "BBBB" + "a" + "AAAA" + "b" + "BB"
    slow_a, slow_b = 6, 4  # the iterations of each arm the slow stretch covers
    a_ns = [2e6 if i < slow_a else 1e6 for i in range(schedule.count("A"))]
    b_ns = [3e6 if i < slow_b else 1.5e6 for i in range(schedule.count("B"))]
    run = _run(THREADS_CELL, 0, 1.0, pair_median=1.0)
    run["phases"]["run"]["ns"] = b_ns
    run["pair"]["phases"]["run"]["ns"] = a_ns
    assert float(np.median(b_ns)) / float(np.median(a_ns)) == pytest.approx(0.75)
    run["pair"]["schedule"] = {"run": schedule}
    doc = {"paired": {"baseline": BASE, "cells": [THREADS_CELL]}, "runs": [run]}
    a, b = queries.paired_medians(doc, "run", THREADS_CELL)
    assert a == [2e6] and b == pytest.approx([1.5 * 2e6])
    # Each arm's warm-up stays out of its runs of blocks: a first A iteration 10x slow moves nothing.
    run["pair"]["phases"]["run"]["warmup"] = 1
    a_ns[0] = 2e7
    a, b = queries.paired_medians(doc, "run", THREADS_CELL)
    assert b[0] / a[0] == pytest.approx(1.5)


def test_each_run_of_blocks_is_its_iterations_median():
    """Each run of one arm's kept iterations gives its median (of an even count: the mean of the middle two, as
    numpy's), the settling iterations after a switch (lower case) parting runs and each arm's warm-up left out."""
    a_ns, b_ns = [9.0, 1.0, 4.0, 2.0, 7.0, 5.0], [3.0, 8.0, 6.0, 10.0, 30.0]
    runs = queries._runs_of_blocks("aAAAbBBBaAAAbBB", a_ns, b_ns, 1, 0)
    assert runs == [("A", 2.5), ("B", 6.0), ("A", 5.0), ("B", 20.0)]  # A's first iteration (9.0): its warm-up
    kept = ([1.0, 4.0], [3.0, 8.0, 6.0], [2.0, 7.0, 5.0], [10.0, 30.0])
    assert [v for _, v in runs] == [float(np.median(x)) for x in kept]


def test_a_paired_process_whose_arm_b_got_no_iteration_is_left_out_not_fatal():
    """A worker too short to reach arm B (before blocks were capped by count: 30 iterations of 8 us) gives no
    paired ratio; the analysis and every cause's rule go on without it."""
    from benchctl._results import rules
    from benchctl._studies import causes

    doc = _paired_doc()
    short = next(r for r in doc["runs"] if r["cell"] == THREADS_CELL)
    short["phases"]["run"]["ns"] = []
    short["pair"]["schedule"] = {"run": "a" + "A" * 5}
    a, b = queries.paired_medians(doc, "run", THREADS_CELL)
    assert len(a) == len(b) == len(MACHINES) - 1
    rules.judge(doc, list(causes.CAUSES), facts=None, penalty=None)
    assert "analysis_error" not in analyse(doc)["metadata"]


def test_the_summary_and_report_mark_paired_cells():
    doc = analyse(_paired_doc())
    assert "analysis_error" not in doc["metadata"]
    marks = {(document.cell_id(e["cell"]), e.get("arm")): e["paired"] for e in doc["summary"]}
    assert marks == {(document.cell_id(BASE), None): False, (document.cell_id(THREADS_CELL), None): True,
                     (document.cell_id(ALLOC_CELL), None): False, (document.cell_id(BASE), "B"): False,
                     (document.cell_id(BASE), "P"): True}
    text = report.format_report(doc)
    assert "paired A/A control: the baseline timed by 3 paired process(es)" in text
    rows = {line.split("  ")[0]: line for line in text.splitlines() if line.startswith("with=")}
    assert rows["with=[threads=1] (paired)"].endswith("*")  # the effect, called against the paired band
    assert "with=[alloc=retain]" in rows and "with=none [paired A/A]" in rows and "with=none" in rows


def test_validate_accepts_paired_documents_and_refuses_malformed_ones():
    doc = _paired_doc()
    assert document.validate(copy.deepcopy(doc)) == doc
    assert document.validate({**doc, "paired": None})
    for bad in ([THREADS_CELL], {"baseline": BASE}, {"cells": [THREADS_CELL]}, {"baseline": [], "cells": []},
                "yes"):
        with pytest.raises(document.ResultsError, match="'paired' must be null or an object"):
            document.validate({**doc, "paired": bad})
    odd = copy.deepcopy(doc)
    odd["runs"][0]["arm"] = "Q"
    with pytest.raises(document.ResultsError, match="arm 'Q' is not A, B or P"):
        document.validate(odd)


# ------------------------------------------------------------------------------------ --repeat auto's rounds


def _policy(n_cells, pairs, control):
    plan = SimpleNamespace(cells=[{"i": i} for i in range(n_cells)], pairs={i: Pair(b={"ftz": "process"})
                                                                             for i in pairs})
    slots, control_slots = runner._slots(plan, {"control": {"cell": {"i": 0}} if control else None})
    return rounds.AutoRounds(slots, control_slots, None, paired=frozenset(plan.pairs),
                             paired_control=tuple(s for s in slots if s.arm == document.PAIRED_ARM)), slots


def _next(policy, open_cells):
    return set(policy.next_round(rounds.AUTO_START, lambda: set(open_cells)))


S = rounds.Slot


def test_auto_rounds_run_an_open_paired_cell_with_the_paired_control_only():
    policy, slots = _policy(3, pairs={1}, control=True)
    assert slots == [S(0, "A"), S(1), S(2), S(0, "B"), S(0, "P")]
    for r in range(rounds.AUTO_START):
        assert policy.next_round(r, lambda: pytest.fail("the first rounds judge nothing")) == slots
    assert _next(policy, {0, 1}) == {S(1), S(0, "P")}
    assert _next(policy, {1}) == {S(1), S(0, "P")}
    # An open unpaired cell brings the baseline's processes (both control arms) back.
    assert _next(policy, {0, 1, 2}) == {S(0, "A"), S(0, "B"), S(1), S(2), S(0, "P")}
    assert _next(policy, {0, 2}) == {S(0, "A"), S(0, "B"), S(2)}
    assert _next(policy, {0}) == {S(0, "A"), S(0, "B")}
    assert _next(policy, set()) == set() and policy.stopped == "every comparison resolved"


def test_auto_rounds_without_a_control_run_the_baseline_only_for_unpaired_cells():
    policy, slots = _policy(3, pairs={1, 2}, control=False)
    assert slots == [S(0), S(1), S(2), S(0, "P")]
    assert _next(policy, {0, 2}) == {S(2), S(0, "P")}
    assert _next(policy, {0, 1, 2}) == {S(1), S(2), S(0, "P")}
    policy, _ = _policy(3, pairs={1}, control=False)
    assert _next(policy, {0, 1, 2}) == {S(0), S(1), S(2), S(0, "P")}
    assert _next(policy, {0, 2}) == {S(0), S(2)}


def test_the_paired_control_rides_in_the_first_paired_cells_worker_of_a_round():
    assert rounds.carry_control([S(0), S(2), S(1), S(0, "P")], {1, 2}) == [S(0), S(2, carries_control=True), S(1)]
    assert rounds.carry_control([S(0, "A"), S(1), S(0, "B"), S(0, "P")], {1}) == [
        S(0, "A"), S(1, carries_control=True), S(0, "B")]
    # No paired cell this round (a resumed file), or no control slot: the round as it was.
    assert rounds.carry_control([S(0), S(2), S(0, "P")], {1}) == [S(0), S(2), S(0, "P")]
    assert rounds.carry_control([S(0), S(1)], {1}) == [S(0), S(1)]


def test_every_cell_paired_runs_no_process_of_the_baselines_own():
    """The paired workers time the baseline as their arm A: no round runs a process of its own."""
    policy, slots = _policy(3, pairs={1, 2}, control=False)
    assert policy.every_cell_paired and slots == [S(0), S(1), S(2), S(0, "P")]
    assert all(policy.next_round(r, lambda: set()) == [S(1), S(2), S(0, "P")] for r in range(rounds.AUTO_START))
    # 2 cells x 3 rounds, the control carried: what the sizing of explain and vs_peers plans too.
    assert policy.planned() == 2 * rounds.AUTO_START == rounds.planned_processes(3, rounds.AUTO, False, 2)
    # A cell that needs fresh processes brings the baseline's back (and the control's second arm), every round.
    policy, slots = _policy(3, pairs={1}, control=True)
    assert not policy.every_cell_paired
    assert all(policy.next_round(r, lambda: set()) == slots for r in range(rounds.AUTO_START))
    assert policy.planned() == 4 * rounds.AUTO_START == rounds.planned_processes(3, rounds.AUTO, True, 1)


def test_no_pairs_no_paired_control_slot():
    _, slots = _policy(2, pairs=(), control=True)
    assert slots == [S(0, "A"), S(1), S(0, "B")]


# ----------------------------------------------------------------------------- the runner (fake workers)


@pytest.fixture
def fake_workers(monkeypatch):
    from test_control import FakeWorkers

    def start():
        return FakeWorkers(monkeypatch, lambda c: 1.5 if c.get("with") else 1.0)
    return start


def _run_matrix(**kwargs):
    return runner.run_matrix("sleep", {"iterations": 1}, PAIRED_MATRIX, progress=False, **kwargs)


def _kinds(doc):
    """(cell's with, arm, repetition, paired?) of every run."""
    return sorted((document.cell_id(r["cell"]), r.get("arm") or "", r["repetition"], "pair" in r)
                  for r in doc["runs"])


def test_run_matrix_records_its_pairs_and_a_resume_keeps_them(fake_workers, tmp_path):
    workers = fake_workers()
    path = str(tmp_path / "r.json")
    doc = _run_matrix(repeat=2, json_path=path, paired=True)
    assert doc["paired"] == {"baseline": BASE, "cells": [THREADS_CELL]}
    # The baseline, the paired cell carrying the paired control: every cell is paired, so no fresh-process control.
    assert len(workers.calls) == 4 and not doc["control"]
    assert not queries.ok_runs(doc, BASE, "B")
    paired_runs = queries.ok_runs(doc, THREADS_CELL)
    assert len(paired_runs) == 2 and all(r["pair"]["pair"] == {"a": {}, "b": {"threads": 1}} for r in paired_runs)
    assert [r["pair"]["pair"] for r in queries.ok_runs(doc, BASE, "P")] == [{"a": {}, "b": {}}] * 2
    assert not [r for r in queries.ok_runs(doc, BASE) + queries.ok_runs(doc, BASE, "B") if "pair" in r]
    cmp = queries.Comparisons(doc).compare("sleep", THREADS_CELL, BASE)
    assert cmp.method.startswith("paired") and cmp.ratio == pytest.approx(1.5)
    resumed = _run_matrix(repeat=3, json_path=path, resume=True, paired=True)
    assert resumed["paired"] == doc["paired"]
    assert len(workers.calls) == 6 and not resumed["control"]
    assert all("pair" in r for r in queries.ok_runs(resumed, THREADS_CELL)) and len(
        queries.ok_runs(resumed, THREADS_CELL)) == 3
    assert len(queries.ok_runs(resumed, BASE, "P")) == 3


def test_the_fresh_process_control_stays_where_a_cell_needs_fresh_processes(fake_workers, tmp_path):
    workers = fake_workers()
    omp_cell = {"with": {"omp_wait": "passive"}}  # the OpenMP runtime reads its wait policy at start
    doc = runner.run_matrix("sleep", {"iterations": 1}, {"with": [{}, {"threads": 1}, {"omp_wait": "passive"}]},
                            progress=False, repeat=1, json_path=str(tmp_path / "r.json"), paired=True)
    assert doc["paired"] == {"baseline": BASE, "cells": [THREADS_CELL]} and doc["control"]
    assert len(workers.calls) == 4  # the baseline's two arms, the two cells (the paired one carries the control)
    assert len(queries.ok_runs(doc, BASE, "B")) == 1 and len(queries.ok_runs(doc, BASE, "P")) == 1
    assert not [r for r in queries.ok_runs(doc, omp_cell) if "pair" in r]


def test_an_auto_run_of_paired_cells_starts_the_paired_cells_workers_only(fake_workers, tmp_path):
    """Every cell paired, --repeat auto: each round the paired cell's worker alone (carrying the control), where an
    unpaired run started nine (A, B, the control's arm B, 3 rounds); the baseline's row is arm A of those
    processes, and the report says it has none of its own."""
    workers = fake_workers()
    doc = _run_matrix(repeat="auto", json_path=str(tmp_path / "r.json"), paired=True)
    assert [(r["round"], r["workers"]) for r in doc["rounds"]][:3] == [(0, 1), (1, 1), (2, 1)]
    assert BASE not in workers.calls and not queries.ok_runs(doc, BASE)
    controls = queries.ok_runs(doc, BASE, "P")
    assert len(controls) == len(queries.ok_runs(doc, THREADS_CELL)) >= rounds.AUTO_START
    assert all(r["carried_by"] == THREADS_CELL for r in controls)
    cmp = queries.Comparisons(doc).compare("sleep", THREADS_CELL, BASE)
    assert cmp.method.startswith("paired") and cmp.ratio == pytest.approx(1.5)
    entry = queries.summary_entry(doc, "sleep", BASE)
    paired_runs = len(queries.ok_runs(doc, THREADS_CELL))
    assert (entry["processes"], entry["from_paired_processes"]) == (paired_runs, paired_runs)
    assert entry["ci_method"] == "t interval over processes"
    text = report.format_report(doc)
    assert f"arm A of {paired_runs} paired process(es) (the baseline's settings timed there), none of its own" in text
    assert "process(es) of its own and" not in text
    assert queries.summary_entry(doc, "sleep", THREADS_CELL)["from_paired_processes"] == 0


@pytest.mark.slow
def test_a_real_paired_worker_started_with_one_thread_runs_arm_b_on_two(tmp_path):
    # The worker starts in the baseline's environment (OMP_NUM_THREADS=1, MKL_NUM_THREADS=1); arm B's switch
    # resizes every pool to 2, read back after the switch and checked after each of its iterations.
    doc = runner.run_matrix("sleep", {"iterations": 24, "ms": 1.0}, {"threads": [1, 2]}, repeat=1,
                            json_path=str(tmp_path / "r.json"), progress=False, paired=True)
    assert [r for r in doc["runs"] if r["status"] != "ok"] == []
    (run,) = queries.ok_runs(doc, {"threads": 2})
    assert run["pair"]["values"]["A"] == {"threads": 1} and run["pair"]["values"]["B"] == {"threads": 2}
    assert run["pair"]["not_held"] == [] and run["pair"]["during_a"]["threads"]["held"] is True
    applied = run["readback"]["threads"]["applied"]
    assert applied["torch"] == applied["omp_team"] == 2 and {p["num_threads"] for p in applied["pools"]} == {2}
    during, schedule = run["readback"]["threads"]["during"], run["pair"]["schedule"]["sleep"]
    assert (during["held"], during["seen"]) == (True, 2)
    assert _runs(schedule, "B") <= during["samples"] <= schedule.upper().count("B")
    assert run["pair"]["applied_a"]["threads"]["omp_team"] == 1


def test_a_file_started_unpaired_is_resumed_unpaired(fake_workers, tmp_path):
    fake_workers()
    path = str(tmp_path / "r.json")
    doc = _run_matrix(repeat=1, json_path=path, paired=False)
    assert "paired" not in doc or not doc["paired"]
    resumed = _run_matrix(repeat=2, json_path=path, resume=True, paired=True)
    assert not resumed.get("paired")
    assert not [r for r in resumed["runs"] if "pair" in r or r.get("arm") == "P"]
    assert not queries.Comparisons(resumed).compare("sleep", THREADS_CELL, BASE).method.startswith("paired")


def test_a_paired_file_resumed_without_paired_keeps_its_pairs(fake_workers, tmp_path):
    fake_workers()
    path = str(tmp_path / "r.json")
    _run_matrix(repeat=1, json_path=path, paired=True)
    resumed = _run_matrix(repeat=2, json_path=path, resume=True, paired=False)
    assert resumed["paired"] == {"baseline": BASE, "cells": [THREADS_CELL]}
    kinds = {"pair" in r for r in queries.ok_runs(resumed, THREADS_CELL)}
    assert kinds == {True}, "one cell's processes are never of both kinds"


# ------------------------------------------------------------------------------------- a real paired run


@pytest.mark.slow
def test_a_real_paired_run_and_its_resume(tmp_path):
    path = str(tmp_path / "r.json")
    doc = runner.run_matrix("sleep", {"iterations": 80, "ms": 1.0}, PAIRED_MATRIX, repeat=2, json_path=path,
                            progress=False, paired=True)
    assert [r for r in doc["runs"] if r["status"] != "ok"] == []
    assert doc["paired"] == {"baseline": BASE, "cells": [THREADS_CELL]}
    for run in queries.ok_runs(doc, THREADS_CELL) + queries.ok_runs(doc, BASE, "P"):
        schedule, letter = run["pair"]["schedule"]["sleep"], run["pair"].get("letter", "B")
        # The control carried as arm C; the schedule starts with the arm the repetition rotates to.
        assert set(schedule) == set("aAbBcC") and schedule[0] == "abc"[run["repetition"] % 3], schedule
        assert len(run["phases"]["sleep"]["ns"]) == schedule.count(letter)
        assert len(run["pair"]["phases"]["sleep"]["ns"]) == schedule.count("A")
        assert "warmup" in run["pair"]["phases"]["sleep"] and "warmup" in run["phases"]["sleep"]
    threads_runs = queries.ok_runs(doc, THREADS_CELL)
    # Each round's paired cell worker carried that round's paired A/A control: the same process, one duration.
    for control in queries.ok_runs(doc, BASE, "P"):
        carrier = next(r for r in threads_runs if r["repetition"] == control["repetition"])
        assert control["carried_by"] == THREADS_CELL and control["worker"]["pid"] == carrier["worker"]["pid"]
        assert control["pair"]["letter"] == "C" and "duration_s" not in control
        assert control["readback"]["threads"]["requested"] == carrier["pair"]["values"]["A"]["threads"]  # arm A's
    assert len(threads_runs) == 2 and all(r["pair"]["values"]["B"] == {"threads": 1} for r in threads_runs)
    assert all(r["readback"]["threads"]["requested"] == 1 for r in threads_runs)
    assert len(queries.ok_runs(doc, BASE, "P")) == 2
    assert not [r for r in queries.ok_runs(doc, BASE) if "pair" in r]
    entries = [e for e in doc["summary"] if document.cell_id(e["cell"]) == document.cell_id(THREADS_CELL)]
    assert entries and all(e["paired"] is True for e in entries)
    text = report.format_report(doc)
    assert "(paired)" in text and "paired A/A control" in text
    assert not doc["control"] and "no fresh-process A/A control: every cell is marked (paired)" in text
    resumed = runner.run_matrix("sleep", {"iterations": 80, "ms": 1.0}, PAIRED_MATRIX, repeat=3, json_path=path,
                                resume=True, progress=False, paired=True)
    assert resumed["paired"] == doc["paired"]
    later = [r for r in resumed["runs"] if r["repetition"] == 2]
    # Every cell is paired: the baseline, the paired cell and the paired control, no fresh-process control arms.
    assert {(document.cell_id(r["cell"]), r.get("arm"), "pair" in r) for r in later} == {
        (document.cell_id(BASE), None, False), (document.cell_id(THREADS_CELL), None, True),
        (document.cell_id(BASE), "P", True)}
    assert document.load(path)["paired"] == doc["paired"]


# ------------------------------------------------------------------ the first rounds of an all-paired run


def test_the_first_rounds_are_five_only_where_every_cell_is_paired_and_the_budget_sizes_the_workers():
    assert rounds.first_rounds(every_cell_paired=True, sized_to_budget=True) == rounds.PAIRED_AUTO_START == 5
    assert rounds.first_rounds(every_cell_paired=True, sized_to_budget=False) == rounds.AUTO_START
    assert rounds.first_rounds(every_cell_paired=False, sized_to_budget=True) == rounds.AUTO_START
    for bad, why in ((2, ">= 3"), (rounds.AUTO_MAX_PROCESSES + 1, "at most 20"), (True, "integer"), (4.0, "integer")):
        with pytest.raises(ArgumentError, match=why):
            rounds.check_first_rounds(bad)


def test_auto_rounds_run_the_first_rounds_they_are_given_before_judging():
    policy, slots = _policy(3, pairs={1, 2}, control=False)
    five = rounds.AutoRounds(slots, [], None, paired=frozenset({1, 2}), paired_control=(S(0, "P"),), first=5)
    for r in range(5):
        assert five.next_round(r, lambda: pytest.fail("the first rounds judge nothing")) == [S(1), S(2), S(0, "P")]
        assert not five.extra(r)
    assert five.extra(5) and five.next_round(5, lambda: set()) == [] and five.stopped == "every comparison resolved"
    # 2 cells x 5 rounds, the control carried in one of each round's workers (1.5x its timed work).
    assert five.planned() == 10 == rounds.planned_processes(3, rounds.AUTO, False, 2, first=5)
    assert rounds.planned_timed_shares(3, rounds.AUTO, False, 2, first=5) == pytest.approx(10 + 0.5 * 5)
    assert policy.planned() == 2 * rounds.AUTO_START  # the default is still three


def test_an_auto_run_keeps_its_first_rounds_in_the_file_and_a_resume_keeps_them(fake_workers, tmp_path):
    workers = fake_workers()
    path = str(tmp_path / "r.json")
    doc = _run_matrix(repeat="auto", json_path=path, paired=True, first_rounds=5)
    assert [r["workers"] for r in doc["rounds"]][:5] == [1] * 5 and len(workers.calls) >= 5
    assert doc["metadata"]["runner"]["first_rounds"] == 5
    with pytest.raises(document.ResultsError, match="started with 5"):
        _run_matrix(repeat="auto", json_path=path, resume=True, paired=True, first_rounds=3)
    resumed = _run_matrix(repeat="auto", json_path=path, resume=True, paired=True)
    assert resumed["metadata"]["runner"]["first_rounds"] == 5
    # Without asking, three; a file from before the choice resumes with the three it began with.
    fresh = _run_matrix(repeat="auto", json_path=str(tmp_path / "three.json"), paired=True)
    assert fresh["metadata"]["runner"]["first_rounds"] == rounds.AUTO_START
    old = document.load(path)
    del old["metadata"]["runner"]["first_rounds"]
    document.save(old, path)
    assert _run_matrix(repeat="auto", json_path=path, resume=True,
                       paired=True)["metadata"]["runner"]["first_rounds"] == rounds.AUTO_START
