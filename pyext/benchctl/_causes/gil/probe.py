"""Probe evidence of Python threads beside the calls: over the probe worker's timed iterations, the CPU time of each
Python thread of the process other than the calling one, and the calling thread's own, read back as
:class:`PythonThreads`.

A thread that Python's ``threading`` started (a metrics loop, a prefetcher, a progress bar's monitor) runs Python
only while it holds the GIL; what it does in native code that lets the GIL go (a torch op, a read) does not hold it.
Its CPU time counts both, so the count says how much such threads ran beside the calls, not how long they held the
GIL; where they are found, each is named by where it was as the timed iterations ended (``sys._current_frames``).
Each thread's CPU clock is read with nanosecond resolution (:mod:`benchctl._thread_cpu`).
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field

from ... import _thread_cpu
from ..._probe import EntryProbe, NoteFacts, ProbedCall

__all__ = ["PythonThreads", "PythonThreadsWatch", "PythonThreadsProbe", "PROBE", "PROBES"]

# The probe note's entry, written and read here only.
_ENTRY = "python_threads"
#: The threads named in the note: the busiest first.
NAMED = 3


@dataclass(frozen=True)
class PythonThreads(NoteFacts):
    """CPU milliseconds over the probe worker's timed iterations (``wall_ms`` of them): of the calling thread
    (``caller_ms``) and of the process's other Python threads (``others_ms``, ``others`` of them that ran);
    ``busiest``: the busiest few, each ``{"name", "cpu_ms", "at"}`` (``at``: its function and line as the iterations
    ended, "" where not known)."""

    wall_ms: float
    caller_ms: float
    others_ms: float
    others: int
    busiest: list[dict] = field(default_factory=list)

    @property
    def others_cpus(self) -> float:
        """The CPUs the other Python threads kept busy beside the calls, on average."""
        return self.others_ms / self.wall_ms if self.wall_ms > 0 else 0.0

    @property
    def caller_on_cpu(self) -> float:
        """The share of the calls' wall time the calling thread ran on a CPU (the rest it waited)."""
        return min(1.0, self.caller_ms / self.wall_ms) if self.wall_ms > 0 else 0.0

    def text(self) -> str:
        """``"1 other Python thread kept 0.98 CPUs busy beside its timed calls (Thread-1 (_metrics) 2,290 ms, at
        _metrics (gil_thread.py:11)), while its calling thread ran on a CPU for 5% of their time"``."""
        named = ", ".join(f"{t['name']} {t['cpu_ms']:,.0f} ms" + (f", at {t['at']}" if t.get("at") else "")
                          for t in self.busiest)
        plural = "s" * (self.others != 1)
        return (f"{self.others} other Python thread{plural} kept {self.others_cpus:.2f} CPUs busy beside its timed "
                f"calls ({named}), while its calling thread ran on a CPU for {self.caller_on_cpu:.0%} of their time")


class PythonThreadsWatch(_thread_cpu.ThreadCpuWatch):
    """A :class:`~benchctl._thread_cpu.ThreadCpuWatch` that also knows the calling thread and where each other Python
    thread was as the calls ended."""

    def __enter__(self) -> "PythonThreadsWatch":
        self.caller = threading.get_native_id()
        return super().__enter__()  # type: ignore[return-value]

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        frames = sys._current_frames()
        self.threads = {t.native_id: (t.name, _where(frames.get(t.ident))) for t in threading.enumerate()
                        if t.native_id in self.python}


def _where(frame) -> str:
    if frame is None:
        return ""
    code = frame.f_code
    return f"{code.co_name} ({os.path.basename(code.co_filename)}:{frame.f_lineno})"


class PythonThreadsProbe(EntryProbe):
    """Watches the timed iterations in the thread that runs them; records :class:`PythonThreads` (nothing where
    nothing was watched: a workload that times itself)."""

    key = "python_threads"
    entry = _ENTRY
    fact = PythonThreads

    def watch(self) -> PythonThreadsWatch:
        return PythonThreadsWatch(_thread_cpu.thread_ns)

    def record(self, probed: ProbedCall) -> dict:
        watch = probed.watcher(self)
        return {} if watch is None else {_ENTRY: note(watch)}


def note(watch: PythonThreadsWatch) -> dict:
    """The fields of :class:`PythonThreads` from a finished watch."""
    spent = {tid: watch.used.get(tid, 0) for tid in watch.threads}
    ran = sorted(((ns, tid) for tid, ns in spent.items() if ns > 0), reverse=True)
    return {"wall_ms": watch.wall_ns / 1e6, "caller_ms": watch.used.get(watch.caller, 0) / 1e6,
            "others_ms": sum(ns for ns, _ in ran) / 1e6, "others": len(ran),
            "busiest": [{"name": watch.threads[tid][0], "cpu_ms": ns / 1e6, "at": watch.threads[tid][1]}
                        for ns, tid in ran[:NAMED]]}


PROBE = PythonThreadsProbe()
PROBES = (PROBE,)
