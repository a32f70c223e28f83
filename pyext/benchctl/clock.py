"""The tick clock: a precise, validated counter and a Python API to time with it.

At import benchctl picks its tick source:

* the CPU's invariant cycle counter (x86-64 ``rdtsc``, aarch64 ``cntvct_el0``)
  when the hardware and the kernel say it ticks at a constant rate on every CPU;
* otherwise ``clock_gettime(CLOCK_MONOTONIC_RAW)`` nanoseconds, and
  :func:`info` says why.

``BENCHCTL_CLOCK=clock_gettime`` forces the fallback; ``BENCHCTL_CLOCK=rdtsc``
(or ``cntvct``) demands the counter and fails loudly if it is unusable: a value
this module cannot honour is raised at the first use of the clock (:func:`check`,
:func:`info`, :func:`to_ns`, :func:`time_calls`, :class:`Stopwatch`), as the
request's own error (a wrong value a user error, an unusable counter an
unavailable one), never by importing benchctl.

A tick is one count of the selected source. :func:`to_ns` converts ticks with
the counter frequency, which is taken from what the hardware states (CPUID leaf
0x15, a hypervisor's leaf 0x40000010, aarch64 ``cntfrq_el0``), else from the
kernel's ``tsc_freq_khz``, else measured against ``CLOCK_MONOTONIC_RAW``;
:func:`info` records which.
"""

from __future__ import annotations

import functools
import numbers
import os
import platform
from typing import Any, Callable

import numpy as np

from . import _native, _procfs
from ._validate import ArgumentError, count
from .errors import UnavailableError

__all__ = [
    "ENV_VAR", "ClockUnavailable", "check", "cycles", "info", "to_ns", "busy_wait_cycles", "time_calls", "Stopwatch",
]

ENV_VAR = "BENCHCTL_CLOCK"
_COUNTER = _native.counter_name()  # "rdtsc", "cntvct" or "" (none compiled in)
_REQUESTS = ("auto", "clock_gettime", "rdtsc", "cntvct")
# Long enough that two ~100-tick pairing brackets are < 1 ppm of the span.
_CALIBRATION_NS = 60_000_000
# cpuid 0x16 is a base frequency, not a TSC frequency: trust it only when a
# measurement agrees this closely.
_LEAF_0X16_TOLERANCE_PPM = 1000.0
_OVERHEAD_SAMPLES = 20_000

#: Raw tick count of the selected source (no serialization): ``cycles() -> int``.
cycles = _native.cycles

_state: dict[str, Any] = {}
# Why $BENCHCTL_CLOCK could not be honoured at import (None: it was): raised by check().
_refused: Exception | None = None


def _kernel_cpu_flags() -> set[str]:
    fields = _procfs.cpuinfo_fields()
    return set((fields.get("flags") or fields.get("Features") or "").split())


def _kernel_distrusts_tsc() -> bool:
    """The kernel drops 'tsc' from its clocksources when it finds it unsynchronised."""
    try:
        with open("/sys/devices/system/clocksource/clocksource0/available_clocksource") as f:
            return "tsc" not in f.read().split()
    except OSError:
        return False


def _counter_invariance() -> tuple[bool, str]:
    if _COUNTER == "cntvct":
        return True, "the Arm generic timer counts at a constant rate by architecture"
    if _kernel_distrusts_tsc():
        return False, "the kernel removed 'tsc' from its clocksources (unsynchronised or unstable TSC)"
    if _native.cpuid_invariant_tsc():
        return True, "CPUID 0x80000007 EDX bit 8 reports an invariant TSC"
    flags = _kernel_cpu_flags()
    if {"constant_tsc", "nonstop_tsc"} <= flags:
        return True, "the kernel reports constant_tsc and nonstop_tsc"
    return False, ("the TSC is not invariant (no CPUID bit, no constant_tsc+nonstop_tsc): its rate may follow "
                   "CPU frequency or stop in sleep states")


