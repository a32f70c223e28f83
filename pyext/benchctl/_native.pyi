"""Typed stub of benchctl._native, the C++ core (csrc/bind_*.cpp). Use the benchctl modules, not this one.

tests/test_native_stub.py checks that this file declares exactly the module's public names, each record's
fields, every function's parameter names and the records each returns.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

# What to do to one thread's FP control register: None reads only; (ftz, daz) sets both flags.
_Target: TypeAlias = tuple[bool, bool] | None

# -- clock (bind_clock.cpp) ---------------------------------------------------------------------------------------

class NominalFrequency:
    """A frequency the hardware states for its counter."""

    @property
    def source(self) -> str: ...  # where it is stated, e.g. "cpuid_0x15", "cntfrq_el0"
    @property
    def hz(self) -> float: ...  # the frequency in Hz
    @property
    def uncertainty_ppm(self) -> float: ...  # quantisation of the stated value

class Calibration:
    """The counter's frequency measured against CLOCK_MONOTONIC_RAW."""

    @property
    def hz(self) -> float: ...  # the measured frequency in Hz
    @property
    def uncertainty_ppm(self) -> float: ...  # its uncertainty
    @property
    def duration_ns(self) -> float: ...  # how long the measurement ran

def cycles() -> int:
    """Raw tick count of the selected source (no serialization)."""

def cycles_begin() -> int:
    """Serialized read for an interval's start."""

def cycles_end() -> int:
    """Serialized read for an interval's end."""

def busy_wait_cycles(n: int, /) -> int:
    """Spin (GIL released) until the tick source has advanced by n; return the ticks elapsed."""

def counter_name() -> str:
    """The hardware counter compiled in ("rdtsc", "cntvct"), or ""."""

def use_counter_ticks(on: bool) -> None:
    """Tick with the hardware counter (True) or CLOCK_MONOTONIC_RAW ns (False)."""

def counter_ticks_in_use() -> bool:
    """Whether ticks come from the hardware counter."""

def cpuid_invariant_tsc() -> bool | None:
    """CPUID 0x80000007 EDX bit 8 on x86-64; None where CPUID has no answer."""

def counter_nominal_frequencies() -> list[NominalFrequency]:
    """Frequencies the hardware states for its counter, in order of trust."""

def calibrate_counter(duration_ns: int) -> Calibration:
    """Measure the counter's frequency against CLOCK_MONOTONIC_RAW over duration_ns (>= 1 ms)."""

def measure_read_overhead(samples: int) -> int:
    """Minimum of samples back-to-back serialized (begin, end) reads, in ticks."""

def measure_chained_read_overhead(samples: int) -> int:
    """Minimum of samples back-to-back fenced reads, in ticks."""

def time_python_calls(fn: Callable[[], object], n: int, warmup: int, overhead: int) -> npt.NDArray[np.int64]:
    """Ticks of each of n chained calls of fn() after warmup untimed ones, minus overhead."""

# -- OpenMP teams (bind_omp.cpp, bind_affinity.cpp) --------------------------------------------------------------

class TeamMember:
    """One thread of an OpenMP team, as it reported itself inside a parallel region."""

    @property
    def omp_thread(self) -> int: ...  # the thread's number in the team (0: the thread that forked it)
    @property
    def tid(self) -> int: ...  # its kernel thread id
    @property
    def cpu(self) -> int: ...  # the CPU it ran on in the region (sched_getcpu)

class PinnedMember:
    """One OpenMP team thread pinned from inside itself, with its readback."""

    @property
    def omp_thread(self) -> int: ...  # the thread's number in the team
    @property
    def tid(self) -> int: ...  # its kernel thread id
    @property
    def before(self) -> list[int]: ...  # its affinity mask before the call (CPU ids, ascending)
    @property
    def after(self) -> list[int]: ...  # its mask read back after the set
    @property
    def cpu_after(self) -> int: ...  # the CPU it ran on right after the set (sched_getcpu)

def loaded_libraries() -> list[str]:
    """Paths of the shared libraries mapped into this process, in load order."""

def omp_team_members(kind: str, path: str, num_threads: int) -> list[TeamMember]:
    """Run an empty region of num_threads threads (0: the runtime's default) on a loaded runtime."""

def omp_team_pin(kind: str, path: str, masks: Sequence[Sequence[int]]) -> list[PinnedMember]:
    """Restrict omp thread i of a region of len(masks) threads to masks[i], from inside it; all or nothing."""

# -- CUDA (bind_cuda.cpp) -----------------------------------------------------------------------------------------

class CudaError(RuntimeError):
    """A CUDA runtime call failed; .call names it, .code is its cudaError_t."""

    call: str  # the CUDA function that failed
    code: int  # its cudaError_t

