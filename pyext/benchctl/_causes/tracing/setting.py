"""The ``tracing`` setting: the trace and profile functions as the code left them on, or taken off for each timed
call."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as tracing

__all__ = ["Tracing", "TRACING", "SETTINGS"]


class Tracing(AroundCalls):
    """``tracing``: the trace and profile functions as the workload's code left them on (``code``), or taken off for
    each timed call of a user workload (``off``: :func:`benchctl._causes.tracing.control.set_aside`)."""

    name = "tracing"
    help = ("code | off: trace and profile functions (sys.settrace, sys.setprofile: a coverage tool's, a debugger's, "
            "a profiler enabled and left on) as the workload's code left them on, or those on before each timed call "
            "of a callable or setup()/run(state) workload taken off for it (one the call sets itself stays)")
    order = 50
    needs_torch = False
    probe = "off"
    control = tracing
    held_words = "with them taken off"
    # No counter shows it: the cause reads the functions on over the probe worker's timed iterations (its evidence).
    mechanism = ("a trace or profile function the interpreter calls on every Python call, line and return of the "
                 "thread it is on (and on every C call, for a profile function), with the work it does there")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with them taken off (off) or as the code left them (code).
        return tracing.set_aside_calls() if value == "off" else tracing.restore_calls()


TRACING = Tracing()
SETTINGS = (TRACING,)
