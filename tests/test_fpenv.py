"""FTZ/DAZ control per thread, per OpenMP team and per process, with readback."""

import json
import os
import queue
import signal
import threading
import time
import types
import warnings

import numpy as np
import pytest
import torch

from benchctl import _native, denormals, fpenv, omp
from benchctl._studies import flush_scopes

pytestmark = pytest.mark.skipif(not fpenv.supported()[0], reason=fpenv.supported()[1])

RT_SIGNALS = range(signal.SIGRTMIN, signal.SIGRTMAX + 1)
NUMEL = 4 << 20  # the 4M subnormals


class Worker:
    """A thread that runs the callables it is given and returns their results."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._results: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        self.tid = self.call(threading.get_native_id)

    def _loop(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                self._results.put((True, job()))
            except BaseException as e:  # handed back to the caller
                self._results.put((False, e))

    def call(self, fn, timeout=20.0):
        self._jobs.put(fn)
        ok, value = self._results.get(timeout=timeout)
        if not ok:
            raise value
        return value

    def stop(self):
        self._jobs.put(None)
        self.thread.join(20.0)


@pytest.fixture
def workers():
    made = []

    def make():
        w = Worker()
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop()


@pytest.fixture(autouse=True)
def clean_state():
    """Every test starts and ends with FTZ/DAZ off everywhere and torch at 2 threads."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    fpenv.set_flush_denormal(False, "process")
    yield
    torch.set_flush_denormal(False)
    fpenv.set_flush_denormal(False, "process")
    torch.set_num_threads(threads)


def subnormals(numel=NUMEL):
    return (torch.arange(numel, dtype=torch.int32) % 4096 + 0x00100000).view(torch.float32)


def nonzero_outputs(t):
    return int(((t.view(torch.int32) & 0x7FFFFFFF) != 0).sum())


def flushed(record):
    return record["reached"] and record["ftz"] and record["daz"] is not False


# -- the calling thread, bit by bit ------------------------------------------

def test_supported_names_the_register_and_thread_state_reads_it():
    ok, reason = fpenv.supported()
    assert ok and ("MXCSR" in reason or "FPCR" in reason)
    state = fpenv.thread_state()
    assert set(state) == {"ftz", "daz", "raw"} and isinstance(state["raw"], int)
    assert state["ftz"] is False


def test_ftz_flushes_subnormal_results_to_zero():
    tiny = np.array([2.0 ** -70], dtype=np.float32)  # normal; tiny*tiny = 2**-140 is subnormal
    with np.errstate(all="ignore"):
        try:
            assert fpenv.set_thread_state(ftz=True, daz=False) == {**fpenv.thread_state(), "ftz": True}
            assert (tiny * tiny)[0] == 0.0
            assert fpenv.set_thread_state(ftz=False, daz=False)["ftz"] is False
            assert (tiny * tiny)[0] == np.float32(2.0 ** -140) != 0.0
        finally:
            fpenv.set_thread_state(False, False)


@pytest.mark.skipif(fpenv.thread_state()["daz"] is None, reason="this CPU has no separate DAZ control")
def test_daz_reads_subnormal_inputs_as_zero():
    sub = np.array([0x00100000], dtype=np.int32).view(np.float32)  # 2**-129
    big = np.float32(2.0 ** 100)  # the product 2**-29 is normal: FTZ cannot touch it
    try:
        assert fpenv.set_thread_state(ftz=False, daz=True)["daz"] is True
        assert (sub * big)[0] == 0.0
        fpenv.set_thread_state(ftz=False, daz=False)
        assert (sub * big)[0] == np.float32(2.0 ** -29)
    finally:
        fpenv.set_thread_state(False, False)


