"""Where the CPU time goes, by library: the native sampler (csrc/lib_sampler.cpp) on workloads whose split is
known, its signal handling, the split's arithmetic and words, the probe that records it in the probe worker,
and the Python-time cause that reads it.

Each workload runs until it used a fixed amount of CPU time, so a loaded machine makes it slower, not
smaller; the bounds are relative (one kind against the rest), as the split moves with what else runs."""

import json
import mmap
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace

import numpy as np
import pytest
import torch

from benchctl import _libsplit, _native, probes
from benchctl._causes.python_time import probe as split_probe
from benchctl._causes.python_time import rule as python_time
from benchctl._libsplit import Kind, KindSamples, LibrarySplit, sampling
from benchctl._probe import ProbedCall
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts, OpRow, PyFrame
from benchctl._results.findings import Status
from synthetic_results import make_doc

CPU_S = 0.6  # CPU time each known workload runs for


def _for_cpu_time(step, seconds=CPU_S, clock=time.process_time):
    started = clock()
    while clock() - started < seconds:
        step()


def _python_loop():
    total = 0
    for i in range(20_000):
        total += i * i
    return total


def _touch_fresh_pages():
    # Anonymous memory, one byte written per page: each write faults a fresh page in, and the kernel zeroes it.
    region = mmap.mmap(-1, 32 << 20)
    pages = np.frombuffer(region, dtype=np.uint8)
    pages[::mmap.PAGESIZE] = 1
    del pages
    region.close()


@pytest.fixture
def torch_threads():
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def _loaded_paths() -> set[str]:
    with open("/proc/self/maps") as f:
        return {line.split(maxsplit=5)[5].strip() for line in f if len(line.split(maxsplit=5)) == 6}


# -- kinds --------------------------------------------------------------------------------------------------------

def test_the_objects_this_process_loaded_are_named_by_kind():
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    np.ones((2, 2)) @ np.ones((2, 2))
    found = {}
    for path in _loaded_paths():
        found.setdefault(_libsplit.kind(path), set()).add(os.path.basename(path))

    def named(k, prefix):
        return any(name.startswith(prefix) for name in found.get(k, ()))

    assert named(Kind.TORCH_CPU, "libtorch_cpu") and named(Kind.TORCH_PYTHON, "libtorch_python")
    assert named(Kind.TORCH_OTHER, "libc10")
    assert named(Kind.OPENMP, "libgomp") or named(Kind.OPENMP, "libiomp") or named(Kind.OPENMP, "libomp")
    assert named(Kind.OPENBLAS, "libscipy_openblas") or named(Kind.OPENBLAS, "libopenblas")
    assert named(Kind.NUMPY, "_multiarray_umath") and named(Kind.LIBC, "libc.so")
    assert os.path.basename(_native.__file__) in found[Kind.BENCHCTL]
    assert _libsplit.kind(os.path.realpath(sys.executable)) is Kind.INTERPRETER
    assert _libsplit.kind("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30") is Kind.OTHER
    # As the loader names numpy's bundled BLAS, with the ``..`` left in.
    assert _libsplit.kind("/sp/numpy/_core/../../numpy.libs/libscipy_openblas64_-32a4b2a6.so") is Kind.OPENBLAS
    assert _libsplit.kind("/sp/torch.libs/libgomp-a34b3233.so.1") is Kind.OPENMP
    assert _libsplit.kind("/opt/py/lib/libpython3.12.so.1.0") is Kind.INTERPRETER


# -- known splits -------------------------------------------------------------------------------------------------

def test_a_pure_python_loop_is_the_interpreters():
    with sampling() as window:
        _for_cpu_time(_python_loop, clock=time.thread_time)
    split = window.result
    assert split.share(Kind.INTERPRETER) > 0.7, split.text()
    assert abs(sum(v for _, v in split.shares()) - 1.0) < 1e-9  # the kernel's and the libraries' shares add up
    assert split.text().startswith(f"{Kind.INTERPRETER.value} ")