class CudaRuntime:
    """A libcudart opened by path; its functions resolved at run time."""

    def __init__(self, path: str) -> None:
        """dlopen path (a file or a soname) and resolve every function used; RuntimeError naming what is missing."""
    @property
    def path(self) -> str: ...  # the path or soname it was opened by
    def device_count(self) -> int:
        """cudaGetDeviceCount."""
    def runtime_version(self) -> int:
        """cudaRuntimeGetVersion, e.g. 13000 for 13.0."""
    def driver_version(self) -> int:
        """cudaDriverGetVersion; 0 when no driver is installed."""
    def error_string(self, code: int) -> str:
        """cudaGetErrorString(code)."""
    def take_last_error(self) -> int:
        """cudaGetLastError: the calling thread's last error, which it resets."""
    def time_calls(
        self, fn: Callable[[], object], n: int, stream: int, before: Callable[[], object] | None = None
    ) -> npt.NDArray[np.float64]:
        """GPU ms of each of n calls of fn(), one event pair each on stream; before() runs outside the pair."""

# -- perf counters (bind_counters.cpp) ----------------------------------------------------------------------------

class PerfEventKind:
    """An event benchctl knows, by the name Python uses for it."""

    @property
    def name(self) -> str: ...  # e.g. "minor_faults", "cycles"
    @property
    def type(self) -> int: ...  # perf_event_attr.type: PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE
    @property
    def config(self) -> int: ...  # perf_event_attr.config: PERF_COUNT_SW_* or PERF_COUNT_HW_*
    @property
    def hardware(self) -> bool: ...  # whether the CPU's PMU counts it

class PerfEventStatus:
    """What opening one event came to."""

    @property
    def name(self) -> str: ...  # the event's name
    @property
    def opened(self) -> bool: ...  # counting on every thread that was asked for
    @property
    def error(self) -> int: ...  # errno of the first failure (0 when opened)
    @property
    def failed_tid(self) -> int: ...  # thread the failure happened on (0: the calling thread)

class PerfMemberReading:
    """One event's count on one thread, as the kernel reports it."""

    @property
    def event(self) -> int: ...  # index into the events the group was opened with
    @property
    def value(self) -> int: ...  # the raw count
    @property
    def time_enabled(self) -> int: ...  # ns the event was enabled
    @property
    def time_running(self) -> int: ...  # ns it was on the PMU (< time_enabled: multiplexed; 0: never scheduled)

class PerfCounterGroup:
    """Kernel event counters (perf_event_open), opened once, read with one read() per group."""

    def __init__(self, events: Sequence[str], tids: Sequence[int], exclude_kernel: Sequence[bool]) -> None:
        """Open events on tids (empty: the calling thread and its future threads); one exclude_kernel flag per event."""
    def status(self) -> list[PerfEventStatus]:
        """What opening each event came to, in the order asked for."""
    def threads(self) -> list[int]:
        """Threads being counted (0: the calling thread, inherit mode)."""
    def read(self) -> list[PerfMemberReading]:
        """Cumulative counts: one reading per opened event per thread."""
    def close(self) -> None:
        """Close the counters (idempotent); read() then raises."""
    @property
    def closed(self) -> bool: ...  # whether close() has run

def perf_event_kinds() -> list[PerfEventKind]:
    """Every event benchctl can count, software first."""

# -- FP control state (bind_fpenv.cpp) ----------------------------------------------------------------------------

FP_BROADCAST_MAX_DEADLINE_S: float  # the longest wait fp_broadcast accepts, in seconds

class FpMasks:
    """The bits of the raw FP control register that decide denormal handling."""

    @property
    def ftz(self) -> int: ...  # the flush-to-zero bit (MXCSR bit 15, FPCR.FZ bit 24)
    @property
    def daz(self) -> int: ...  # the denormals-are-zero bit (MXCSR bit 6), 0 where the CPU has none

class FpChange:
    """One thread's FP control register around a change."""

    @property
    def before(self) -> int: ...  # the raw register before the change
    @property
    def after(self) -> int: ...  # the raw register read back after it

class TeamFpChange:
    """One OpenMP team thread and the change it made to its own register."""

    @property
    def member(self) -> TeamMember: ...  # the thread (omp_thread, tid, cpu)
    @property
    def change(self) -> FpChange: ...  # its register before and after

class TaskFpChange:
    """What a process-wide broadcast did to one task."""

    @property
    def tid(self) -> int: ...  # the task's thread id
    @property
    def reached(self) -> bool: ...  # it answered and its register was read back in time
    @property
    def changed(self) -> bool: ...  # the change was applied (also when unreached: its readback came late)
    @property
    def before(self) -> int: ...  # the raw register before the change (valid if changed or reached)
    @property
    def after(self) -> int: ...  # the raw register read back after it (valid if reached)
    @property
    def name(self) -> str: ...  # the task's comm at the time of the broadcast ("" if gone)