def test_bad_arguments_are_refused_with_the_valid_choices():
    with pytest.raises(ValueError, match="'thread', 'openmp', 'process'"):
        fpenv.set_flush_denormal(True, scope="everything")
    with pytest.raises(ValueError, match="'thread', 'openmp', 'process'"):
        fpenv.census("threads")
    with pytest.raises(ValueError, match="'thread', 'openmp', 'process'"):
        fpenv.flush_denormals(True, scope="omp")
    with pytest.raises(TypeError, match="True or False"):
        fpenv.set_flush_denormal(1)
    with pytest.raises(ValueError, match="deadline_s"):
        fpenv.census("process", deadline_s=0)
    assert not any(r["ftz"] for r in fpenv.census())  # nothing half-applied


@pytest.mark.parametrize("deadline", [float("inf"), 1e300, float("nan"), 60.5, -1.0])
def test_a_deadline_must_be_finite_and_at_most_a_minute(deadline):
    with pytest.raises(ValueError, match="deadline_s"):
        fpenv.set_flush_denormal(True, "process", deadline_s=deadline)
    with pytest.raises(ValueError, match="deadline_s"):
        fpenv.flush_denormals(True, "process", deadline_s=deadline)
    # The native layer refuses too: a huge duration overflows its clock arithmetic.
    with pytest.raises(ValueError, match="deadline_s"):
        _native.fp_broadcast((True, True), {}, deadline)
    assert not any(r["ftz"] for r in fpenv.census())


# -- scopes ------------------------------------------------------------------

def test_census_scopes_cover_the_caller_the_team_and_every_task(workers):
    workers()
    me = threading.get_native_id()
    assert [r["tid"] for r in fpenv.census("thread")] == [me]
    team = fpenv.census("openmp")
    assert [r["tid"] for r in team] == [m["tid"] for m in omp.team_census()]
    assert [r["omp_thread"] for r in team] == list(range(len(team))) and len(team) == 2
    assert all(isinstance(r["cpu"], int) and r["cpu"] >= 0 for r in team)  # where each ran the region
    listed = {int(t) for t in os.listdir("/proc/self/task")}
    process = fpenv.census("process")
    assert {r["tid"] for r in process} >= listed and me in listed
    assert all(r["reached"] for r in process)
    for r in process:
        assert set(r) == {"tid", "name", "ftz", "daz", "raw", "reached"}
        with open(f"/proc/self/task/{r['tid']}/comm") as f:
            assert r["name"] == f.read().strip()


def test_process_scope_flushes_every_thread_and_switching_off_restores_subnormals():
    x = subnormals()
    out = torch.empty_like(x)
    torch.mul(x, 0.5, out=out)  # the team exists before the change, as in real programs
    records = fpenv.set_flush_denormal(True, "process")
    assert len(records) >= 2 and all(flushed(r) for r in records)
    assert all(flushed(r) for r in fpenv.census("process"))
    torch.mul(x, 0.5, out=out)
    assert nonzero_outputs(out) == 0
    records = fpenv.set_flush_denormal(False, "process")
    assert all(r["reached"] and not r["ftz"] and not r["daz"] for r in records)
    torch.mul(x, 0.5, out=out)
    assert denormals.count_subnormal(out) == NUMEL


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs for a 2-thread team to matter")
def test_torch_set_flush_denormal_leaves_the_openmp_workers_unflushed():
    x = subnormals()
    out = torch.empty_like(x)
    torch.mul(x, 0.5, out=out)
    torch.set_flush_denormal(True)
    team = fpenv.census("openmp")
    assert team[0]["ftz"]  # the calling thread is omp thread 0 and is flushed ...
    assert any(not r["ftz"] for r in team)  # ... its workers are not
    torch.mul(x, 0.5, out=out)
    assert nonzero_outputs(out) > 0


def test_openmp_scope_reaches_the_team_but_not_other_threads(workers):
    other = workers()
    x = subnormals()
    out = torch.empty_like(x)
    torch.mul(x, 0.5, out=out)
    team = fpenv.set_flush_denormal(True, "openmp")
    assert len(team) == 2 and all(flushed(r) for r in team)
    torch.mul(x, 0.5, out=out)
    assert nonzero_outputs(out) == 0
    assert other.call(fpenv.thread_state)["ftz"] is False
    by_tid = {r["tid"]: r for r in fpenv.census("process")}
    assert by_tid[other.tid]["ftz"] is False


