"""What a workload reports to: timed iterations per phase, and notes.

A workload never times itself. It wraps each iteration it wants measured in
``with rec.iteration("eval"):`` and reports facts that explain a result with
``rec.note("weights_census", {...})``. :class:`Recorder` is the plain
in-process one (ticks only), used directly by tests and simple scripts;
the worker's :class:`CountedRecorder` also gives each iteration its event counts and checks whether the cell's
settings still hold (:class:`SettingWatch`), both over windows of iterations of at least 2 ms
(:class:`IterationWindow`: an iteration that long has its own), and asks what each setting reads where a phase
ends (:meth:`benchctl.settings.Setting.phase_ended`: glibc malloc's state).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable

from .. import clock, counters
from .. import settings as _settings
from ..settings import ONLY_PHASE_ENV

__all__ = ["Recorder", "Iteration", "CountedRecorder", "SettingWatch", "IterationWindow", "COUNTER_SCOPE",
           "COUNTER_WINDOW_NS", "open_counter_group"]

# All threads of the process: torch's OpenMP team may exist before the group opens.
COUNTER_SCOPE = "process"
#: The least time between two reads of the counters. A read of the group costs 9-13 us on an Intel Xeon VM (a
#: ``read`` per thread and per perf group, and the wait's procfs files), and on that CPU a 7 us vectorised multiply
#: (torch's AVX-512 or AVX2 kernels alike) called after a gap of 10 us or more took 1.7-2.1x as long as called back
#: to back, after 5 us or less as long: read around every iteration, the counters doubled the median of the very
#: workloads they were to explain. A wait for a CPU comes in scheduler ticks (1-10 ms), which a shorter window
#: cannot resolve anyway.
COUNTER_WINDOW_NS = 2_000_000


class Recorder:
    """Collects per-phase iteration ticks (read overhead subtracted) and notes.

    ``only``: the one phase this process runs (None: all), as the ``only``
    setting asks through the environment; a workload with several phases
    asks :meth:`runs` before each. ``probe``: the worker measures a probe
    for ``benchctl explain`` (user workloads then add one untimed, profiled call); ``probe_limit_s``: a probe
    whose timed calls took this long stops there, its probing calls left out (explain's whole budget: a call
    that slow leaves no worker time, and the probe says so in minutes, not after its every call).
    """

    def __init__(self, only: str | None = None, probe: bool = False, probe_limit_s: float | None = None) -> None:
        self.ticks: dict[str, list[int]] = {}
        self.notes: dict[str, Any] = {}
        self.only = only if only is not None else os.environ.get(ONLY_PHASE_ENV)
        self.probe = probe
        self.probe_limit_s = probe_limit_s if probe else None
        self._waits = _settings.clock_waits()

    def _wait(self) -> None:
        for wait in self._waits:
            wait()

    def runs(self, phase: str) -> bool:
        """Whether this process runs ``phase``: all phases run unless the ``only`` setting names one."""
        return self.only is None or self.only == phase

    def iteration(self, phase: str) -> "Iteration":
        """Time one iteration of ``phase`` (a context manager: :class:`Iteration`). A raising iteration is not
        recorded. Each clock read first calls the settings' waits (:func:`benchctl.settings.clock_waits`;
        ``sync=cuda`` waits for the GPU): work queued before the iteration is left out of it, and work it queued
        is in it."""
        return Iteration(self, phase)

    def _begin(self, phase: str) -> Any:
        """The recorder's work before an iteration's clock starts (here: the waits); returns what :meth:`_end`
        needs of it."""
        self._wait()
        return None

    def _end(self, phase: str, ticks: int, begun: Any) -> None:
        """The recorder's work after a finished iteration's clock stopped: keep its ``ticks``."""
        self.ticks.setdefault(phase, []).append(ticks)

    def timed_enough(self, phase: str, least: int) -> bool:
        """Whether ``phase`` has ``least`` recorded iterations: what a time target waits for before it stops the
        workload (a paired recorder counts each arm's steady ones)."""
        return len(self.ticks.get(phase, ())) >= least

    def untimed(self) -> None:
        """Say that work other than the timed iterations follows (a probe's profiled call after them): nothing here;
        a :class:`CountedRecorder` closes its window of iterations, so that the work is counted in none."""

    def note(self, key: str, value: Any) -> None:
        """Attach a JSON-serialisable fact to the result (checked now, not at save time)."""
        json.dumps(value)
        self.notes[key] = value


class Iteration:
    """One timed iteration of ``phase`` (:meth:`Recorder.iteration`): the recorder's work (waits, counter reads, a
    paired worker's switch and labels) runs before the clock's first read and after its last, so that the interval
    holds the body, the settings' waits after it (where any) and the calls of the two reads. A context manager
    made by ``contextlib.contextmanager`` kept its frames inside the interval: each generator's resumption after
    the body, two of them in a paired worker, which added 240 ns to the median of an empty iteration and 450 ns to
    that of a 2.7 us multiply where this adds 120 and 250 ns (beyond a bare Stopwatch; Intel Xeon)."""

    __slots__ = ("_rec", "_phase", "_begun", "_watch")

    def __init__(self, rec: Recorder, phase: str) -> None:
        self._rec, self._phase = rec, phase

    def __enter__(self) -> None:
        self._begun = self._rec._begin(self._phase)
        self._watch = clock.Stopwatch()
        self._watch.__enter__()  # the last thing before the body

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None and self._rec._waits:  # a raising body's error is not to be masked by a wait's
            self._rec._wait()
        self._watch.__exit__(exc_type, exc, tb)
        if exc_type is None:
            self._rec._end(self._phase, self._watch.ticks, self._begun)
        return False


def open_counter_group() -> tuple[counters.CounterGroup | None, dict]:
    """(group or None, description) for the worker's counters.

    A counter never fails a measurement: when the group cannot be opened at
    all, the description says why and iterations are timed without counts.
    """
    try:
        group = counters.CounterGroup(scope=COUNTER_SCOPE)
    except Exception as e:  # whatever the kernel or the native group says, the run goes on
        return None, {"scope": COUNTER_SCOPE, "error": f"{type(e).__name__}: {e}"}
    return group, {
        "scope": group.scope,
        "available": dict(group.available),
        "unavailable": dict(group.unavailable),
    }


class IterationWindow:
    """The worker's bookkeeping over windows of iterations: its counters read and its settings checked. A window
    opens with a read before its first iteration and closes after the iteration that ends :data:`COUNTER_WINDOW_NS`
    after it opened, after the last iteration of a paired worker's arm (the recorder knows the next one), before
    an iteration of another phase, or where it holds twice the iterations of the phase's window before it (a
    phase's first window one iteration): a phase's first iterations, where its warm-up is, keep their own counts
    (a lazy start's page faults stay with the call that paid them, not spread over thirty of 8 us), and the windows
    then double up to the time. Where a window closes, the counters are read again and ``check()`` runs (the
    settings' in-run checks). What a window counted is spread evenly over its iterations: an iteration's value is its
    window's mean (an iteration that takes the window's time has a window of its own, its count exact), so a mean
    over iterations is exact but for what happened between the iterations of one window (and, for a window of
    short iterations that a new phase closes, between its last iteration and that phase's first). Nothing runs
    inside an iteration's clock, and between two iterations of one window only a count and a clock read: the
    next short iteration starts as if called back to back."""

    def __init__(self, read: Callable[[], dict[str, int | None]], check: Callable[[], None],
                 sink: dict[str, dict[str, list]]) -> None:
        self._read, self._check, self._sink = read, check, sink  # sink[phase][event]: one value per iteration
        self._opened: dict[str, int | None] = {}
        self._at = 0
        self._kind: Hashable = None
        self._phase: str | None = None
        self._n = 0  # iterations recorded in the open window
        self._most = 1  # iterations the open window may hold: twice the phase's last window's

    def before(self, kind: Hashable, phase: str) -> None:
        """Before an iteration of ``kind`` in ``phase``: close the open window where the kind changes; open one where
        none is."""
        if kind != self._kind and self._n:
            self.close()
        self._kind = kind
        if not self._n:
            if phase != self._phase:
                self._phase, self._most = phase, 1
            self._opened, self._at = self._read(), time.perf_counter_ns()

    def after(self) -> None:
        """After a recorded iteration (one that raised is not): counted in the window, closed here once it has been
        open long enough or holds as many as it may."""
        self._n += 1
        if self._n >= self._most or time.perf_counter_ns() - self._at >= COUNTER_WINDOW_NS:
            self.close()

    def close(self) -> None:
        """Read the counters, spread what they counted since the window opened over its iterations (None where either
        read had nothing; a window of one iteration keeps its count as counted), then check the settings."""
        if not self._n:
            return
        n, self._n = self._n, 0
        self._most = max(self._most, 2 * n)  # never less: a paired worker's arm change closes windows early
        counted = counters.delta(self._opened, self._read())
        if counted:
            lists = self._sink.setdefault(self._phase, {})
            for event, count in counted.items():
                share = None if count is None else count if n == 1 else count / n
                lists.setdefault(event, []).extend([share] * n)
        self._check()  # after the read: the checks' own work is in no window


@dataclass
class SettingWatch:
    """One setting's in-run check (:meth:`benchctl.settings.Setting.during`) over the timed iterations:
    ``seen`` is the first value other than the requested one (the requested one while it holds)."""

    setting: Any  # a benchctl.settings.Setting
    value: Any
    held: bool = True
    seen: Any = None
    samples: int = 0

    def sample(self) -> None:
        now = self.setting.during(self.value)
        self.samples += 1
        if self.held and now != self.value:
            self.held, self.seen = False, now

    def to_json(self) -> dict:
        return {"held": self.held, "seen": self.value if self.held else self.seen, "samples": self.samples}


class CountedRecorder(Recorder):
    """Recorder whose ``counters[phase][event]`` holds one count per recorded iteration: its window's mean
    (:class:`IterationWindow`; an iteration of 2 ms or more counted alone).

    The counters are read outside the timed intervals, so the reads cost
    nothing in the time they bracket, and at most every 2 ms, so that they leave
    no gap between short iterations. A counter that cannot be read is kept as
    ``None`` per iteration, never as a made-up zero. ``plan``: the cell's
    ``(name, setting, value)``; each that has an in-run check is sampled where a
    window of iterations closes, outside their time (``during[name]``).

    ``ended[phase][name]``: what setting ``name`` read where ``phase`` ended
    (:meth:`~benchctl.settings.Setting.phase_ended`, asked of every registered setting; those that
    read nothing are left out), ``ended_errors[phase][name]`` why a reading failed. The first time
    a phase ends (another phase's first iteration starts, outside its time) each is asked with
    ``last=False``; :meth:`finish`, after the timed work, asks again with ``last=True`` for the
    phase that ran last.
    """

    def __init__(self, group: counters.CounterGroup | None = None, probe: bool = False,
                 plan: tuple | list = (), probe_limit_s: float | None = None) -> None:
        super().__init__(probe=probe, probe_limit_s=probe_limit_s)
        self.counters: dict[str, dict[str, list]] = {}
        self._group = group
        self.during = {name: SettingWatch(setting, value) for name, setting, value in plan
                       if setting.during(value) is not None}
        self.ended: dict[str, dict[str, Any]] = {}
        self.ended_errors: dict[str, dict[str, str]] = {}
        self._phase: str | None = None
        self._phases_ended: set[str] = set()
        self._window = IterationWindow(group.read if group is not None else dict, self._check_settings, self.counters)

    def _phase_ended(self, phase: str, last: bool) -> None:
        """Ask every registered setting what it reads where ``phase`` ended."""
        self._phases_ended.add(phase)
        for name, setting in _settings.SETTINGS.items():
            try:
                value = setting.phase_ended(phase, last)
            except Exception as e:  # a readback never fails the measurement: the result says why it is missing
                self.ended_errors.setdefault(phase, {})[name] = f"{type(e).__name__}: {e}"
                continue
            if value is not None:
                self.ended.setdefault(phase, {})[name] = value
                self.ended_errors.get(phase, {}).pop(name, None)

    def _check_settings(self) -> None:
        """The in-run checks of the cell's settings, where a window of iterations closes."""
        for watch in self.during.values():
            watch.sample()

    def untimed(self) -> None:
        self._window.close()

    def finish(self) -> None:
        """Close the last window of iterations; ask the settings what they read where the last phase ended (the
        workload returned)."""
        self._window.close()
        if self._phase is not None:
            self._phase_ended(self._phase, last=True)

    def _kind(self, phase: str) -> Hashable:
        """What a window of iterations may not span a change of: their phase."""
        return phase

    def _begin(self, phase: str) -> Any:
        if self._phase is not None and phase != self._phase:
            self._window.close()  # the phase's last window, before what its end reads (in no window)
            if self._phase not in self._phases_ended:
                self._phase_ended(self._phase, last=False)
        self._phase = phase
        super()._begin(phase)
        self._window.before(self._kind(phase), phase)
        return None

    def _end(self, phase: str, ticks: int, begun: Any) -> None:
        super()._end(phase, ticks, None)
        self._window.after()
