"""Accuracy tests of the tick clock against CLOCK_MONOTONIC_RAW.

Built for a noisy, shared 2-core VM: every bound is relative, and each
measurement keeps the best (least disturbed) of a few repeats.
"""

import itertools
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from benchctl import _native, clock


def test_selected_source_is_reported(clock_source):
    info = clock_source
    if info["requested"] == "clock_gettime":
        assert info["source"] == "clock_gettime" and info["frequency_hz"] == 1e9
    assert info["frequency_hz"] > 0
    assert info["reason"]
    assert _native.counter_ticks_in_use() == (info["source"] != "clock_gettime")
    if info["requested"] == "auto" and _native.counter_name():
        assert info["source"] == _native.counter_name(), info["reason"]


def _ticks_at_raw_ns() -> tuple[int, int]:
    """A tick reading and the reference clock at it: the middle of two reference reads around it (a preemption
    between one tick read and one reference read put 100 us of error into a 120 ms interval under load)."""
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
    ticks = clock.cycles()
    return ticks, (before + time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)) // 2


def test_to_ns_agrees_with_monotonic_raw_over_100ms(clock_source):
    errors = []
    for _ in range(5):
        c0, r0 = _ticks_at_raw_ns()
        time.sleep(0.12)
        c1, r1 = _ticks_at_raw_ns()
        assert r1 - r0 >= 100_000_000
        errors.append(abs(clock.to_ns(c1 - c0) / (r1 - r0) - 1))
    assert min(errors) < 1e-3, f"relative errors {errors}"


def test_monotonic_across_cpus(clock_source, record_property):
    cpus = sorted(os.sched_getaffinity(0))
    original = os.sched_getaffinity(0)
    readings = []
    try:
        for _ in range(50):
            for cpu in cpus:
                os.sched_setaffinity(0, {cpu})
                readings.append((cpu, clock.cycles()))
    finally:
        os.sched_setaffinity(0, original)
    values = np.array([v for _, v in readings], dtype=np.uint64).astype(np.float64)
    steps = np.diff(values)
    assert (steps >= 0).all(), "the tick source went backwards across a CPU switch"
    largest_ns = clock.to_ns(float(steps.max()))
    record_property("largest_cross_cpu_step_ns", largest_ns)
    print(f"{len(cpus)} CPUs, {len(readings)} reads, largest cross-CPU step {largest_ns:.0f} ns")


def _reported_and_remeasured(source, key, measure):
    """(independent measurement, reported value) pairs, stopping at the first that agree.

    The back-to-back cost itself moves on this VM (clock_gettime: 20 or 29 ns,
    switching within a second), so each attempt selects the source again
    (which measures the reported value) right before the independent
    measurement, and the best-agreeing attempt is judged.
    """
    pairs = []
    for _ in range(5):
        clock._configure(source)
        reported = clock.info()[key]
        again = min(measure(20_000) for _ in range(3))
        pairs.append((again, reported))
        if _agree(again, reported):
            break
    return pairs


def _agree(again, reported):
    return abs(again - reported) <= max(3, 0.25 * reported)


def test_read_overhead_matches_back_to_back_reads(clock_source):
    source = clock_source["requested"]
    assert 1 <= clock_source["read_overhead_cycles"] <= 500
    # An independent native measurement agrees within noise...
    pairs = _reported_and_remeasured(source, "read_overhead_cycles", _native.measure_read_overhead)
    assert any(_agree(*p) for p in pairs), pairs
    reported = clock.info()["read_overhead_cycles"]
    # ...and a pair of reads from Python (with the interpreter between them)
    # can only take longer.
    begin, end = _native.cycles_begin, _native.cycles_end
    from_python = min(-begin() + end() for _ in range(20_000))
    assert reported <= from_python
    # The same holds for the fenced read that time_calls chains.
    assert 1 <= clock_source["chained_read_overhead_cycles"] <= 500
    pairs = _reported_and_remeasured(source, "chained_read_overhead_cycles",
                                     _native.measure_chained_read_overhead)
    assert any(_agree(*p) for p in pairs), pairs
    with pytest.raises(ValueError):
        _native.measure_read_overhead(0)
    with pytest.raises(ValueError):
        _native.measure_chained_read_overhead(0)


def test_calibration_agrees_with_chosen_frequency():
    if not _native.counter_name():
        pytest.skip("no cycle counter on this architecture")
    runs = [_native.calibrate_counter(50_000_000) for _ in range(4)]
    for run in runs:
        assert run.duration_ns >= 50_000_000
        assert run.uncertainty_ppm < 100
    # The stated uncertainty is honest: independent calibrations agree within
    # their combined uncertainty (best-agreeing pair of each run with the rest).
    for i, run in enumerate(runs):
        gaps = [abs(run.hz / other.hz - 1) * 1e6 - (run.uncertainty_ppm + other.uncertainty_ppm)
                for j, other in enumerate(runs) if j != i]
        assert min(gaps) <= 0, runs
    selected = clock.info()
    if selected["source"] != "clock_gettime":
        assert abs(runs[0].hz / selected["frequency_hz"] - 1) < 1e-3
    with pytest.raises(ValueError):
        _native.calibrate_counter(10)


def test_frequency_source_follows_the_documented_order():
    nominal = _native.counter_nominal_frequencies()
    for stated in nominal:
        assert isinstance(stated.source, str) and stated.hz > 1e6 and stated.uncertainty_ppm >= 0
    invariant = _native.cpuid_invariant_tsc()
    assert invariant is None or isinstance(invariant, bool)
    info = clock.info()
    if info["source"] == "clock_gettime":
        assert info["frequency_source"].startswith("definition")
        return
    trusted = [stated.source for stated in nominal if stated.source != "cpuid_0x16"]
    if trusted:
        assert info["frequency_source"] == trusted[0]
    else:
        assert info["frequency_source"].startswith(("sysfs", "calibrated", "cpuid_0x16 (confirmed"))


