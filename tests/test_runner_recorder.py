"""The worker's recorder: counter deltas around each timed iteration, None kept as None."""

import time

import pytest

from benchctl import clock
from benchctl._run.paired import Pair, PairedRecorder
from benchctl._run.recorder import CountedRecorder, Recorder


class ScriptedGroup:
    """Returns preset cumulative readings in order, as a counter group's read() would."""

    def __init__(self, readings):
        self.readings = iter(readings)

    def read(self):
        return next(self.readings)


def test_deltas_per_iteration_and_phase():
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

    def read(self):
        time.sleep(0.02)
        return {"minor_faults": 0}


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
        assert len(rec.ticks["p"]) == 6 and max(clock.to_ns(t) for t in rec.ticks["p"]) < 5e6, rec.ticks["p"]
        assert rec.counters == {"p": {"minor_faults": [0] * 6}}
    assert rec.labels["p"][:2] == ["a", "A"]  # the first iteration settles after the switch to arm A
