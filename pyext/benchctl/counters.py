"""Per-iteration event counters: page faults, context switches, CPU time, the
time threads waited for a CPU, and hardware events where the CPU's PMU offers them.

A :class:`CounterGroup` is opened once and read around the work to count; a read
returns cumulative counts and :func:`delta` turns two reads into the counts of
what happened between them (benchctl's workers read theirs over windows of
iterations: :class:`benchctl._run.recorder.IterationWindow`)::

    with CounterGroup(scope="process") as counters:
        before = counters.read()
        work()
        per_iteration = delta(before, counters.read())

Counting uses ``perf_event_open``. The software events (``minor_faults``,
``major_faults``, ``context_switches``, ``cpu_migrations``, ``task_clock_ns``)
are read with one ``read()`` of a kernel event group; the hardware ones
(``cycles``, ``instructions``, ``branch_misses``, ``cache_misses``) form a
second group, because a hardware group may not fit the PMU and must not stop
the software one from counting. ``runqueue_wait_ns``, the time the process's
threads were runnable but waited for a CPU, has no perf event: it is read from
procfs (:class:`benchctl._run_delay.RunDelay`), for every thread of the process
in either scope.

Scopes (stated in :attr:`CounterGroup.scope` and in every description):

* ``"inherit"``: the thread that opens the group and the threads it creates
  afterwards (threads that already exist, such as a started OpenMP pool, are
  not counted);
* ``"process"``: every thread of the process at opening time, opened one by
  one and summed, plus the threads they create afterwards.

A missing event never fails a measurement. It is reported in
:attr:`CounterGroup.unavailable` with the errno's reason, and replaced where a
fallback exists: ``getrusage(RUSAGE_SELF)`` for faults and context switches,
``CLOCK_PROCESS_CPUTIME_ID`` for task clock. Both fallbacks count the whole
process, which :attr:`CounterGroup.sources` says. An event with neither reads
as ``None``.
"""

from __future__ import annotations

import errno as _errno
import os
import resource
import time
from typing import Callable, Iterable, Optional

import numpy as np

from . import _native, _procfs, _validate
from ._run_delay import RunDelay

__all__ = [
    "SCOPES", "EVENTS", "PERF_EVENTS", "HARDWARE_EVENTS", "PROCFS_EVENTS", "perf_event_paranoid", "CounterGroup",
    "delta",
]

SCOPES = ("inherit", "process")

#: The events perf_event_open counts, software first.
PERF_EVENTS: tuple[str, ...] = tuple(kind.name for kind in _native.perf_event_kinds())
HARDWARE_EVENTS: tuple[str, ...] = tuple(kind.name for kind in _native.perf_event_kinds() if kind.hardware)
#: The events read from procfs, for the whole process: no perf event counts them.
PROCFS_EVENTS: tuple[str, ...] = ("runqueue_wait_ns",)
#: Every event name benchctl can count.
EVENTS: tuple[str, ...] = PERF_EVENTS + PROCFS_EVENTS

_RUN_DELAY_SOURCE = "/proc/self/task/*/schedstat run delay, whole process"

# Events that only ever happen in kernel context: a user-space-only count of
# them (all that perf_event_paranoid >= 2 allows an unprivileged user) is 0.
_KERNEL_ONLY = frozenset({"context_switches", "cpu_migrations"})

_RUSAGE = "getrusage(RUSAGE_SELF), whole process"
# name -> (source, reads getrusage, value from the getrusage result or None)
_FALLBACKS: dict[str, tuple[str, bool, Callable[[Optional[resource.struct_rusage]], int]]] = {
    "minor_faults": (_RUSAGE, True, lambda ru: ru.ru_minflt),
    "major_faults": (_RUSAGE, True, lambda ru: ru.ru_majflt),
    "context_switches": (_RUSAGE, True, lambda ru: ru.ru_nvcsw + ru.ru_nivcsw),
    "task_clock_ns": ("clock_gettime(CLOCK_PROCESS_CPUTIME_ID), whole process", False,
                      lambda _: time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)),
}

_PARANOID_PATH = "/proc/sys/kernel/perf_event_paranoid"


def perf_event_paranoid() -> Optional[int]:
    """The kernel's ``perf_event_paranoid`` setting, or None where unreadable."""
    text = _procfs.read_text(_PARANOID_PATH)
    return int(text) if text is not None and text.lstrip("-").isdigit() else None


