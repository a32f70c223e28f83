"""Trace and profile functions: run each timed call with those of its thread taken off, and read them.

A trace function (``sys.settrace``: a line tracer, a coverage tool's, a debugger's) is called by the interpreter
on every Python call, line and return of the thread it is on; a profile function (``sys.setprofile``, cProfile's
``enable()``) on every Python and C call and return. Set at import or in a setup and left on (coverage started by
the code, a debugging tracer, a profiler enabled and never disabled), it runs through every later call, and every
Python frame of it pays (torch.nn's module calls among them). ``threading.settrace`` and ``threading.setprofile``
put one on every thread started after them.

:func:`set_aside` takes the calling thread's trace and profile functions off for the block, and threading's for the
threads it starts, and puts them back after it (also on an exception). The native core takes them
(:func:`benchctl._native.take_trace_functions`): Python could put back only a Python function, where
``sys.settrace(obj)`` calls a C tracer's object through the interpreter's trampoline instead of its C function
(coverage's) or fails on it (cProfile's). Where the block set one of its own and left it, the block's stays, as it
would have replaced the one taken; a function the block turned off (it was on as the block began) comes back
after it. :func:`set_aside_calls` puts it around every later timed call of a user workload
(:mod:`benchctl._timed_call`; a worker's ``tracing=off`` cell) and :func:`restore_calls` takes it out.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator

from ... import _native, _timed_call

__all__ = ["WHAT", "on", "set_aside", "set_aside_calls", "restore_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "tracing=off"


def on() -> tuple[Any, Any, Any, Any]:
    """The trace and profile functions on now (None: none): the calling thread's (``sys.gettrace()``,
    ``sys.getprofile()``) and those threading puts on the threads started after now."""
    return (sys.gettrace(), sys.getprofile(), threading._trace_hook,  # type: ignore[attr-defined]
            threading._profile_hook)  # type: ignore[attr-defined]


@contextlib.contextmanager
def set_aside() -> Iterator[Any]:
    """No trace or profile function on as the block began runs inside it (on the calling thread, or on a thread it
    starts); they are back after it, except where the block set one of its own. Yields what the native core took."""
    taken = _native.take_trace_functions()
    # threading's hooks for new threads are Python attributes: what threading.settrace/setprofile set
    hooks = threading._trace_hook, threading._profile_hook  # type: ignore[attr-defined]
    threading._trace_hook = threading._profile_hook = None  # type: ignore[attr-defined]
    try:
        yield taken
    finally:
        # A slot the block filled keeps the block's function, as it would have replaced the one taken.
        taken.put_back(trace=sys.gettrace() is None, profile=sys.getprofile() is None)
        if threading._trace_hook is None:  # type: ignore[attr-defined]
            threading._trace_hook = hooks[0]  # type: ignore[attr-defined]
        if threading._profile_hook is None:  # type: ignore[attr-defined]
            threading._profile_hook = hooks[1]  # type: ignore[attr-defined]


def _still_aside(taken: Any) -> bool:
    # Two reads, inside the timed call's time: neither function taken is on the calling thread again.
    trace, profile = sys.gettrace(), sys.getprofile()
    return (trace is None or trace is not taken.trace) and (profile is None or profile is not taken.profile)


_aside_calls = _timed_call.HeldContext(WHAT, set_aside, _still_aside)


def set_aside_calls() -> dict[str, Any]:
    """Run every later timed call with the trace and profile functions on before it taken off (counts start at zero;
    already so: kept); the state right after."""
    _aside_calls.start()
    return state()


def restore_calls() -> dict[str, Any]:
    """The timed calls run with the trace and profile functions as the code left them again; the state right after."""
    _aside_calls.stop()
    return state()


def enabled() -> bool:
    return _aside_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran with them taken off and none of them was back on at its end."""
    return _aside_calls.all_held()


def state() -> dict[str, Any]:
    """``{"set_aside", "on", "calls", "held"}``: whether timed calls run with the trace and profile functions taken
    off, whether any is on now (between calls: as the code left it), how many calls ran, how many held to their
    end."""
    return {"set_aside": enabled(), "on": any(function is not None for function in on()), **_aside_calls.counts()}
