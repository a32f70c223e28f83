"""The worker's recorder: counter deltas around each timed iteration, None kept as None."""

import pytest

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


def test_without_a_group_only_ticks():
    rec = CountedRecorder(None)
    with rec.iteration("eval"):
        pass
    assert len(rec.ticks["eval"]) == 1 and rec.counters == {}
