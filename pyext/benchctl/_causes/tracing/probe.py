"""What the probe worker learns of trace and profile functions: those on as its timed iterations began and as they
ended (:func:`watching`), read back as :class:`TracingFacts`. Read on the thread that runs the calls, with no call
of its own: a tracer does not change what the workload computes, only what each Python frame of it costs."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields
from typing import Iterator

from ..._probe import EntryProbe, NoteFacts, ProbedCall, hook_name
from . import control

__all__ = ["TracingFacts", "on", "watching", "TracingProbe", "PROBE", "PROBES"]


# The probe note's key, written and read here only.
_TRACING = "tracing"


@dataclass(frozen=True)
class TracingFacts(NoteFacts):
    """The calling thread's ``trace`` and ``profile`` functions, and the ones threading puts on the threads started
    after (``threads_trace``, ``threads_profile``), each by name (None: none): at one moment (:func:`on`), or over the
    probe worker's timed iterations (on as they ended, else as they began)."""

    trace: str | None = None
    profile: str | None = None
    threads_trace: str | None = None
    threads_profile: str | None = None

    @property
    def on(self) -> bool:
        return any(name is not None for name in (self.trace, self.profile, self.threads_trace, self.threads_profile))

    def text(self) -> str:
        """``"a trace function (_tracer) was on over its timed calls"``."""
        named = [f"{words} ({name})" for name, words in ((self.trace, "a trace function"),
                                                          (self.profile, "a profile function"),
                                                          (self.threads_trace, "a trace function for new threads"),
                                                          (self.threads_profile, "a profile function for new threads"))
                 if name is not None]
        return f"{' and '.join(named)} {'was' if len(named) == 1 else 'were'} on over its timed calls"

    def none_text(self) -> str:
        return "no trace or profile function was on over its timed calls (sys.gettrace(), sys.getprofile())"


def on() -> TracingFacts:
    """The trace and profile functions on now, by name."""
    return TracingFacts(*(None if function is None else hook_name(function) for function in control.on()))


@contextlib.contextmanager
def watching() -> Iterator[list[TracingFacts]]:
    """What is on as the block begins and as it ends (a list of the two, the second there once it ended)."""
    seen = [on()]
    try:
        yield seen
    finally:
        seen.append(on())


class TracingProbe(EntryProbe):
    """The trace and profile functions on over the timed iterations (none kept for a workload that times itself)."""

    key = "tracing"
    fact = TracingFacts
    entry = _TRACING

    def watch(self) -> contextlib.AbstractContextManager:
        return watching()

    def record(self, probed: ProbedCall) -> dict:
        seen = probed.watcher(self)
        if probed.call is None or seen is None:
            return {}  # a @benchctl.workload function times its own iterations: no call runs them set aside
        begun, ended = seen[0], seen[-1]
        # The one on as they ended where one was, else the one on as they began (the calls turned it off).
        return {_TRACING: {f.name: getattr(ended, f.name) or getattr(begun, f.name) for f in fields(TracingFacts)}}


PROBE = TracingProbe()
PROBES = (PROBE,)