def test_a_torch_product_is_libtorch_cpu_and_its_blas(torch_threads):
    torch_threads(1)  # before the numpy test: its OpenBLAS pool spins a while after its product
    b, c = torch.randn(768, 768), torch.empty(768, 768)
    # Into one buffer: a fresh result each call would fault its pages in (kernel time, the allocator's), which
    # under the sanitizers' allocator is a third of the time, and the product is what is known here.
    with sampling() as window:
        _for_cpu_time(lambda: torch.mm(b, b, out=c))
    split = window.result
    torch_code = sum(split.share(k) or 0.0 for k in (Kind.TORCH_CPU, Kind.TORCH_OTHER, Kind.UNNAMED))
    assert torch_code > 0.6, split.text()
    assert split.share(Kind.INTERPRETER) < torch_code / 4, split.text()


def test_a_numpy_float64_product_is_openblas():
    a = np.random.default_rng(0).standard_normal((1024, 1024))
    c = np.empty_like(a)
    with sampling() as window:
        _for_cpu_time(lambda: np.matmul(a, a, out=c))  # into one buffer, as the torch product
    split = window.result
    assert split.shares()[0][0] is Kind.OPENBLAS and split.share(Kind.OPENBLAS) > 0.5, split.text()


def test_faulting_fresh_pages_in_is_the_kernels():
    with sampling() as window:
        _for_cpu_time(_touch_fresh_pages, clock=time.thread_time)
    split = window.result
    assert split.share(Kind.KERNEL) > 0.5, split.text()
    assert split.shares()[0][0] is Kind.KERNEL


# -- threads ------------------------------------------------------------------------------------------------------

def test_a_thread_started_inside_the_window_is_sampled():
    worker = threading.Thread(target=_for_cpu_time, args=(_python_loop, CPU_S / 2, time.thread_time))
    with sampling() as window:
        worker.start()  # born after the timers were armed: the helper thread finds it
        worker.join()
    seen = {t.tid: t.samples for t in window.result.threads}
    assert seen.get(worker.native_id, 0) > 0, window.result.threads
    assert window.result.threads_seen >= 1


def test_torchs_intra_op_threads_are_sampled(torch_threads):
    torch_threads(2)
    b = torch.randn(1024, 1024)
    torch.mm(b, b)  # the team exists before the window
    with sampling() as window:
        _for_cpu_time(lambda: torch.mm(b, b))
    main = threading.get_native_id()
    others = [t for t in window.result.threads if t.tid != main and t.samples > 0]
    assert others, window.result.threads
    assert window.result.threads_seen >= 2


# -- the signal ---------------------------------------------------------------------------------------------------

def test_the_signal_is_ours_only_inside_the_window_also_after_an_exception():
    with sampling() as window:
        assert _native.signal_disposition(window.signal) == "other"
        assert _libsplit.open_signal() == window.signal
        assert window.result is None
    assert _native.signal_disposition(window.signal) == "default" and _libsplit.open_signal() == 0
    with pytest.raises(KeyError):
        with sampling() as failed:
            _python_loop()
            raise KeyError("inside the window")
    assert _native.signal_disposition(failed.signal) == "default" and _libsplit.open_signal() == 0
    assert failed.result is not None and failed.result.period_ns == _libsplit.PERIOD_US * 1000


def _timers_on(sig: int) -> int | None:
    """POSIX timers of this process that deliver ``sig`` (None: the kernel does not list them)."""
    try:
        with open("/proc/self/timers") as f:
            return sum(1 for line in f if line.startswith(f"signal: {sig}/"))
    except OSError:
        return None


def test_the_timers_are_deleted_when_the_window_closes():
    with sampling() as window:
        during = _timers_on(window.signal)
    if during is None:
        pytest.skip("this kernel lists no /proc/self/timers")
    assert during == len(window.result.threads) > 0
    assert _timers_on(window.signal) == 0