def _why(err: int, name: str) -> str:
    """A reason a person can act on for perf_event_open failing with ``err``."""
    code = _errno.errorcode.get(err, str(err))
    base = f"{code} ({os.strerror(err)})"
    if err in (_errno.ENOENT, _errno.EOPNOTSUPP, _errno.ENODEV):
        if name in HARDWARE_EVENTS:
            return f"{base}: no hardware PMU offers this event (usual in virtual machines)"
        return f"{base}: this kernel does not provide the event"
    if err in (_errno.EACCES, _errno.EPERM):
        return (f"{base}: not permitted (kernel.perf_event_paranoid={perf_event_paranoid()}; "
                "a seccomp filter or missing CAP_PERFMON can also forbid it)")
    if err == _errno.ENOSYS:
        return f"{base}: perf_event_open is not available here"
    if err == _errno.EMFILE:
        return f"{base}: out of file descriptors (one per event per thread)"
    return base


def _open_perf(names: tuple[str, ...], tids: list[int]):
    """The native group, and the events it counts in user space only.

    perf_event_paranoid >= 2 refuses an unprivileged user kernel-side
    counting (EACCES/EPERM) but allows user-space counts: events refused so
    are asked for again with exclude_kernel.
    """
    perf = _native.PerfCounterGroup(list(names), tids, [False] * len(names))
    refused = {s.name for s in perf.status() if not s.opened and s.error in (_errno.EACCES, _errno.EPERM)}
    if not refused:
        return perf, frozenset()
    perf.close()
    return _native.PerfCounterGroup(list(names), tids, [n in refused for n in names]), frozenset(refused)


def _combine(readings, n_events: int) -> list[Optional[int]]:
    """Per event, the sum over threads of native readings (``event``, ``value``, ``time_enabled``,
    ``time_running``: :class:`benchctl._native.PerfMemberReading`).

    A reading the kernel multiplexed (it counted the event only ``running``
    of the ``enabled`` ns) is extrapolated to ``value * enabled / running``,
    as ``perf stat`` does. An event with a reading that was enabled but never
    running (the PMU never had room for it), or with no reading at all, is
    None: there is no count to extrapolate from.
    """
    totals: list[Optional[int]] = [None] * n_events
    never_ran = set()
    for r in readings:
        value = r.value
        if r.time_running < r.time_enabled:
            if r.time_running == 0:
                never_ran.add(r.event)
                continue
            value = value * r.time_enabled // r.time_running
        totals[r.event] = (totals[r.event] or 0) + value
    for event in never_ran:
        totals[event] = None
    return totals