class FpBroadcast:
    """The report of one process-wide broadcast."""

    @property
    def signal(self) -> int: ...  # the real-time signal used (0: the caller was the only task)
    @property
    def tasks(self) -> list[TaskFpChange]: ...  # every live task, the caller included, by tid
    @property
    def handler_kept(self) -> bool: ...  # a signal of ours may still be pending somewhere
    @property
    def incomplete(self) -> str: ...  # why tasks born during the broadcast may be missing ("" if none)

class BroadcastHandlerState:
    """The broadcast's signal handler, now."""

    @property
    def signal(self) -> int: ...  # the signal it is installed on (0: none)
    @property
    def installed(self) -> bool: ...  # whether a handler of ours is installed
    @property
    def maybe_pending(self) -> list[int]: ...  # tasks that may still hold a signal of ours

def fp_control_register() -> str:
    """The register that holds FTZ/DAZ: "MXCSR", "FPCR", or "" where none is implemented."""

def fp_masks() -> FpMasks:
    """The FTZ and DAZ bits of the raw register."""

def fp_thread_apply(target: _Target) -> FpChange:
    """Apply target to the calling thread."""

def fp_omp_team_apply(
    kind: str, path: str, num_threads: int, default_target: _Target, per_tid: Mapping[int, _Target]
) -> list[TeamFpChange]:
    """Apply per_tid[tid] (else default_target) on every thread of an OpenMP team, each reading itself back."""

def fp_broadcast(
    default_target: _Target, per_tid: Mapping[int, _Target], deadline_s: float, only_listed: bool = False
) -> FpBroadcast:
    """Apply per_tid[tid] (else default_target) to every task (only_listed: those per_tid names) by a signal."""

def fp_broadcast_handler_state() -> BroadcastHandlerState:
    """The broadcast's signal handler, now."""

def signal_disposition(sig: int) -> str:
    """Disposition of sig: "default", "ignore", "benchctl" (the broadcast handler) or "other"."""

# -- library sampler (bind_sampler.cpp) ---------------------------------------------------------------------------

LIB_SAMPLER_MIN_PERIOD_US: int  # the shortest period lib_sampler_start accepts
LIB_SAMPLER_MAX_PERIOD_US: int  # the longest period lib_sampler_start accepts
LIB_SAMPLER_MAX_CAPACITY: int  # the most samples one window can store

class ObjectSamples:
    """The samples of one loaded object."""

    @property
    def path(self) -> str: ...  # the object's path (the main program by /proc/self/exe)
    @property
    def samples(self) -> int: ...  # weighted samples at addresses in its executable segments

class ThreadSamples:
    """The samples taken on one thread."""

    @property
    def tid(self) -> int: ...  # the thread's id
    @property
    def name(self) -> str: ...  # its comm when its timer was armed
    @property
    def samples(self) -> int: ...  # weighted samples taken on it (stored or dropped)

class LibSamples:
    """What one window of the library sampler saw."""

    @property
    def signal(self) -> int: ...  # the real-time signal the window used
    @property
    def period_ns(self) -> int: ...  # the timers' period, of each thread's CPU time
    @property
    def wall_ns(self) -> int: ...  # the window's length
    @property
    def user_ns(self) -> int: ...  # user CPU time of the process over the window (getrusage)
    @property
    def system_ns(self) -> int: ...  # system (kernel) CPU time of the process over the window
    @property
    def samples(self) -> int: ...  # weighted samples stored, mapped or not
    @property
    def unmapped(self) -> int: ...  # of those, at addresses in no loaded object (JIT code)
    @property
    def dropped(self) -> int: ...  # weighted samples taken after the buffer was full
    @property
    def objects(self) -> list[ObjectSamples]: ...  # samples by loaded object, most first
    @property
    def threads(self) -> list[ThreadSamples]: ...  # every thread timed, by tid
    @property
    def not_timed(self) -> int: ...  # threads no timer could be armed on
    @property
    def timer_error(self) -> str: ...  # the first refusal to time a live thread ("" if none)

def lib_sampler_start(period_us: int, capacity: int) -> int:
    """Time every thread every period_us of its CPU time, storing up to capacity samples; return the signal."""

def lib_sampler_stop() -> LibSamples:
    """Close the window: delete the timers, restore the signal, map the samples to objects."""

def lib_sampler_signal() -> int:
    """The signal of the open window, 0 when none is open."""

# -- trace functions (bind_trace.cpp) -----------------------------------------------------------------------------

class SetAsideTracing:
    """The trace and profile functions take_trace_functions() took off a thread."""

    @property
    def trace(self) -> object | None: ...  # the trace function's object (sys.gettrace() then); None: none/back
    @property
    def profile(self) -> object | None: ...  # the profile function's object (sys.getprofile() then); None: none/back
    def put_back(self, trace: bool, profile: bool) -> bool:
        """Put the slots asked for back as they were, each once; False (nothing changed) on another thread."""

def take_trace_functions() -> SetAsideTracing:
    """Take the calling thread's trace and profile functions off it (C tracers too), to put back exactly."""