def test_a_child_forked_inside_a_window_starts_with_none_open():
    with sampling() as window:
        pid = os.fork()
        if pid == 0:  # the child: no timers, the disposition restored, and a window of its own works
            ok = _native.lib_sampler_signal() == 0 and _native.signal_disposition(window.signal) == "default"
            with sampling() as own:
                _for_cpu_time(_python_loop, 0.05, time.thread_time)
            os._exit(0 if ok and own.result.sampled and _timers_on(own.signal) in (0, None) else 1)
        _, status = os.waitpid(pid, 0)
        assert _native.signal_disposition(window.signal) == "other"  # the parent's window is still open
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_handler_the_application_installed_is_neither_taken_nor_disturbed():
    taken = signal.SIGRTMAX - 1  # where the sampler would look first
    got = []
    previous = signal.signal(taken, lambda signum, frame: got.append(signum))
    try:
        with sampling() as window:
            assert window.signal not in (taken, signal.SIGRTMAX)  # SIGRTMAX: where the FP broadcast looks first
            _for_cpu_time(_python_loop, 0.05, time.thread_time)
        signal.pthread_kill(threading.get_ident(), taken)
        assert got == [taken]
    finally:
        signal.signal(taken, previous)


def test_the_fp_broadcast_runs_beside_an_open_window_on_another_signal():
    if not _native.fp_control_register():
        pytest.skip("no FP control register implemented on this architecture")
    with sampling() as window:
        threading.Thread(target=time.sleep, args=(0.2,)).start()  # a second task for the broadcast to signal
        report = _native.fp_broadcast(None, {}, 1.0)  # read only
        assert report.signal not in (0, window.signal)
        assert all(t.reached for t in report.tasks), report  # the sampler's helper thread too


def test_starting_twice_is_refused_and_the_open_window_goes_on():
    with sampling() as window:
        with pytest.raises(RuntimeError, match="already running"):
            with sampling():
                pass
        _for_cpu_time(_python_loop, 0.1, time.thread_time)
    assert window.result.sampled


def test_stopping_without_a_window_and_bad_arguments_are_refused():
    with pytest.raises(RuntimeError, match="not running"):
        _native.lib_sampler_stop()
    with pytest.raises(ValueError, match="period_us"):
        _native.lib_sampler_start(_native.LIB_SAMPLER_MIN_PERIOD_US - 1, 1)
    with pytest.raises(ValueError, match="period_us"):
        _native.lib_sampler_start(_native.LIB_SAMPLER_MAX_PERIOD_US + 1, 1)
    with pytest.raises(ValueError, match="capacity"):
        _native.lib_sampler_start(_libsplit.PERIOD_US, _native.LIB_SAMPLER_MAX_CAPACITY + 1)
    assert _native.lib_sampler_signal() == 0


def test_samples_beyond_the_buffer_are_counted_as_dropped():
    with sampling(capacity=1) as window:
        _for_cpu_time(_python_loop, 0.1, time.thread_time)
    split = window.result
    # One sample stored (weighted by its overruns), the rest counted only.
    assert 0 < split.samples < split.dropped and "dropped" in split.text()
    assert split.samples + split.dropped == sum(t.samples for t in split.threads)


def test_the_native_record_carries_the_window_and_reads_back_as_the_split():
    sig = _native.lib_sampler_start(_libsplit.PERIOD_US, _libsplit.CAPACITY)
    _for_cpu_time(_python_loop, 0.2, time.thread_time)
    raw = _native.lib_sampler_stop()
    assert raw.signal == sig and raw.period_ns == _libsplit.PERIOD_US * 1000 and raw.dropped == 0
    assert repr(raw.objects[0]).startswith(f"ObjectSamples(path={raw.objects[0].path!r}, samples=")
    assert repr(raw.threads[0]).startswith(f"ThreadSamples(tid={raw.threads[0].tid}, name=")
    assert raw.samples == sum(o.samples for o in raw.objects) + raw.unmapped
    assert raw.user_ns > 0 and raw.wall_ns > 0 and raw.not_timed == 0 and raw.timer_error == ""
    split = LibrarySplit.from_native(raw)
    assert split.samples == raw.samples and split.cpu_ns == raw.user_ns + raw.system_ns
    assert sum(s.samples for s in split.kinds) == raw.samples


