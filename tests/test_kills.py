"""The runner killed at random moments, and a full disk: nothing finished is lost (issue 27).

The kill test drives the CLI as a user would: ``python -m benchctl run sleep
... --json F``, killed (SIGKILL or SIGINT) after a random delay, then
``--resume`` again, killed again, and so on; a last ``--resume`` finishes the
matrix. After every kill the file must load, hold no repetition twice and
still hold every run an earlier snapshot held, unchanged; at the end every
planned run is there exactly once and ok.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from benchctl.errors import ExitCode
from benchctl._results import document

MATRIX = ["--set", "ms=1,2,3", "--arg", "iterations=2", "--repeat", "4", "--shuffle", "7"]
CELLS, REPEAT = 3, 4
PLANNED = CELLS * REPEAT + REPEAT  # the baseline cell's control arm B repeats it
KILLS_PER_SIGNAL = int(os.environ.get("BENCHCTL_KILLS_PER_SIGNAL", "20"))
MAX_DELAY_S = 6.0  # a runner starts in ~2 s and finishes a worker every ~1 s on the development machine


def _command(path: str, resume: bool) -> list[str]:
    return [sys.executable, "-m", "benchctl", "run", "sleep", *MATRIX, "--no-progress", "--json", path,
            *(["--resume"] if resume else [])]


def _run_key(run: dict) -> tuple:
    return document.cell_id(run["cell"]), run.get("arm"), run["repetition"]


def _finished(path: str) -> dict[tuple, str]:
    """The ok runs in the file, by identity, as canonical JSON (to compare them unchanged later)."""
    if not os.path.exists(path):
        return {}
    doc = document.load(path)  # never a torn file: raises if it is
    keys = [_run_key(r) for r in doc["runs"]]
    assert len(keys) == len(set(keys)), f"a repetition is in {path} twice: {sorted(keys)}"
    return {_run_key(r): json.dumps(r, sort_keys=True) for r in doc["runs"] if r["status"] == "ok"}


class Tally:
    def __init__(self):
        self.tries = {"SIGKILL": 0, "SIGINT": 0}
        self.lost = 0
        self.changed = 0
        self.matrices = 0
        self.sigint_status: dict[int, int] = {}


def _kill_once(path: str, sig: int, rng: random.Random, tally: Tally, seen: dict) -> bool:
    """Start (or resume) the runner, kill it with ``sig`` after a random delay; False if it finished first."""
    # The runner's work folder beside the results: a SIGKILLed runner cannot remove it, and /tmp would keep it.
    env = {**os.environ, "TMPDIR": os.path.dirname(path)}
    proc = subprocess.Popen(_command(path, resume=os.path.exists(path)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        proc.wait(timeout=rng.uniform(0.2, MAX_DELAY_S))
        finished = True
    except subprocess.TimeoutExpired:
        finished = False
        proc.send_signal(sig)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the runner did not exit within 60 s of {signal.Signals(sig).name}")
    finally:
        # A SIGKILLed runner leaves its worker orphaned: end it before the next resume.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stderr = proc.stderr.read()
        proc.stderr.close()
    if finished:
        assert proc.returncode == 0, stderr
    elif sig == signal.SIGINT:
        # 130: benchctl's handler said "interrupted"; -SIGINT: the Ctrl-C came while Python
        # itself was starting, before benchctl's code ran (Python's own default then).
        # 0: the run finished its last worker as the signal came (the file must then be complete).
        assert proc.returncode in (130, -signal.SIGINT) or (proc.returncode == 0 and _is_complete(path)), \
            f"Ctrl-C: exit status {proc.returncode}:\n{stderr}"
        tally.sigint_status[proc.returncode] = tally.sigint_status.get(proc.returncode, 0) + 1
        if proc.returncode == 130:
            assert "Traceback" not in stderr, stderr
    now = _finished(path)
    for key, run in seen.items():
        if key not in now:
            tally.lost += 1
        elif now[key] != run:
            tally.changed += 1
    seen.update(now)
    return not finished


def _is_complete(path: str) -> bool:
    try:
        _check_complete(path)
    except AssertionError:
        return False
    return True


def _check_complete(path: str) -> None:
    doc = document.load(path)
    keys = [_run_key(r) for r in doc["runs"]]
    assert len(keys) == len(set(keys)) == PLANNED, sorted(keys)
    assert all(r["status"] == "ok" for r in doc["runs"])
    assert {k[2] for k in keys} == set(range(REPEAT))


@pytest.mark.slow
def test_random_kills_and_resumes_lose_nothing_and_duplicate_nothing(tmp_path):
    rng = random.Random(int(os.environ.get("BENCHCTL_KILL_SEED", "27")))
    tally = Tally()
    plan = [signal.SIGKILL, signal.SIGINT] * KILLS_PER_SIGNAL
    rng.shuffle(plan)
    path, seen = None, {}
    for sig in plan:
        while True:
            if path is None:
                tally.matrices += 1
                path, seen = str(tmp_path / f"m{tally.matrices}.json"), {}
            if _kill_once(path, sig, rng, tally, seen):
                tally.tries[signal.Signals(sig).name] += 1
                break
            _check_complete(path)  # it finished before the kill: a new matrix takes the next kill
            path = None
    # Resume the last matrix to its end.
    subprocess.run(_command(path, resume=os.path.exists(path)), check=True, stdout=subprocess.DEVNULL)
    _check_complete(path)
    print(f"\nkills: {tally.tries}, SIGINT exit statuses: {tally.sigint_status}, matrices: {tally.matrices}, "
          f"lost runs: {tally.lost}, changed runs: {tally.changed}, duplicated: 0 (checked after every kill)")
    assert tally.tries == {"SIGKILL": KILLS_PER_SIGNAL, "SIGINT": KILLS_PER_SIGNAL}
    assert tally.lost == 0 and tally.changed == 0


# -- a full disk ---------------------------------------------------------------

@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs (root only: CI runs as root); skipped where it cannot be mounted."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_a_full_disk_is_a_clear_error_and_the_previous_file_stays_intact(small_tmpfs):
    path = str(small_tmpfs / "r.json")
    # Each sleep run adds ~4 KB to the document: 24 runs cannot fit in 64 KiB.
    cmd = [sys.executable, "-m", "benchctl", "run", "sleep", "--set", "ms=1,2,3", "--arg", "iterations=2",
           "--repeat", "6", "--no-progress", "--json", path]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == ExitCode.UNAVAILABLE, (done.returncode, done.stderr)  # not refused: retry elsewhere
    assert "Traceback" not in done.stderr, done.stderr
    assert "No space left on device" in done.stderr and path in done.stderr, done.stderr
    doc = document.load(path)  # the last complete write, whole
    kept = len(doc["runs"])
    assert 0 < kept < 24
    assert [f for f in os.listdir(small_tmpfs) if f != "r.json"] == []  # no temporary file left behind
    print(f"\nENOSPC after {time.monotonic() - started:.0f} s: kept {kept} runs; the user sees:\n{done.stderr}")