@pytest.mark.parametrize("k", [10_000, 1_000_000, 10_000_000])
def test_busy_wait_is_timed_to_one_percent(clock_source, unpreempted, k):
    # Alternate K-tick and 0-tick waits inside one timing loop: the 0-tick
    # calls measure the call overhead under the same conditions (drift, load),
    # so median(K) - median(0) must be K within 1%. The callable is C all the
    # way down (starmap over the native wait): a Python frame in front of the
    # wait runs slower after a K-tick spin than after a 0-tick one on a shared
    # host, so each 0-tick call (always after a spin) would pay more overhead
    # than the K-tick call it is the reference for (-4% at 10,000 ticks here).
    pairs = {10_000: 1000, 1_000_000: 30, 10_000_000: 7}[k]
    errors = []
    for _ in range(7):  # keep the least disturbed attempt (VM steal time)
        waits = itertools.starmap(clock.busy_wait_cycles, itertools.cycle([(k,), (0,)]))
        samples = clock.time_calls(waits.__next__, 2 * pairs, warmup=0)
        timed_k, overhead = np.median(samples[0::2]), np.median(samples[1::2])
        assert timed_k >= k
        errors.append((timed_k - overhead - k) / k)
    assert min(errors, key=abs) == pytest.approx(0, abs=0.01), errors


def test_busy_wait_returns_elapsed_ticks(clock_source):
    elapsed = clock.busy_wait_cycles(5_000)
    assert elapsed >= 5_000
    assert clock.busy_wait_cycles(0) < 5_000


def test_sleep_is_never_under_reported(clock_source):
    samples = clock.to_ns(clock.time_calls(lambda: time.sleep(0.01), 5, warmup=0))
    assert samples.shape == (5,)
    assert (samples >= 10_000_000).all(), samples


def test_time_calls_returns_int64_without_negative_samples(clock_source):
    out = clock.time_calls(lambda: None, 1000, warmup=10)
    assert out.dtype == np.int64 and out.shape == (1000,)
    assert (out >= 0).all()


def test_time_calls_propagates_exceptions():
    def boom():
        raise KeyError("from the callable")

    with pytest.raises(KeyError, match="from the callable"):
        clock.time_calls(boom, 3)


def test_stopwatch_records_also_when_the_block_raises(clock_source):
    with clock.Stopwatch() as sw:
        clock.busy_wait_cycles(100_000)
    assert sw.ticks >= 100_000 and sw.ns == pytest.approx(clock.to_ns(sw.ticks))
    with pytest.raises(RuntimeError):
        with clock.Stopwatch() as failed:
            raise RuntimeError("inside")
    assert failed.ticks is not None and failed.ticks >= 0
    assert "not run" in repr(clock.Stopwatch())


def test_to_ns_scalars_and_arrays():
    hz = clock.info()["frequency_hz"]
    assert clock.to_ns(0) == 0.0
    assert clock.to_ns(int(hz)) == pytest.approx(1e9)
    arr = clock.to_ns(np.array([0, int(hz)], dtype=np.int64))
    assert arr.dtype == np.float64 and arr[1] == pytest.approx(1e9)
    assert clock.to_ns([1, 2]).shape == (2,)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: clock.time_calls(42, 3), TypeError),
        (lambda: clock.time_calls(lambda: None, 0), ValueError),
        (lambda: clock.time_calls(lambda: None, -5), ValueError),
        (lambda: clock.time_calls(lambda: None, 2.5), TypeError),
        (lambda: clock.time_calls(lambda: None, 3, warmup=-1), ValueError),
        (lambda: clock.busy_wait_cycles(-1), ValueError),
        (lambda: clock.busy_wait_cycles(True), TypeError),
        (lambda: clock.to_ns(-1), ValueError),
        (lambda: clock.to_ns(np.array([5, -1])), ValueError),
        (lambda: clock.to_ns("12"), TypeError),
        (lambda: clock._configure("bogus"), ValueError),
    ],
)
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def _run_python(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_environment_variable_forces_the_fallback():
    out = _run_python(
        "from benchctl import clock; i = clock.info(); print(i['source'], '|', i['reason'])",
        BENCHCTL_CLOCK="clock_gettime",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("clock_gettime |") and "forced" in out.stdout


def test_invalid_environment_variable_fails_clearly_at_first_use_not_at_import():
    out = _run_python("import benchctl.clock as c\n"
                      "try:\n    c.info()\nexcept Exception as e:\n    print(type(e).__name__, e)",
                      BENCHCTL_CLOCK="sundial")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith("ArgumentError BENCHCTL_CLOCK='sundial' is not one of")
    cli = subprocess.run([sys.executable, "-m", "benchctl", "clock"], env={**os.environ, "BENCHCTL_CLOCK": "sundial"},
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert cli.stderr.startswith("clock: BENCHCTL_CLOCK='sundial' is not one of") and "unset it" in cli.stderr


def test_counter_selection_reads_back():
    before = _native.counter_ticks_in_use()
    try:
        if _native.counter_name():
            _native.use_counter_ticks(True)
            assert _native.counter_ticks_in_use() is True
        else:
            with pytest.raises(RuntimeError, match="no supported cycle counter"):
                _native.use_counter_ticks(True)
        _native.use_counter_ticks(False)
        assert _native.counter_ticks_in_use() is False
    finally:
        _native.use_counter_ticks(before)


def test_cli_describes_the_clock():
    out = subprocess.run([sys.executable, "-m", "benchctl", "clock", "--json", "-"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '"frequency_source"' in out.stdout