def test_openmp_scope_from_another_python_thread_reaches_that_threads_own_team(workers):
    main_team = {r["tid"] for r in fpenv.census("openmp")}
    other = workers()
    team = other.call(lambda: fpenv.census("openmp"))
    assert team[0]["tid"] == other.tid and not main_team & {r["tid"] for r in team}

def test_a_thread_started_after_a_process_wide_change_inherits_it(workers):
    fpenv.set_flush_denormal(True, "process")
    born_after = workers()
    assert born_after.call(fpenv.thread_state)["ftz"] is True
    assert born_after.call(fpenv.thread_state)["daz"] is not False
    fpenv.set_flush_denormal(False, "process")
    assert workers().call(fpenv.thread_state)["ftz"] is False


def test_a_thread_blocking_the_signal_is_unreached_in_time_and_never_changed_late(workers):
    blocker = workers()
    blocker.call(lambda: signal.pthread_sigmask(signal.SIG_BLOCK, RT_SIGNALS))
    deadline = 0.3
    start = time.monotonic()
    records = fpenv.set_flush_denormal(True, "process", deadline_s=deadline)
    elapsed = time.monotonic() - start
    assert elapsed < deadline + 3.0  # returns; slack for a loaded machine
    by_tid = {r["tid"]: r for r in records}
    assert by_tid[blocker.tid]["reached"] is False and by_tid[blocker.tid]["ftz"] is None
    # Left alone, not changed-but-unconfirmed; the others read back as asked.
    assert records.unreached == [blocker.tid] and records.unconfirmed == [] and records.mismatched == []
    assert records.deadline_s == deadline and signal.SIGRTMIN <= records.signal <= signal.SIGRTMAX
    assert all(flushed(r) for t, r in by_tid.items() if t != blocker.tid)
    # Its signal is still pending, so the handler must stay: SIG_DFL would kill us.
    handler = fpenv.broadcast_handler()
    assert handler["installed"] and blocker.tid in handler["maybe_pending"]
    assert fpenv.signal_disposition(handler["signal"]) == "benchctl"
    # Unblocking delivers the stale signal: the process survives and the thread
    # stays as the report said, not flushed behind its back.
    blocker.call(lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, RT_SIGNALS))
    assert blocker.call(fpenv.thread_state)["ftz"] is False
    fpenv.set_flush_denormal(False, "process")
    assert fpenv.broadcast_handler() == {"signal": None, "installed": False, "maybe_pending": []}
    assert fpenv.signal_disposition(handler["signal"]) == "default"


def test_the_signal_is_a_free_one_and_the_applications_handler_is_left_alone(workers):
    workers()
    report = _native.fp_broadcast(None, {}, 1.0)
    sig = report.signal
    assert signal.SIGRTMIN <= sig <= signal.SIGRTMAX and not report.handler_kept and len(report.tasks) >= 2
    assert report.incomplete == ""
    assert fpenv.signal_disposition(sig) == "default"

    def app_handler(signum, frame):
        pass

    previous = signal.signal(sig, app_handler)
    try:
        again = _native.fp_broadcast((True, True), {}, 1.0)
        assert again.signal != sig and all(t.reached for t in again.tasks)
        assert signal.getsignal(sig) is app_handler and fpenv.signal_disposition(sig) == "other"
    finally:
        signal.signal(sig, previous)


def test_a_broadcast_can_be_limited_to_the_threads_it_names(workers):
    named, other = workers(), workers()
    tasks = _native.fp_broadcast(None, {named.tid: (True, True)}, 1.0, only_listed=True).tasks
    assert [(t.tid, t.reached, t.changed) for t in tasks] == [(named.tid, True, True)]
    assert named.call(fpenv.thread_state)["ftz"] is True
    assert other.call(fpenv.thread_state)["ftz"] is False and fpenv.thread_state()["ftz"] is False