class CounterGroup:
    """Event counters opened once, read cumulatively.

    ``scope``: ``"inherit"`` or ``"process"`` (see the module doc).
    ``events``: names from :data:`EVENTS`; None asks for all of them.

    Attributes after opening:

    * ``scope``, ``events``;
    * ``available``: name -> whether :meth:`read` gives a number for it;
    * ``unavailable``: name -> why perf_event_open could not count it, for every
      event perf could not count (also those a fallback replaces);
    * ``sources``: name -> how an available event is counted;
    * ``threads``: how many threads were opened (1 for ``"inherit"``).
    """

    def __init__(self, scope: str = "inherit", events: Optional[Iterable[str]] = None) -> None:
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}; got {scope!r}")
        if isinstance(events, str):
            raise TypeError("events must be a list of event names, not one string")
        names = EVENTS if events is None else tuple(events)
        unknown = [n for n in names if n not in EVENTS]
        if unknown:
            raise ValueError(f"unknown event(s) {unknown}; known: {', '.join(EVENTS)}")
        if len(set(names)) != len(names):
            raise ValueError(f"events listed more than once: {list(names)}")
        if not names:
            raise ValueError("events must name at least one event")
        self.scope = scope
        self.events = names
        self._perf_names = perf_names = tuple(n for n in names if n in PERF_EVENTS)
        tids = [] if scope == "inherit" else _procfs.task_ids(caller_first=True)
        self._perf, user_only = _open_perf(perf_names, tids) if perf_names else (None, frozenset())
        self.threads = len(self._perf.threads()) if self._perf is not None else 0
        self._run_delay = RunDelay() if "runqueue_wait_ns" in names else None
        self._closed = False

        self.available: dict[str, bool] = {}
        self.unavailable: dict[str, str] = {}
        self.sources: dict[str, str] = {}
        self._perf_index: list[tuple[str, int]] = []
        self._fallbacks: list[tuple[str, Callable]] = []
        self._fallbacks_read_rusage = False
        for index, status in enumerate(self._perf.status() if self._perf is not None else ()):
            name, opened = status.name, status.opened
            if opened and name in user_only and name in _KERNEL_ONLY:
                opened = False
                self.unavailable[name] = (
                    f"only user-space counting is permitted (kernel.perf_event_paranoid="
                    f"{perf_event_paranoid()}), and {name.replace('_', ' ')} happen in the kernel")
            elif not opened:
                self.unavailable[name] = _why(status.error, name)
            if opened:
                self._perf_index.append((name, index))
                self.sources[name] = f"perf_event_open, {scope}" + (
                    ", user-space events only (perf_event_paranoid)" if name in user_only else "")
            elif name in _FALLBACKS:
                source, reads_rusage, getter = _FALLBACKS[name]
                self.sources[name] = source
                self._fallbacks.append((name, getter))
                self._fallbacks_read_rusage |= reads_rusage
            self.available[name] = name in self.sources
        if self._run_delay is not None:
            if self._run_delay.available:
                self.sources["runqueue_wait_ns"] = _RUN_DELAY_SOURCE
            else:
                self.unavailable["runqueue_wait_ns"] = self._run_delay.why
            self.available["runqueue_wait_ns"] = self._run_delay.available
        self.available = {name: self.available[name] for name in names}  # in the order asked

    def read(self) -> dict[str, Optional[int]]:
        """Cumulative counts of every event (None where unavailable).

        A hardware event the kernel never scheduled during the group's life
        (PMU busy) reads None; one it multiplexed is extrapolated by the
        kernel's enabled/running times.
        """
        if self._closed:
            raise RuntimeError("the counter group is closed")
        out: dict[str, Optional[int]] = dict.fromkeys(self.events)
        if self._perf is not None:
            values = _combine(self._perf.read(), len(self._perf_names))
            for name, index in self._perf_index:
                out[name] = values[index]
        if self._run_delay is not None:
            out["runqueue_wait_ns"] = self._run_delay.read()
        if self._fallbacks:
            ru = resource.getrusage(resource.RUSAGE_SELF) if self._fallbacks_read_rusage else None
            for name, getter in self._fallbacks:
                out[name] = getter(ru)
        return out

    @property
    def threads_read(self) -> int:
        """How many threads one :meth:`read` reads: the perf group's (:attr:`threads`) and, for the run delay,
        every thread of the process, whatever the scope."""
        return self.threads + (self._run_delay.threads if self._run_delay is not None else 0)

    def read_cost_ns(self, repeats: int = 50) -> dict:
        """What one :meth:`read` costs here: ``{"min_ns", "median_ns", "repeats"}``.

        Times ``repeats`` back-to-back reads with :func:`benchctl.clock.time_calls`
        (one untimed read first). The minimum is the cost itself; the median
        adds what a busy machine adds. A read reads every thread it counts, so
        its cost grows with :attr:`threads_read`. Compare it with
        the iteration time before reading around every iteration.
        """
        from . import clock

        repeats = _validate.count("repeats", repeats, 1)
        ns = clock.to_ns(clock.time_calls(self.read, repeats, warmup=1))
        return {"min_ns": float(ns.min()), "median_ns": float(np.median(ns)), "repeats": repeats}

    def describe(self) -> dict:
        """What this group counts and how, as JSON-serialisable data."""
        return {
            "scope": self.scope,
            "threads": self.threads,
            "available": dict(self.available),
            "unavailable": dict(self.unavailable),
            "sources": dict(self.sources),
            "perf_event_paranoid": perf_event_paranoid(),
        }

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the kernel counters and procfs files (idempotent); :meth:`read` then raises."""
        if self._perf is not None:
            self._perf.close()
        if self._run_delay is not None:
            self._run_delay.close()
        self._closed = True

    def __enter__(self) -> "CounterGroup":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __repr__(self) -> str:
        on = [n for n, ok in self.available.items() if ok]
        return f"CounterGroup(scope={self.scope!r}, threads={self.threads}, available={on})"


def delta(before: dict, after: dict) -> dict[str, Optional[int]]:
    """Counts between two :meth:`CounterGroup.read` results (None stays None)."""
    if set(before) != set(after):
        raise ValueError("before and after must be reads of the same counter group")
    return {k: None if before[k] is None or after[k] is None else after[k] - before[k]
            for k in before}
