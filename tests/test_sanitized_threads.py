"""The native code that runs on many threads at once, driven from many threads at once.

The process-wide signal broadcast (its handler runs on every thread while the
broadcaster waits) and the OpenMP team callback (native code on each team
thread, the caller reading what they wrote). These pass in any build; .ci/
sanitizers runs this file against the ThreadSanitizer build of the core,
where a data race in either is a report. Only this file runs under TSan:
the rest of the suite starts worker processes, compilers and subprocesses
that would all inherit the preloaded TSan runtime, and TSan defers a signal
that arrives outside a blocking call until the thread's next intercepted
call, with a copy of the context, so an FTZ change made to that copy is not
what the thread resumes with (the tests here keep their threads in blocking
calls, where TSan delivers at once, with the real context).
"""

from __future__ import annotations

import os
import threading
import warnings

import torch

from benchctl import fpenv, threads


UNDER_TSAN = os.environ.get("BENCHCTL_TSAN") == "1"  # set by .ci/sanitizers


def _waiting_threads(n: int):
    release = threading.Event()
    started = threading.Barrier(n + 1)
    tids: list[int] = []
    lock = threading.Lock()

    def wait():
        with lock:
            tids.append(threading.get_native_id())
        started.wait()
        release.wait()

    pool = [threading.Thread(target=wait) for _ in range(n)]
    for t in pool:
        t.start()
    started.wait()
    return tids, release, pool


def test_broadcasts_from_several_threads_at_once_reach_every_waiting_thread():
    tids, release, pool = _waiting_threads(16)
    problems: list = []

    def broadcaster(on: bool):
        for _ in range(15):
            census = fpenv.set_flush_denormal(on, "process")
            reached = {r["tid"] for r in census if r["reached"]}
            # Under TSan a thread outside an intercepted blocking call (the other
            # broadcasters, waiting on a raw futex) gets its signal deferred, with a
            # copied context: its change is lost by TSan's design, not ours.
            wrong = census.mismatched if not UNDER_TSAN else sorted(set(census.mismatched) & set(tids))
            if not set(tids) <= reached or wrong:
                problems.append((sorted(set(tids) - reached), wrong))
            fpenv.set_flush_denormal(False, "process")

    if UNDER_TSAN:
        warnings.filterwarnings("ignore", "threads .* read back with FTZ/DAZ", RuntimeWarning)
    try:
        workers = [threading.Thread(target=broadcaster, args=(i % 2 == 0,)) for i in range(3)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        release.set()
        for t in pool:
            t.join()
    assert problems == []
    assert not fpenv.thread_state()["ftz"]


def test_the_team_callback_from_two_python_threads_changes_and_restores_each_team():
    torch.set_num_threads(2)
    torch.ones(64).sum()
    problems: list = []

    def team_rounds():
        for _ in range(10):
            with fpenv.flush_denormals(True, "openmp") as census:
                if census.mismatched or not all(r["ftz"] for r in census):
                    problems.append(list(census))
            after = fpenv.census("openmp")
            if any(r["ftz"] for r in after):
                problems.append(list(after))

    other = threading.Thread(target=team_rounds)
    other.start()
    try:
        team_rounds()
        for _ in range(5):
            with threads.pinned("compact") as placed:
                if not any(r["omp_thread"] == 0 for r in placed):
                    problems.append(placed)
    finally:
        other.join()
    assert problems == []