def test_the_result_is_the_census_list_and_says_which_signal_carried_it(workers):
    workers()
    records = fpenv.set_flush_denormal(True, "process")
    assert isinstance(records, list) and json.loads(json.dumps(records)) == list(records)
    assert signal.SIGRTMIN <= records.signal <= signal.SIGRTMAX and records.scope == "process"
    assert records.unreached == records.unconfirmed == records.mismatched == []
    team = fpenv.set_flush_denormal(True, "openmp")
    assert team.scope == "openmp" and team.signal is None and team.mismatched == []


def test_readback_is_compared_and_unconfirmed_changes_are_told_apart(monkeypatch):
    ftz_daz = fpenv._FTZ_MASK | fpenv._DAZ_MASK
    def task(tid, reached, changed, after, name):  # a TaskFpChange, as the native broadcast reports one
        return types.SimpleNamespace(tid=tid, reached=reached, changed=changed, before=0, after=after, name=name)

    tasks = [
        task(101, True, True, ftz_daz, "as asked"),
        task(102, False, True, 0, "changed, readback late"),
        task(103, False, False, 0, "never answered"),
        task(104, True, True, 0, "read back unflushed"),
    ]
    report = types.SimpleNamespace(signal=62, tasks=tasks, handler_kept=False, incomplete="")
    monkeypatch.setattr(_native, "fp_broadcast", lambda *args: report)
    with pytest.warns(RuntimeWarning, match=r"threads \[104\] read back"):
        records = fpenv.set_flush_denormal(True, "process")
    assert [r["reached"] for r in records] == [True, False, False, True]
    assert (records.unconfirmed, records.unreached, records.mismatched) == ([102], [103], [104])
    assert records.signal == 62

@pytest.fixture
def every_rt_signal_taken():
    """Give every free real-time signal a handler of the application's, for the test's duration."""
    assert not fpenv.broadcast_handler()["installed"], "a stale broadcast handler would be reused"

    def app_handler(signum, frame):
        pass

    taken = {}
    try:
        for sig in RT_SIGNALS:
            if signal.getsignal(sig) == signal.SIG_DFL:
                taken[sig] = signal.signal(sig, app_handler)
        yield
    finally:
        for sig, previous in taken.items():
            signal.signal(sig, previous)


def test_a_change_that_cannot_start_leaves_every_thread_as_it_was(workers, every_rt_signal_taken):
    other = workers()
    with pytest.raises(RuntimeError, match="no free real-time signal"):
        fpenv.set_flush_denormal(True, "process")
    with pytest.raises(RuntimeError, match="no free real-time signal"):
        with fpenv.flush_denormals(True, "process"):
            pytest.fail("the block must not run")
    # Neither the caller (which the broadcast handles directly) nor anyone else changed.
    assert fpenv.thread_state()["ftz"] is False and fpenv.thread_state()["daz"] is not True
    assert other.call(fpenv.thread_state)["ftz"] is False
    assert not fpenv.broadcast_handler()["installed"]


# -- the context manager -----------------------------------------------------

def test_flush_denormals_restores_each_threads_own_state_after_an_exception(workers):
    own_flush, plain = workers(), workers()
    own_flush.call(lambda: fpenv.set_thread_state(True, fpenv.thread_state()["daz"] is not None))
    with pytest.raises(KeyError):
        with fpenv.flush_denormals(True, "process") as records:
            assert all(flushed(r) for r in records)
            raise KeyError("inside the block")
    by_tid = {r["tid"]: r for r in fpenv.census("process")}
    assert by_tid[own_flush.tid]["ftz"] is True
    assert by_tid[plain.tid]["ftz"] is False
    assert by_tid[threading.get_native_id()]["ftz"] is False
    with fpenv.flush_denormals(False, "process") as records:
        assert not any(r["ftz"] for r in records)
    assert own_flush.call(fpenv.thread_state)["ftz"] is True


