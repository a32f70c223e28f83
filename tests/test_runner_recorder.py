"""The worker's recorder: counter deltas over windows of timed iterations, None kept as None."""

import time

import pytest

from benchctl import clock
from benchctl._run.paired import Pair, PairedRecorder
from benchctl._run.recorder import CountedRecorder, Recorder


class ScriptedGroup:
    """Returns preset cumulative readings in order, as a counter group's read() would."""

    available: dict = {}

    def __init__(self, readings):
        self.readings = iter(readings)

    def read(self):
        return next(self.readings)


def test_deltas_per_iteration_and_phase(monkeypatch):
    from benchctl._run import recorder
    monkeypatch.setattr(recorder, "COUNTER_WINDOW_NS", 0)  # every iteration a window of its own, its count exact
    group = ScriptedGroup([
        {"minor_faults": 10, "cycles": None}, {"minor_faults": 15, "cycles": None},
        {"minor_faults": 15, "cycles": None}, {"minor_faults": 40, "cycles": None},
        {"minor_faults": 40, "cycles": None}, {"minor_faults": 41, "cycles": None},
    ])
    rec = CountedRecorder(group)
    assert isinstance(rec, Recorder)
    for phase in ("train", "eval", "eval"):
        with rec.iteration(phase):
            pass
    assert rec.counters == {"train": {"minor_faults": [5], "cycles": [None]},
                            "eval": {"minor_faults": [25, 1], "cycles": [None, None]}}
    assert [len(rec.ticks[p]) for p in ("train", "eval")] == [1, 2]


def test_raising_iteration_is_not_recorded():
    rec = CountedRecorder(ScriptedGroup([{"minor_faults": 0}, {"minor_faults": 1}]))
    with pytest.raises(KeyError):
        with rec.iteration("eval"):
            raise KeyError("x")
    assert rec.ticks == {} and rec.counters == {}


def test_the_waits_come_before_an_iteration_and_after_it_only_where_it_did_not_raise():
    calls = []
    rec = Recorder()
    rec._waits = [lambda: calls.append("wait")]  # as sync=cuda's, which waits for the GPU
    with pytest.raises(KeyError):
        with rec.iteration("eval"):
            raise KeyError("x")
    assert calls == ["wait"] and rec.ticks == {}
    with rec.iteration("eval"):
        calls.append("body")
    assert calls == ["wait", "wait", "body", "wait"] and len(rec.ticks["eval"]) == 1


def test_without_a_group_only_ticks():
    rec = CountedRecorder(None)
    with rec.iteration("eval"):
        pass
    assert len(rec.ticks["eval"]) == 1 and rec.counters == {}




class SlowGroup:
    """A counter group whose every read takes 20 ms."""

    available = {"minor_faults": True, "runqueue_wait_ns": True}

    def read(self):
        time.sleep(0.02)
        return {"minor_faults": 0, "runqueue_wait_ns": 0}


class SlowSwitch(PairedRecorder):
    """A paired recorder whose every switch of arms takes 20 ms."""

    def switch_to(self, arm):
        time.sleep(0.02)
        super().switch_to(arm)


def test_a_recorders_own_work_stays_outside_an_iterations_interval():
    """Counter reads and a paired worker's switches run before the clock's first read or after its last: each made
    to take 20 ms, every empty iteration still measures well under one of them."""
    for rec in (CountedRecorder(SlowGroup()), SlowSwitch(SlowGroup(), Pair(a={}, b={}))):
        for _ in range(6):
            with rec.iteration("p"):
                pass
        rec.finish()
        assert len(rec.ticks["p"]) == 6 and max(clock.to_ns(t) for t in rec.ticks["p"]) < 5e6, rec.ticks["p"]
        assert rec.counters == {"p": {"minor_faults": [0] * 6, "runqueue_wait_ns": [0.0] * 6}}
    assert rec.labels["p"][:2] == ["a", "A"]  # the first iteration settles after the switch to arm A


class WaitGroup:
    """A counter group with a perf event and the procfs wait; the wait grows only where an iteration's body adds to
    ``total``, the context switches never."""

    available = {"context_switches": True, "runqueue_wait_ns": True}

    def __init__(self):
        self.total, self.reads = 0, 0
        self.rec, self.at = None, []

    def read(self):
        self.reads += 1
        if self.rec is not None:  # where the read falls: after how many recorded iterations
            self.at.append(len(self.rec.ticks.get("p", [])))
        return {"context_switches": 0, "runqueue_wait_ns": self.total}


