"""bench/background_load.py: the reproducible neighbour keeps about the share of a CPU it is asked for,
stops on time or on SIGTERM, and refuses a share, a burst or a CPU count it cannot honour."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "background_load.py")


def _load(*args, timeout=60):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


def _cpus(out: str) -> float:
    took = re.search(r"took ([\d.]+) CPU s in ([\d.]+) s", out)
    assert took, out
    return float(took.group(1)) / float(took.group(2))


def test_it_keeps_about_the_share_asked_and_stops_on_time():
    started = time.monotonic()
    proc = _load("--duty", "0.5", "--burst", "0.2,0.2", "--seconds", "2")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 20
    # Half of one CPU asked: a loaded machine can take some of it, nothing makes it twice as much.
    assert 0.15 < _cpus(proc.stdout) < 0.9, proc.stdout
    assert "asked: 0.50" in proc.stdout


def _stopped_by(sig, preexec_fn=None):
    """(stdout, stderr) of a full-CPU load stopped by ``sig`` after 1.5 s; returns 0 or fails. One that does not
    stop is killed with its processes (its own session), never left spinning beside the next test."""
    proc = subprocess.Popen([sys.executable, SCRIPT, "--duty", "1", "--burst", "0.1,0.1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=preexec_fn)
    try:
        time.sleep(1.5)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, err
    return out, err


def test_sigterm_stops_it_and_it_still_reports():
    out, err = _stopped_by(signal.SIGTERM)
    assert _cpus(out) > 0.1, out
    assert "Traceback" not in err, err  # its processes end quietly


def test_sigint_stops_it_even_when_started_with_sigint_ignored():
    """As `background_load.py &` in a script starts it: Ctrl-C on the script (or kill -INT) still stops it."""
    out, err = _stopped_by(signal.SIGINT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert _cpus(out) > 0.1, out
    assert "Traceback" not in err, err


@pytest.mark.parametrize("args, words", [
    (["--duty", "0"], "a share of one CPU"), (["--duty", "1.5"], "a share of one CPU"),
    (["--burst", "3,1"], "0 < LOW <= HIGH"), (["--burst", "x"], "LOW,HIGH"), (["--cpus", "0"], "--cpus 0"),
    (["--seconds", "-1"], "seconds > 0"),
])
def test_it_refuses_what_it_cannot_honour(args, words):
    proc = _load(*args)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