class ClockUnavailable(UnavailableError, ValueError):
    """$BENCHCTL_CLOCK asks for a counter this build or machine cannot use; the message says why."""


def _configure(requested: str) -> None:
    """Select the tick source; called at import with $BENCHCTL_CLOCK."""
    global _refused
    requested = (requested or "auto").strip().lower() or "auto"
    if requested not in _REQUESTS:
        raise ArgumentError(f"{ENV_VAR}={requested!r} is not one of {', '.join(_REQUESTS)}: set one of "
                            f"them, or unset it (auto)")
    if requested in ("rdtsc", "cntvct") and requested != _COUNTER:
        raise ClockUnavailable(
            f"{ENV_VAR}={requested} but this build's counter is {_COUNTER or 'none'} "
            f"({platform.machine()})"
        )
    invariant = False
    if requested == "clock_gettime":
        use_counter, reason = False, f"forced by {ENV_VAR}=clock_gettime"
    elif not _COUNTER:
        use_counter = False
        reason = f"unsupported architecture {platform.machine()}: no cycle counter is implemented for it"
    else:
        invariant, why = _counter_invariance()
        use_counter = invariant
        reason = why if invariant else f"fell back to clock_gettime: {why}"
        if requested != "auto" and not invariant:
            raise ClockUnavailable(f"{ENV_VAR}={requested} but the counter is unusable: {why}")
    _native.use_counter_ticks(use_counter)
    _state.clear()
    _state.update(
        source=_COUNTER if use_counter else "clock_gettime",
        invariant=invariant,
        reason=reason,
        requested=requested,
        read_overhead_cycles=int(_native.measure_read_overhead(_OVERHEAD_SAMPLES)),
        chained_read_overhead_cycles=int(_native.measure_chained_read_overhead(_OVERHEAD_SAMPLES)),
    )
    _frequency.cache_clear()
    _refused = None


def check() -> None:
    """Raise the error $BENCHCTL_CLOCK gave when this module selected its tick source (a value not
    in its list: ArgumentError; a counter this machine cannot use: ClockUnavailable); nothing when
    the clock is usable. Every timing entry point calls it first."""
    if _refused is not None:
        raise type(_refused)(str(_refused))


def _sysfs_tsc_khz() -> float | None:
    try:
        with open("/sys/devices/system/cpu/cpu0/tsc_freq_khz") as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return None


@functools.lru_cache(maxsize=None)
def _frequency() -> tuple[float, str, float]:
    """(hz, source, uncertainty_ppm) of the selected tick source."""
    if _state["source"] == "clock_gettime":
        return 1e9, "definition (clock_gettime ticks are nanoseconds)", 0.0
    leaf_0x16 = None
    for nominal in _native.counter_nominal_frequencies():
        if nominal.source == "cpuid_0x16":
            leaf_0x16 = nominal
        else:
            return nominal.hz, nominal.source, nominal.uncertainty_ppm
    khz = _sysfs_tsc_khz() if _COUNTER == "rdtsc" else None
    if khz:
        return khz * 1e3, "sysfs tsc_freq_khz", 0.5e3 / khz
    measured = _native.calibrate_counter(_CALIBRATION_NS)
    hz = measured.hz
    if leaf_0x16 and abs(leaf_0x16.hz / hz - 1) * 1e6 <= _LEAF_0X16_TOLERANCE_PPM:
        return leaf_0x16.hz, "cpuid_0x16 (confirmed by calibration)", leaf_0x16.uncertainty_ppm
    return hz, f"calibrated against CLOCK_MONOTONIC_RAW over {_CALIBRATION_NS / 1e6:.0f} ms", measured.uncertainty_ppm