def test_the_counters_are_read_over_windows_that_double_and_each_is_spread_over_its_iterations(monkeypatch):
    from benchctl._run import recorder
    monkeypatch.setattr(recorder, "COUNTER_WINDOW_NS", 10**12)  # no window closes by time here
    group = WaitGroup()
    rec = CountedRecorder(group)
    for phase, waits in (("p", (70, 0, 300, 0, 0, 0, 40)), ("q", (600, 400)), ("p", (300,))):
        for wait in waits:
            with rec.iteration(phase):
                group.total += wait
    rec.finish()
    # A phase's windows hold 1, 2, 4... iterations, none across a change of phase, each count shared evenly: p's
    # first iteration alone (where a warm-up's cost is), the next two sharing 300, the four after sharing 40.
    assert rec.counters["p"]["runqueue_wait_ns"] == [70, 150.0, 150.0, 10.0, 10.0, 10.0, 10.0, 300]
    assert rec.counters["q"]["runqueue_wait_ns"] == [600, 400]
    assert rec.counters["p"]["context_switches"] == [0] * 8
    assert group.reads == 2 * 6  # two a window (p 3, q 2, p 1), not two an iteration


def test_an_iteration_as_long_as_a_window_has_its_own(monkeypatch):
    from benchctl._run import recorder
    monkeypatch.setattr(recorder, "COUNTER_WINDOW_NS", 0)
    group = WaitGroup()
    rec = CountedRecorder(group)
    for wait in (250, 0, 40):
        with rec.iteration("p"):
            group.total += wait
        group.total += 10_000  # between iterations: in no window
    rec.finish()
    assert rec.counters["p"]["runqueue_wait_ns"] == [250, 0, 40] and group.reads == 6


class CountedSwitch(PairedRecorder):
    """A paired recorder whose switches wait 10 us for a CPU (``group.total``)."""

    def switch_to(self, arm):
        self._group.total += 10_000
        super().switch_to(arm)


def test_a_paired_workers_window_holds_one_run_of_an_arm_and_never_a_switch(monkeypatch):
    from benchctl._run import recorder
    monkeypatch.setattr(recorder, "COUNTER_WINDOW_NS", 10**12)
    group = WaitGroup()
    rec = group.rec = CountedSwitch(group, Pair(a={}, b={}))
    for _ in range(40):
        arm = rec.pattern[rec._block % len(rec.pattern)]  # the arm this iteration runs in
        with rec.iteration("p"):
            group.total += 700 if arm == "B" else 0
    rec.finish()
    waits, letters = rec.counters["p"]["runqueue_wait_ns"], rec.labels["p"]
    assert {"A", "B"} <= set(letters)
    assert {w for w, letter in zip(waits, letters) if letter in "Aa"} == {0.0}
    assert {w for w, letter in zip(waits, letters) if letter in "Bb"} == {700.0}
    # Once the phase's windows have doubled past a run of an arm, one window a run, its iterations left out after
    # the switch and its steady ones together: no read between them, so that none leaves a gap before the block's
    # first steady iteration.
    changes = {i for i in range(1, len(letters)) if letters[i - 1].upper() != letters[i].upper()}
    assert set(group.at[10:]) <= changes | {len(letters)}, (letters, group.at)  # from the sixth window on
    assert len(group.at) <= 2 * (len(changes) + 1 + 4)


def test_work_after_the_iterations_is_in_no_window(monkeypatch):
    from benchctl._run import recorder
    monkeypatch.setattr(recorder, "COUNTER_WINDOW_NS", 10**12)
    group = WaitGroup()
    rec = CountedRecorder(group)
    for _ in range(5):  # windows of 1, 2 and 4 iterations, the third still open after the last
        with rec.iteration("p"):
            pass
    rec.untimed()
    group.total += 5000  # a probe's profiled call after the timed iterations
    rec.finish()
    assert rec.counters["p"]["runqueue_wait_ns"] == [0, 0.0, 0.0, 0.0, 0.0]  # without untimed(): 2500.0 the last two


def test_a_user_workloads_timed_loop_says_where_its_iterations_end():
    from benchctl._workloads import user

    class Untimed(Recorder):
        def __init__(self):
            super().__init__()
            self.said = []

        def untimed(self):
            self.said.append(len(self.ticks.get("run", [])))

    for args in ({"iterations": 3, "seconds": 0}, {"iterations": 10**6, "seconds": 1e-9}):
        rec = Untimed()
        user._timed(rec, "run", lambda: None, args)
        assert rec.said == [len(rec.ticks["run"])], args  # once, after the last iteration