def test_a_window_that_only_sleeps_says_no_cpu_time_was_sampled():
    # A fresh process: no pool left spinning by the tests before. The window's own helper thread takes 1-2 ms of
    # CPU time over it (under the sanitizers' runtime), which one sample can land in: the window says what
    # little it saw, never divides by nothing.
    code = ("import time\nfrom benchctl._libsplit import Kind, sampling\nwith sampling() as w:\n    time.sleep(0.3)\n"
            "print(w.result.text())\nprint(w.result.samples)\nprint(w.result.cpu_ns)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text, samples, cpu_ns = out.stdout.splitlines()
    assert int(cpu_ns) < 0.3e9 / 10 and int(samples) <= 3, out.stdout
    assert text.startswith("no CPU time sampled (") or int(samples) > 0, out.stdout
    nothing = _split()  # no sample at all: the sentence says so, and no share is made up
    assert nothing.text().startswith("no CPU time sampled (") and nothing.share(Kind.INTERPRETER) is None


# -- the split's words and its results file -----------------------------------------------------------------------

def _split(**samples) -> LibrarySplit:
    kinds = tuple(KindSamples(Kind[name], n) for name, n in samples.items())
    total = sum(samples.values())
    return LibrarySplit(kinds=kinds, samples=total, cpu_ns=total * 1_000_000, kernel_ns=0, wall_ns=total * 1_000_000,
                        period_ns=1_000_000)


def test_the_sentence_lists_kinds_largest_first_with_the_kernel():
    split = LibrarySplit(kinds=(KindSamples(Kind.OPENMP, 30), KindSamples(Kind.TORCH_CPU, 60)), samples=90,
                         cpu_ns=100, kernel_ns=10, period_ns=1)
    assert split.text() == "libtorch_cpu 60%, OpenMP runtime 30%, kernel 10%"
    assert LibrarySplit.not_sampled("no timers here").text() == "not sampled: no timers here"
    assert LibrarySplit().share(Kind.KERNEL) is None and LibrarySplit().share(Kind.OPENBLAS) is None


def test_the_lower_end_of_a_share_narrows_with_its_samples():
    # 11 of 28 samples (39%): the 95% Wilson interval's lower end, 23.6%, by hand; 10x the samples, 33.7%.
    few, many = _split(OPENMP=11, TORCH_CPU=17), _split(OPENMP=110, TORCH_CPU=170)
    assert few.share_at_least(Kind.OPENMP) == pytest.approx(0.2357, abs=1e-3)
    assert many.share_at_least(Kind.OPENMP) == pytest.approx(0.3375, abs=1e-3)
    assert few.share(Kind.OPENMP) == many.share(Kind.OPENMP)
    kernel = LibrarySplit(kinds=(KindSamples(Kind.OPENMP, 110), KindSamples(Kind.TORCH_CPU, 170)), samples=280,
                          cpu_ns=100, kernel_ns=20, period_ns=1)
    assert kernel.share_at_least(Kind.OPENMP) == pytest.approx(0.3375 * 0.8, abs=1e-3)  # of the user time only
    assert few.share_at_least(Kind.KERNEL) is None and LibrarySplit().share_at_least(Kind.OPENMP) is None
    assert _split(OPENMP=0, TORCH_CPU=5).share_at_least(Kind.OPENMP) == pytest.approx(0.0, abs=1e-12)


def test_the_split_survives_json_and_asdict():
    with sampling() as window:
        _for_cpu_time(_python_loop, 0.1, time.thread_time)
    split = window.result
    assert LibrarySplit.from_json(json.loads(json.dumps(split.to_json()))) == split
    assert LibrarySplit.from_json(asdict(split)) == split


# -- the probe ----------------------------------------------------------------------------------------------------

def test_the_probe_is_registered_and_records_what_its_watch_sampled():
    probe = split_probe.PROBE
    assert probe in probes.PROBES
    with probe.watch() as watched:
        _for_cpu_time(_python_loop, 0.1, time.thread_time)
    note = probe.record(ProbedCall(watched={probe.key: watched}))
    fact = probe.read(json.loads(json.dumps(note)))
    assert isinstance(fact, LibrarySplit) and fact.sampled and fact == watched.result
    assert probe.record(ProbedCall()) == {} and probe.read({}) is None  # a workload that times itself
    facts = Facts(phases=["run"], probed={probe.key: fact})
    assert Facts.from_json(json.loads(json.dumps(facts.to_json()))).of(probe) == fact


def test_the_probe_says_why_when_the_sampler_cannot_start():
    probe = split_probe.PROBE
    with sampling():
        with probe.watch() as watched:
            pass
    fact = probe.read(probe.record(ProbedCall(watched={probe.key: watched})))
    assert not fact.sampled and "already running" in fact.unsampled and "already running" in fact.text()


# -- the Python-time cause ----------------------------------------------------------------------------------------

def _frame(function: str) -> PyFrame:
    return PyFrame(function, "built-in", 41_000.0, 1, False, "run (plant.py:12)")


def _facts(split: LibrarySplit | None, **changes) -> Facts:
    table = (OpRow("aten::mm", ("float",), 1, 5_000.0, 5_000.0),)
    probed = {} if split is None else {split_probe.PROBE.key: split}
    return Facts(**{"phases": ["run"], "median_ms": {"run": 45.0}, "op_table": table, "call_wall_us": 50_000.0,
                    "probed": probed, **changes})


def _judge(facts: Facts):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="run", control=True))
    return python_time.PythonTime().judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=facts))