def test_a_thread_born_inside_the_block_gets_the_state_it_would_have_inherited(workers):
    with fpenv.flush_denormals(True, "process"):
        born_inside = workers()
        assert born_inside.call(fpenv.thread_state)["ftz"] is True
    assert born_inside.call(fpenv.thread_state)["ftz"] is False


@pytest.mark.parametrize("scope", ["thread", "openmp"])
def test_narrow_scopes_restore_on_exit(scope):
    with pytest.raises(RuntimeError):
        with fpenv.flush_denormals(True, scope) as records:
            assert records and all(flushed(r) for r in records)
            raise RuntimeError("inside the block")
    assert not any(r["ftz"] for r in fpenv.census(scope))



def _entry_team_restored(entry_tids):
    """Each entry thread still alive reads back with FTZ off."""
    by_tid = {r["tid"]: r for r in fpenv.census("process")}
    return all(by_tid[t]["reached"] and by_tid[t]["ftz"] is False for t in entry_tids if t in by_tid)


def test_openmp_exit_restores_a_thread_that_left_the_team_inside_the_block():
    x = subnormals(1 << 16)
    torch.mul(x, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a thread not restored would warn
        with fpenv.flush_denormals(True, "openmp") as records:
            entry = [r["tid"] for r in records]
            torch.set_num_threads(1)
            torch.mul(x, 0.5)
    assert len(entry) == 2 and _entry_team_restored(entry)


def test_openmp_exit_on_another_thread_restores_the_entry_team(workers):
    torch.mul(subnormals(1 << 16), 0.5)
    manager = fpenv.flush_denormals(True, "openmp")
    entry = [r["tid"] for r in manager.__enter__()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # That thread's parallel regions run its own team, not the entry team.
        workers().call(lambda: manager.__exit__(None, None, None))
    assert len(entry) == 2 and _entry_team_restored(entry)


def test_openmp_exit_names_a_live_thread_it_could_not_restore(monkeypatch):
    torch.mul(subnormals(1 << 16), 0.5)
    manager = fpenv.flush_denormals(True, "openmp")
    entry = [r["tid"] for r in manager.__enter__()]
    torch.set_num_threads(1)
    # Every later way of reaching the parked worker fails to answer.
    monkeypatch.setattr(fpenv, "_apply_openmp", lambda default, per_tid, num_threads=0: ({}, []))
    monkeypatch.setattr(fpenv, "_apply_process", lambda *args, **kwargs: ({}, []))
    with pytest.warns(RuntimeWarning, match=r"could not restore threads \[.*%d" % entry[1]):
        manager.__exit__(None, None, None)
    monkeypatch.undo()
    fpenv.set_flush_denormal(False, "process")

def test_exiting_on_the_wrong_thread_keeps_the_blocks_exception_and_the_manager_active(workers):
    other = workers()
    manager = fpenv.flush_denormals(True, "thread")
    manager.__enter__()
    assert fpenv.thread_state()["ftz"] is True
    inflight = KeyError("the block's own error")
    # With an exception in flight: a warning, never a replacement of the exception.
    with pytest.warns(RuntimeWarning, match="thread that entered it"):
        assert other.call(lambda: manager.__exit__(KeyError, inflight, None)) is False
    # Without one: a clear error. Either way nothing was restored, so it stays active ...
    with pytest.raises(RuntimeError, match="thread that entered it"):
        other.call(lambda: manager.__exit__(None, None, None))
    assert fpenv.thread_state()["ftz"] is True
    # ... and the entering thread can still put its state back.
    assert manager.__exit__(None, None, None) is False
    assert fpenv.thread_state()["ftz"] is False
    with pytest.raises(RuntimeError, match="not active"):
        manager.__exit__(None, None, None)

# -- the benchmark's library, at a small size --------------------------------

def test_scope_comparison_shows_process_scope_flushing_everything_torch_not():
    result = flush_scopes.compare(numel=1 << 18, threads=2, repeats=2)
    m = {e["method"]: e for e in result["methods"]}
    assert m["none"]["outputs_flushed"] == 0.0 and m["none"]["threads_flushed"] == 0.0
    assert m["torch"]["team_flushed"] < 1.0 and m["torch"]["outputs_flushed"] < 1.0
    assert m["openmp"]["team_flushed"] == 1.0 and m["openmp"]["outputs_flushed"] == 1.0
    assert m["process"]["threads_flushed"] == 1.0 and m["process"]["outputs_flushed"] == 1.0
    assert not any(r["ftz"] for r in fpenv.census("process"))


def test_the_benchmark_library_refuses_bad_sizes():
    with pytest.raises(ValueError, match="numel must be >= 1"):
        flush_scopes.compare(numel=0)
    with pytest.raises(TypeError, match="threads must be an integer"):
        flush_scopes.compare(numel=16, threads=2.0)
    with pytest.raises(ValueError, match="idle_threads must be >= 0"):
        flush_scopes.toggle_cost(idle_threads=-1)
    with pytest.raises(ValueError, match="toggles must be >= 1"):
        flush_scopes.toggle_cost(toggles=0)


def test_toggle_cost_reaches_every_idle_thread():
    result = flush_scopes.toggle_cost(idle_threads=8, toggles=4)
    assert result["all_reached"] and result["threads"] >= 9 and result["ms_min"] > 0
    assert not any(r["ftz"] for r in fpenv.census("process"))


def test_the_benchmark_script_runs_at_a_tiny_size_and_prints_all_four_methods(tmp_path):
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "ftz_scope.py")
    out = tmp_path / "ftz_scope.json"
    run = subprocess.run(
        [sys.executable, script, "--numel", "65536", "--threads", "2", "--repeats", "2",
         "--idle-threads", "4", "--toggles", "2", "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [line.split()[0] for line in run.stdout.splitlines()[2:6]]
    assert rows == list(flush_scopes.METHODS) == ["none", "torch", "openmp", "process"]
    assert "process-wide toggle" in run.stdout
    doc = json.loads(out.read_text())
    assert [m["method"] for m in doc["scopes"]["methods"]] == rows and doc["toggle"]["toggles"] == 2

# -- architectures without an implementation ---------------------------------

UNSUPPORTED_DRIVER = r"""
#include <cstdio>
#include <stdexcept>
#include "fpenv.hpp"
#include "signal_broadcast.hpp"
int main() {
  using namespace benchctl;
  int refused = 0;
  try { fp_read(); } catch (const std::runtime_error&) { ++refused; }
  try { fp_broadcast(FpTarget{true, true, true}, {}, 0.1); } catch (const std::runtime_error&) { ++refused; }
  std::printf("register=[%s] ftz_mask=%llu refused=%d\n", fp_control_register(),
              static_cast<unsigned long long>(fp_masks().ftz), refused);
}
"""


def test_an_architecture_without_fp_control_builds_and_says_so(tmp_path):
    import shutil
    import subprocess

    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler on PATH")
    csrc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc")
    (tmp_path / "driver.cpp").write_text(UNSUPPORTED_DRIVER)
    exe = tmp_path / "driver"
    sources = [str(tmp_path / "driver.cpp")] + [
        os.path.join(csrc, f) for f in ("fpenv.cpp", "signal_broadcast.cpp", "omp_team.cpp")
    ]
    build = subprocess.run(
        [compiler, "-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror", "-DBENCHCTL_NO_FP_CONTROL",
         "-I", csrc, *sources, "-o", str(exe), "-ldl", "-pthread"],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert run.stdout.strip() == "register=[] ftz_mask=0 refused=2"


def test_python_reports_unsupported_and_refuses(monkeypatch):
    monkeypatch.setattr(fpenv, "_REGISTER", "")
    ok, reason = fpenv.supported()
    assert not ok and "no floating-point control register" in reason
    with pytest.raises(RuntimeError, match="unsupported"):
        fpenv.thread_state()
    with pytest.raises(RuntimeError, match="unsupported"):
        fpenv.set_flush_denormal(True)
