"""The runner: a matrix in fresh worker processes, failures recorded, kill -9 safety, resume."""

import io
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from benchctl import alloc
from benchctl._results import document as results
from benchctl._results import queries
from benchctl._run import rounds, runner, worker
from benchctl.settings import SettingError


def _wait_for_pid(pause_file, timeout=60.0, runner_proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if runner_proc is not None and runner_proc.poll() is not None:
            raise AssertionError(f"runner exited early: {runner_proc.communicate()}")
        text = pause_file.read_text() if pause_file.exists() else ""
        if text.strip():
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"no worker paused on {pause_file} within {timeout} s")


def _wait_until_gone(pid, timeout=15.0):
    """True once ``pid`` has exited (a zombie nobody reaps counts as exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def _order(n_cells, repeat, shuffle_seed=None):
    policy = rounds.FixedRounds([rounds.Slot(i) for i in range(n_cells)], repeat, shuffle_seed)
    return [[s.index for s in policy.next_round(r, set)] for r in range(repeat)]


def test_interleaved_rounds():
    assert _order(3, 2) == [[0, 1, 2], [0, 1, 2]]
    shuffled = _order(4, 3, shuffle_seed=5)
    assert shuffled == _order(4, 3, shuffle_seed=5)
    assert shuffled != _order(4, 3)
    assert all(sorted(r) == [0, 1, 2, 3] for r in shuffled)  # every round still runs every cell once
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        rounds.check_repeat(0)
    with pytest.raises(ValueError, match="positive integer or 'auto'"):
        rounds.check_repeat("twice")
    assert rounds.check_repeat("auto") == "auto"


def test_expand_is_the_product_in_key_order():
    assert results.matrix_cells({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    assert results.matrix_cells({}) == [{}]


def test_matrix_cells_run_in_fresh_processes_with_readback(tmp_path, monkeypatch):
    path = str(tmp_path / "r.json")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")  # inherited glibc knobs: every alloc choice drops them
    monkeypatch.setenv("MALLOC_ARENA_MAX", "1")
    matrix = {"alloc": ["default", "retain"], "env": ["BENCHCTL_TEST_MARK=a", "BENCHCTL_TEST_MARK=b"]}
    doc = runner.run_matrix("sleep", {"iterations": 3, "ms": 0.2}, matrix, repeat=2, json_path=path,
                            progress=False, control=False)
    assert results.load(path)["runs"] == doc["runs"]
    runs = doc["runs"]
    assert [r["status"] for r in runs] == ["ok"] * 8, [r.get("error") for r in runs]
    assert [(r["cell"]["alloc"], r["cell"]["env"]["BENCHCTL_TEST_MARK"], r["repetition"]) for r in runs] == [
        (a, m, rep) for rep in (0, 1) for a in ("default", "retain") for m in ("a", "b")]
    pids = {r["worker"]["pid"] for r in runs}
    assert len(pids) == 8 and os.getpid() not in pids
    for r in runs:
        assert len(r["phases"]["sleep"]["ns"]) == 3
        assert r["readback"]["env"]["observed"] == {"BENCHCTL_TEST_MARK": r["cell"]["env"]["BENCHCTL_TEST_MARK"]}
        seen = r["readback"]["alloc"]["observed"]
        assert seen["malloc_env"] == dict.fromkeys(alloc.GLIBC_MALLOC_ENV)  # all unset in the worker
        if r["cell"]["alloc"] == "retain":
            for name, value in alloc.RETAIN_TUNABLES.items():
                assert f"{name}={value}" in seen["GLIBC_TUNABLES"]
            assert seen["large_block_mapping"] == "[heap]"  # freed big blocks stay in the heap
        else:
            assert "glibc.malloc" not in (seen["GLIBC_TUNABLES"] or "")
            assert seen["large_block_mapping"] == "anonymous"  # each big block its own mmap


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc"])
def test_preloaded_allocator_is_mapped_in_the_worker(name):
    if alloc.get(name).find() is None:
        pytest.skip(f"{name} is not installed (apt-get install {alloc.get(name).apt_package})")
    doc = runner.run_matrix("sleep", {"iterations": 1}, {"alloc": [name]}, progress=False, control=False)
    run = doc["runs"][0]
    assert run["status"] == "ok", run.get("stderr_tail")
    seen = run["readback"]["alloc"]["observed"]
    assert seen["LD_PRELOAD"] == alloc.get(name).find()
    assert seen["preload_mapped"] == {seen["LD_PRELOAD"]: True}


def test_failed_worker_is_recorded_and_the_run_goes_on(tmp_path):
    doc = runner.run_matrix("sleep", {"iterations": 3}, {"fail_with": ["", "planted failure"]},
                            json_path=str(tmp_path / "r.json"), progress=False, control=False)
    good, bad = doc["runs"]
    assert good["status"] == "ok" and good["stderr_tail"] is None
    assert bad["status"] == "failed" and bad["exit_status"] == 1
    assert bad["error"] == "RuntimeError while running workload 'sleep': planted failure"
    assert "RuntimeError: planted failure" in bad["stderr_tail"]
    assert len(bad["phases"]["sleep"]["ns"]) == 1  # the iteration done before the failure is kept
    assert queries.failed_runs(doc) == [bad]


def test_a_workload_that_exits_is_recorded_with_what_its_code_did(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import sys\n\ndef step():\n    sys.exit(0)  # a 'done' exit left in the step\n")
    doc = runner.run_matrix(f"{path}:step", {"iterations": 2}, {}, progress=False, control=False)
    (run,) = doc["runs"]
    assert run["status"] == "failed", run
    assert run["error"].startswith(f"SystemExit while running workload '{path}:step': 0 (the code called "
                                   "sys.exit(0) or raised SystemExit, which ends the process its calls are timed "
                                   "in: leave it out of the timed code)"), run["error"]


def test_code_that_crashes_in_its_teardown_fails_neither_its_workers_nor_the_command(tmp_path):
    # torch's profiler started at import and never stopped ends each process in SIGSEGV at exit: every worker failed
    # after writing its result, and explain crashed (exit 139) after printing its answer.
    path = tmp_path / "crashes_at_exit.py"
    # run_matrix imports the file here too: this test's own process must not be the one that crashes at exit
    path.write_text(f"import atexit, os, signal\n\nif os.getpid() != {os.getpid()}:\n"
                    "    atexit.register(lambda: os.kill(os.getpid(), signal.SIGSEGV))\n\n"
                    "def step():\n    return sum(range(1000))\n")
    doc = runner.run_matrix(f"{path}:step", {"iterations": 2}, {}, progress=False, control=False, fork=False)
    assert [r["status"] for r in doc["runs"]] == ["ok"], doc["runs"]
    done = subprocess.run([sys.executable, "-m", "benchctl", "run", f"{path}:step", "--arg", "iterations=2",
                           "--repeat", "1", "--no-control", "--no-progress"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "Answer for" in done.stdout, done.stdout + done.stderr


def test_worker_over_its_timeout_is_killed():
    started = time.monotonic()
    doc = runner.run_matrix("sleep", {"iterations": 1, "ms": 60_000.0}, {}, progress=False, worker_timeout_s=1.0,
                            control=False)
    assert time.monotonic() - started < 30
    run = doc["runs"][0]
    assert run["status"] == "failed" and run["signal"] == "SIGKILL"
    assert run["error"] == "worker exceeded the 1.0 s timeout and was killed"


def test_sigkilled_worker_is_recorded_failed_and_resume_completes_it(tmp_path):
    path = str(tmp_path / "r.json")
    pause = tmp_path / "pause"
    pause.write_text("")
    matrix = {"pause_file": ["", str(pause)]}
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault(
        "doc", runner.run_matrix("sleep", {"iterations": 2}, matrix, json_path=path, progress=False, control=False)))
    thread.start()
    try:
        pid = _wait_for_pid(pause)
        on_disk = results.load(path)  # the first cell finished before the paused one started
        assert [(r["cell"]["pause_file"], r["status"]) for r in on_disk["runs"]] == [("", "ok")]
        assert os.getsid(pid) == pid  # its own session and process group, killed as one
        os.kill(pid, signal.SIGKILL)
    finally:
        thread.join(60)
    killed = results.load(path)["runs"]
    assert [r["status"] for r in killed] == ["ok", "failed"]
    assert killed[1]["exit_status"] == -signal.SIGKILL and killed[1]["error"] == "worker killed by SIGKILL"
    assert out["doc"]["runs"] == killed

    pause.unlink()
    resumed = runner.run_matrix("sleep", {"iterations": 2}, matrix, json_path=path, resume=True, progress=False,
                                control=False)
    assert [r["status"] for r in resumed["runs"]] == ["ok", "ok"]
    assert resumed["runs"][0] == killed[0]  # finished work is kept, not redone
    assert len(resumed["metadata"]["resumed"]) == 1
    assert results.load(path)["runs"] == resumed["runs"]


@pytest.mark.slow
def test_runner_killed_with_sigkill_loses_no_finished_cell(tmp_path):
    path = str(tmp_path / "r.json")
    pause = tmp_path / "pause"
    pause.write_text("")
    cmd = [sys.executable, "-m", "benchctl", "run", "sleep", "--arg", "iterations=2",
           "--set", f"pause_file=,{pause}", "--json", path]
    # Its work folder in tmp_path: a SIGKILLed runner cannot remove it, and /tmp would keep it.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        worker_pid = _wait_for_pid(pause, runner_proc=proc)
        proc.kill()
        proc.wait(30)
        gone = _wait_until_gone(worker_pid)  # the worker dies with its runner, not orphaned
    finally:
        if proc.poll() is None:
            proc.kill()
    if not gone:
        os.kill(worker_pid, signal.SIGKILL)
    assert gone, "the worker outlived its SIGKILLed runner"
    on_disk = results.load(path)
    assert [(r["cell"]["pause_file"], r["status"]) for r in on_disk["runs"]] == [("", "ok")]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]

    pause.unlink()
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # Both cells, and the baseline cell again as the A/A control's second arm.
    assert [(r["cell"]["pause_file"] == "", r.get("arm"), r["status"]) for r in results.load(path)["runs"]] == [
        (True, "A", "ok"), (False, None, "ok"), (True, "B", "ok")]
    assert "phase sleep" in done.stdout or "no summary" in done.stdout
    assert "\r" not in done.stderr and "cell/s" not in done.stderr  # no progress bar into a pipe


def test_resume_checks_the_file_and_can_add_repetitions(tmp_path):
    path = str(tmp_path / "r.json")
    first = runner.run_matrix("sleep", {"iterations": 1}, {"ms": [0.1, 0.2]}, json_path=path, progress=False,
                              control=False)
    with pytest.raises(results.ResultsError, match="cannot resume: its matrix differ"):
        runner.run_matrix("sleep", {"iterations": 1}, {"ms": [0.1, 0.3]}, json_path=path, resume=True, control=False)
    with pytest.raises(results.ResultsError, match="cannot resume: its args differ"):
        runner.run_matrix("sleep", {"iterations": 2}, {"ms": [0.1, 0.2]}, json_path=path, resume=True, control=False)
    more = runner.run_matrix("sleep", {"iterations": 1}, {"ms": [0.1, 0.2]}, repeat=2, json_path=path,
                             resume=True, progress=False, control=False)
    assert more["runs"][:2] == first["runs"]
    assert [(r["cell"]["ms"], r["repetition"]) for r in more["runs"][2:]] == [(0.1, 1), (0.2, 1)]
    assert more["repeat"] == 2


def test_bad_input_fails_before_any_worker(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    monkeypatch.setattr(alloc, "_library_dirs", lambda: [str(tmp_path)])
    with pytest.raises(SettingError, match="apt-get install libjemalloc2"):
        runner.run_matrix("sleep", {}, {"alloc": ["default", "jemalloc"]}, json_path=str(path), control=False)
    with pytest.raises(SettingError, match="neither a setting nor|is neither a setting"):
        runner.run_matrix("sleep", {}, {"batch": [1]}, json_path=str(path), control=False)
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        runner.run_matrix("nope", {}, {}, json_path=str(path), control=False)
    with pytest.raises(SettingError, match="'alloc' is a setting: put it in the matrix"):
        runner.run_matrix("sleep", {"alloc": "retain"}, {}, json_path=str(path), control=False)
    with pytest.raises(ValueError, match="resume needs json_path"):
        runner.run_matrix("sleep", {}, {}, resume=True, control=False)
    assert not path.exists()


def test_progress_bar_only_on_a_terminal(monkeypatch):
    class Stream(io.StringIO):
        def __init__(self, tty):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    for tty, enabled, shown in ((True, True, True), (False, True, False), (True, False, False)):
        stream = Stream(tty)
        monkeypatch.setattr(sys, "stderr", stream)
        with runner._progress_bar(3, 1, enabled) as bar:
            bar.set_postfix_str("alloc=retain #1")
            bar.update(1)
        text = stream.getvalue()
        assert (("2/3" in text and "alloc=retain #1" in text) if shown else text == ""), (tty, enabled, text)


def test_worker_reports_errors_it_meets():
    result = worker.run_job({"workload": "nope", "args": {}, "settings": {}})
    assert result["status"] == "failed"
    assert result["error"].startswith("ArgumentError while loading the workload: unknown workload 'nope'")
    usage = subprocess.run([sys.executable, "-m", "benchctl._run.worker"], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: python -m benchctl._run.worker JOB.json" in usage.stderr


@pytest.mark.slow
def test_ctrl_c_stops_the_worker_and_keeps_finished_cells(tmp_path):
    path = str(tmp_path / "r.json")
    pause = tmp_path / "pause"
    pause.write_text("")
    # SIGINT back to its default first: a shell runs background jobs (a CI script started with &)
    # with SIGINT ignored, and Python then never turns it into KeyboardInterrupt.
    proc = subprocess.Popen([sys.executable, "-m", "benchctl", "run", "sleep", "--arg", "iterations=2",
                             "--set", f"pause_file=,{pause}", "--json", path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    worker_pid = _wait_for_pid(pause, runner_proc=proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert f"finished cells are in {path}; continue with --resume" in err
    with pytest.raises(ProcessLookupError):  # no orphaned worker
        os.kill(worker_pid, 0)
    assert [r["status"] for r in results.load(path)["runs"]] == ["ok"]


def test_resume_runs_the_files_repetitions_in_its_shuffled_order(tmp_path):
    path = str(tmp_path / "r.json")
    args, matrix = {"iterations": 1, "ms": 0.1}, {"ms": [0.1, 0.2]}
    runner.run_matrix("sleep", args, matrix, repeat=1, json_path=path, shuffle_seed=7, progress=False, control=False)
    # As if started with --repeat 3 --shuffle 7 and interrupted after its first round.
    doc = results.load(path)
    doc["repeat"] = 3
    doc["metadata"]["runner"]["repeat"] = 3
    results.save(doc, path)
    with pytest.raises(results.ResultsError, match="started with 7"):
        runner.run_matrix("sleep", args, matrix, json_path=path, resume=True, shuffle_seed=8, progress=False,
                          control=False)
    resumed = runner.run_matrix("sleep", args, matrix, json_path=path, resume=True, progress=False,
                                control=False)  # repeat=1
    assert resumed["repeat"] == 3
    ran = [({0.1: 0, 0.2: 1}[r["cell"]["ms"]], r["repetition"]) for r in resumed["runs"]]
    assert ran == [(c, r) for r, cells in enumerate(_order(2, 3, shuffle_seed=7)) for c in cells]
    assert [r["status"] for r in resumed["runs"]] == ["ok"] * 6


def test_a_finished_cell_is_saved_before_its_analysis(tmp_path, monkeypatch):
    path = str(tmp_path / "r.json")

    def interrupted(doc, *a, **k):
        raise KeyboardInterrupt  # Ctrl-C during the bootstrap of the first finished cell

    monkeypatch.setattr(runner, "analyse", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run_matrix("sleep", {"iterations": 1, "ms": 0.1}, {}, json_path=path, progress=False, control=False)
    assert [r["status"] for r in results.load(path)["runs"]] == ["ok"]


@pytest.mark.parametrize("workload, matrix, message", [
    ("resnet_order", {"order": ["eval_only", "foo"]}, "workload 'resnet_order': order must be one of"),
    ("zero_weights", {"init": ["nope"]}, "workload 'zero_weights': init must be one of"),
])
def test_bad_workload_values_fail_before_any_worker(tmp_path, monkeypatch, workload, matrix, message):
    path = tmp_path / "r.json"
    monkeypatch.setattr(runner, "run_worker", lambda *a, **k: pytest.fail("a worker started"))
    with pytest.raises(ValueError, match=message):
        runner.run_matrix(workload, {}, matrix, json_path=str(path), progress=False, control=False)
    assert not path.exists()