def test_numpys_blas_beside_torchs_ops_is_named_and_not_called_python():
    split = _split(OPENBLAS=70, OPENMP=20, INTERPRETER=10)
    found = _judge(_facts(split))
    assert found.status is Status.UNCONFIRMED, found.message
    assert f"yet {Kind.OPENBLAS.value} held 70% of that CPU time, more than Python" in found.message
    assert split.text() in found.message and python_time.MECHANISM not in found.message
    assert found.evidence["library_split"] == split.text()
    assert found.evidence["library_shares"][Kind.OPENBLAS.value] == pytest.approx(0.7)


def test_an_unnamed_library_holding_the_time_is_named_by_its_object():
    libz = _libsplit.ObjectSamples("/usr/lib/x86_64-linux-gnu/libz.so.1.2.13", Kind.OTHER, 60)
    split = replace(_split(OTHER=60, INTERPRETER=30, TORCH_CPU=10), objects=(libz,))
    found = _judge(_facts(split))
    assert found.status is Status.UNCONFIRMED
    assert "yet other libraries (mostly libz.so.1.2.13) held 60% of that CPU time" in found.message
    assert split.text().startswith("other libraries (mostly libz.so.1.2.13) 60%, ")  # not "other 60%" in the split


def test_python_holding_the_time_outside_the_ops_is_a_cause_quoting_the_split():
    split = _split(INTERPRETER=66, NUMPY=15, TORCH_PYTHON=9, LIBC=5, TORCH_CPU=5)  # tensor_from_list.py's shape
    found = _judge(_facts(split))
    assert found.status is Status.CAUSE, found.message
    assert split.text() in found.message and python_time.MECHANISM in found.message
    # With a split, cProfile's torch.mm on top no longer speaks for another library: the split does.
    mm = _facts(split, python_frames=(_frame("torch.mm"),))
    assert _judge(mm).status is Status.CAUSE


def test_without_a_split_the_cause_judges_as_before_and_says_why():
    unsampled = LibrarySplit.not_sampled("no free real-time signal")
    for split, why in ((unsampled, "not sampled: no free real-time signal"), (None, "no library split was recorded")):
        found = _judge(_facts(split, python_frames=(_frame("torch.tensor"),)))
        assert found.status is Status.CAUSE and why in found.evidence["library_split"]
        assert "by library" not in found.message
        assert _judge(_facts(split, python_frames=(_frame("torch.mm"),))).status is Status.UNCONFIRMED
    silent = _split()  # sampled, but no sample: as unsampled
    assert "no CPU time sampled" in _judge(_facts(silent)).evidence["library_split"]
