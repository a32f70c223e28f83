"""The process-wide FP broadcast and pinning under a hostile thread population (issue 27).

The soak itself is bench/signal_soak.py (1,000 rounds there); the slow tier
runs a shorter soak of the same script and checks its figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from benchctl import fpenv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RT_SIGNALS = range(signal.SIGRTMIN, signal.SIGRTMAX + 1)
SOAK_ROUNDS = int(os.environ.get("BENCHCTL_SOAK_ROUNDS", "100"))


def test_a_thread_that_blocks_the_signal_is_not_sent_another_each_broadcast():
    # Real-time signals queue, in a queue the user's processes share: one more
    # per broadcast to a thread that never unblocks would fill it, and then
    # nothing could be signalled (timer_create fails with EAGAIN machine-wide).
    ready, release = threading.Event(), threading.Event()
    seen: dict = {}

    def blocker():
        signal.pthread_sigmask(signal.SIG_BLOCK, RT_SIGNALS)
        seen["tid"] = threading.get_native_id()
        ready.set()
        release.wait()
        queued = 0
        while signal.sigtimedwait([seen["signal"]], 0) is not None:  # take ours off the queue, unhandled
            queued += 1
        seen["queued"] = queued
        signal.pthread_sigmask(signal.SIG_UNBLOCK, RT_SIGNALS)

    thread = threading.Thread(target=blocker)
    thread.start()
    try:
        ready.wait()
        for _ in range(20):
            census = fpenv.census("process", deadline_s=0.02)
            assert seen["tid"] in census.unreached
        handler = fpenv.broadcast_handler()
        assert handler["installed"] and seen["tid"] in handler["maybe_pending"]
        seen["signal"] = handler["signal"]
    finally:
        release.set()
        thread.join()
    assert seen["queued"] == 1
    # With nothing pending any more, the next broadcast puts the disposition back.
    assert all(r["reached"] for r in fpenv.census("process"))
    assert not fpenv.broadcast_handler()["installed"]


@pytest.mark.slow
def test_the_soak_never_hangs_always_reports_and_restores(tmp_path):
    out = tmp_path / "soak.json"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "signal_soak.py"), "--rounds",
                           str(SOAK_ROUNDS), "--json", str(out)], capture_output=True, text=True, timeout=1200)
    print(done.stdout)
    fig = json.loads(out.read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert fig["rounds"] == SOAK_ROUNDS and fig["broadcasts"] == 3 * SOAK_ROUNDS
    assert fig["threads_at_start"] >= 200 and fig["blocking_threads"] == 50 and fig["threads_born"] > 0
    assert fig["hangs"] == 0 and fig["unreported"] == 0 and fig["mismatched"] == 0
    assert fig["not_restored"] == 0 and fig["blocked_changed_behind_report"] == 0
    # Every change left the 50 blocking threads unreached, and said so.
    assert fig["unreached_reported"] >= 50 * SOAK_ROUNDS
    assert fig["restores_checked"] >= 150 * SOAK_ROUNDS