def info() -> dict[str, Any]:
    """Describe the tick source.

    Keys: ``source`` ('rdtsc' | 'cntvct' | 'clock_gettime'), ``invariant``,
    ``frequency_hz``, ``frequency_source``, ``frequency_uncertainty_ppm``,
    ``read_overhead_cycles`` (minimum serialized back-to-back begin/end read
    pair, in ticks; subtracted by :class:`Stopwatch`),
    ``chained_read_overhead_cycles`` (minimum back-to-back fenced read,
    subtracted from each :func:`time_calls` sample),
    ``reason`` (why this source), ``requested`` (the $BENCHCTL_CLOCK value).
    """
    check()
    hz, source, ppm = _frequency()
    return dict(
        _state,
        frequency_hz=hz,
        frequency_source=source,
        frequency_uncertainty_ppm=ppm,
    )


def to_ns(ticks):
    """Convert ticks (a number or a numpy array/sequence) to nanoseconds (float)."""
    check()
    scale = 1e9 / _frequency()[0]
    if isinstance(ticks, numbers.Real) and not isinstance(ticks, bool):
        if ticks < 0:
            raise ValueError(f"ticks must be >= 0, got {ticks}")
        return float(ticks) * scale
    arr = np.asarray(ticks)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"ticks must be numbers, got {arr.dtype} ({type(ticks).__name__})")
    if arr.size and arr.min() < 0:
        raise ValueError("ticks must be >= 0; the array holds negative values")
    return arr.astype(np.float64) * scale


#: Spin (GIL released) until the tick source has advanced by ``n``; return the
#: ticks elapsed: ``busy_wait_cycles(n: int) -> int``. Native with no Python
#: frame in front: a known-length workload must cost the same to call each time.
busy_wait_cycles = _native.busy_wait_cycles


def time_calls(fn: Callable[[], Any], n: int, warmup: int = 1) -> np.ndarray:
    """Call ``fn()`` ``warmup`` times untimed, then ``n`` times timed.

    Returns an int64 array of ticks per call, with the clock's read overhead
    subtracted (floored at 0). The loop runs natively with one fenced read
    between consecutive calls (each read ends one sample and starts the next),
    and makes no Python object per sample. Exceptions raised by ``fn``
    propagate.

    A sample includes the cost of calling ``fn``, which for a Python function
    also depends on what ran before it: on a shared host the same frames ran
    100-400 ticks slower right after a 4 us native spin than right after
    another call. To time a difference of a few microseconds, keep Python
    frames out of ``fn`` (e.g. ``itertools.starmap(f, args).__next__``).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    n = count("n", n, 1)
    warmup = count("warmup", warmup, 0)
    check()
    return _native.time_python_calls(fn, n, warmup, _state["chained_read_overhead_cycles"])


class Stopwatch:
    """Time a ``with`` block: ``.ticks`` (read overhead subtracted) and ``.ns``.

    The interval is recorded also when the block raises; the exception is not
    suppressed.
    """

    __slots__ = ("ticks", "_start")

    def __init__(self) -> None:
        self.ticks: int | None = None

    def __enter__(self) -> "Stopwatch":
        check()
        self._start = _native.cycles_begin()
        return self

    def __exit__(self, *exc) -> bool:
        end = _native.cycles_end()
        self.ticks = max(0, end - self._start - _state["read_overhead_cycles"])
        return False

    @property
    def ns(self) -> float | None:
        """The interval in nanoseconds (None before the block ran). Converted where asked, not at the block's end:
        a worker times microsecond iterations back to back, and any work between them is a gap before the next."""
        return None if self.ticks is None else to_ns(self.ticks)

    def __repr__(self) -> str:
        if self.ticks is None:
            return "Stopwatch(not run)"
        return f"Stopwatch(ticks={self.ticks}, ns={self.ns:.0f})"


def _configure_from_environment() -> None:
    global _refused
    try:
        _configure(os.environ.get(ENV_VAR, "auto"))
    except (ArgumentError, ClockUnavailable) as error:
        _refused = error  # said at first use, not as a traceback of every import of benchctl


_configure_from_environment()
