"""The run delay: the time this process's threads waited on a run queue (benchctl._run_delay), and its place
among the counters."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest

from benchctl import _procfs
from benchctl._run_delay import RunDelay
from benchctl.counters import CounterGroup, delta

# hashlib releases the GIL on data this large: two threads hashing it both want a CPU at once.
_DATA = bytes(8 << 20)


def _hash_on(cpu: int, seconds: float, ready: threading.Barrier, done: threading.Barrier,
             leave: threading.Event) -> None:
    os.sched_setaffinity(0, {cpu})  # this thread only (a thread's own id is 0 here)
    ready.wait()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hashlib.sha256(_DATA).digest()
    done.wait()
    leave.wait()


def _threads_on(n: int, cpu: int, seconds: float, read) -> None:
    """``n`` threads hash on ``cpu`` for ``seconds``; ``read()`` is called once all are done, before they exit
    (a thread made and gone between two reads is never seen)."""
    ready, done, leave = threading.Barrier(n), threading.Barrier(n + 1), threading.Event()
    threads = [threading.Thread(target=_hash_on, args=(cpu, seconds, ready, done, leave)) for _ in range(n)]
    for t in threads:
        t.start()
    done.wait()
    read()
    leave.set()
    for t in threads:
        t.join()


def _waited(threads: int, seconds: float) -> tuple[float, float]:
    """(seconds waited while ``threads`` threads hashed on one CPU for ``seconds``, seconds waited by the
    time they have exited), read by a reader made before them."""
    reader = RunDelay()
    assert reader.available and reader.why == ""
    before = reader.read()
    during = []
    _threads_on(threads, min(os.sched_getaffinity(0)), seconds, lambda: during.append(reader.read()))
    after = reader.read()
    reader.close()
    return (during[0] - before) / 1e9, (after - before) / 1e9


def test_two_threads_on_one_cpu_wait_for_it_and_one_alone_does_not():
    # Two threads that both want one CPU for 0.6 s: one waits while the other runs, ~0.6 s in all (0.60-0.61 s
    # here); one thread alone waits ~0 (under 4 ms), though it used a CPU as long. Both were made after the
    # reader: their waits count, and stay counted once they have exited.
    two, two_after = _waited(2, 0.6)
    one, _ = _waited(1, 0.6)
    assert two >= 0.5 * 0.6 and two_after >= two, (two, two_after)
    assert one <= 0.2 * 0.6, one


def test_the_count_never_falls_when_threads_exit():
    reader = RunDelay()
    seen = [reader.read()]
    for _ in range(3):
        _threads_on(2, min(os.sched_getaffinity(0)), 0.05, lambda: seen.append(reader.read()))
        seen.append(reader.read())
    reader.close()
    assert seen == sorted(seen), seen


def test_a_kernel_without_schedstat_gives_none_and_says_why(tmp_path, monkeypatch):
    (tmp_path / str(threading.get_native_id())).mkdir()  # a task without a schedstat file
    monkeypatch.setattr(_procfs, "TASK_DIR", str(tmp_path))
    reader = RunDelay()
    assert not reader.available and "CONFIG_SCHED_INFO" in reader.why
    assert reader.read() is None
    with CounterGroup("inherit", events=["runqueue_wait_ns"]) as group:
        assert group.available == {"runqueue_wait_ns": False}
        assert "CONFIG_SCHED_INFO" in group.unavailable["runqueue_wait_ns"]
        assert group.read() == {"runqueue_wait_ns": None}


def test_a_closed_reader_refuses_to_read():
    reader = RunDelay()
    reader.close()
    reader.close()
    with pytest.raises(RuntimeError, match="closed"):
        reader.read()


def test_the_counter_group_reads_it_alone_and_beside_perf_events():
    cpu = min(os.sched_getaffinity(0))
    with CounterGroup("process", events=["runqueue_wait_ns"]) as alone, \
            CounterGroup("process", events=["context_switches", "runqueue_wait_ns"]) as beside:
        assert alone.threads == 0 and alone.sources["runqueue_wait_ns"].startswith("/proc/self/task")
        first = alone.read(), beside.read()
        last = []
        _threads_on(2, cpu, 0.4, lambda: last.extend((alone.read(), beside.read())))
        waited = [delta(a, b)["runqueue_wait_ns"] for a, b in zip(first, last)]
    assert all(w >= 0.25 * 0.4e9 for w in waited), waited
    assert alone.closed and beside.closed


def test_a_group_says_how_many_threads_a_read_reads():
    # A read's cost grows with the threads it re-reads: the run delay reads every thread of the process, also
    # in an inherit group whose perf events count only the opening thread's.
    with CounterGroup("inherit", events=["context_switches", "runqueue_wait_ns"]) as group:
        group.read()
        before = group.threads_read
        seen = []
        _threads_on(2, min(os.sched_getaffinity(0)), 0.01, lambda: (group.read(), seen.append(group.threads_read)))
        assert group.threads == 1
        assert before == 1 + len(os.listdir("/proc/self/task")) and seen == [before + 2], (before, seen)
