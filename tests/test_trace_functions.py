"""The native core's trace functions (csrc/trace_functions.cpp): a thread's trace and profile functions taken off
and put back exactly, C ones too, only on their own thread, each once. Run under the sanitizers too
(.ci/sanitizers)."""

import cProfile
import pstats
import sys
import threading

import pytest

from benchctl import _native
from tracers import counting_tracer, marker


@pytest.fixture(autouse=True)
def _untraced():
    assert (sys.gettrace(), sys.getprofile()) == (None, None), "a test before this one left a tracer on"
    yield
    sys.settrace(None)
    sys.setprofile(None)


def _profiled_marker_calls(profiler):
    stats = pstats.Stats(profiler)
    return sum(calls for (path, _, name), (_, calls, *_) in stats.stats.items() if name == "marker")


def test_the_native_core_takes_a_c_profiler_off_and_puts_it_back_as_it_was():
    # cProfile's profiler is a C profile function: sys.setprofile could not put it back (the object is not callable).
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        marker()
        taken = _native.take_trace_functions()
        assert sys.getprofile() is None and taken.profile is profiler and taken.trace is None
        marker()  # not profiled
        assert taken.put_back(trace=True, profile=True)
        assert sys.getprofile() is profiler and taken.profile is None
        marker()
        assert taken.put_back(trace=True, profile=True) and sys.getprofile() is profiler, "a second put back: nothing"
    finally:
        profiler.disable()
    assert _profiled_marker_calls(profiler) == 2


def test_the_native_core_puts_back_only_the_slots_asked_for_and_only_on_their_thread():
    tracer, seen = counting_tracer()
    sys.settrace(tracer)
    taken = _native.take_trace_functions()
    sys.settrace(None)
    assert taken.trace is tracer and sys.gettrace() is None
    other = []
    thread = threading.Thread(target=lambda: other.append(taken.put_back(trace=True, profile=True)))
    thread.start()
    thread.join()
    assert other == [False] and sys.gettrace() is None and taken.trace is tracer
    assert taken.put_back(trace=False, profile=True) and sys.gettrace() is None and taken.trace is tracer
    assert taken.put_back(trace=True, profile=False) and sys.gettrace() is tracer
    marker()
    sys.settrace(None)
    assert len(seen) == 1
    sys.settrace(tracer)
    _native.take_trace_functions()  # dropped without a put back: the tracer stays off
    assert sys.gettrace() is None
