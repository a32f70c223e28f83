"""Workers forked from a server that has imported torch (benchctl._run.forkserver): the same fresh state as an
exec'd worker, one server per environment, and every failure a worker can have still recorded."""

from __future__ import annotations

import os
import time

import pytest

from benchctl._run import forkserver, launch, runner

TINY_CONV = {"channels": 4, "size": 8, "iterations": 4}
# What the glibc readback at the end of a phase must show alike, forked or exec'd: where big blocks come from.
MALLOC_SAME = ("threshold_bytes", "mapped_blocks", "mapped_bytes")


def _malloc_states(fork: bool) -> list[dict]:
    doc = runner.run_matrix("conv", TINY_CONV, {}, repeat=2, fork=fork, progress=False, control=False)
    assert [r["forked"] for r in doc["runs"]] == [fork, fork]
    assert doc["metadata"]["runner"]["forked"] is fork
    return [r["phases"]["forward"]["malloc"] for r in doc["runs"]]


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_a_forked_worker_starts_from_the_allocator_state_of_an_execd_one():
    forked, execd = _malloc_states(True), _malloc_states(False)
    for state in forked:
        assert {k: state[k] for k in MALLOC_SAME} == {k: execd[0][k] for k in MALLOC_SAME}
        # The server's own few requests (its protocol, this module) leave the heap within 1% of an exec'd one's.
        assert state["heap_bytes"] == pytest.approx(execd[0]["heap_bytes"], rel=0.01)


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_each_environment_gets_its_own_server_and_its_workers_see_it():
    doc = runner.run_matrix("conv", TINY_CONV, {"env": ["BENCHCTL_FORK_TEST=1", "BENCHCTL_FORK_TEST=2"]},
                            repeat=2, progress=False, control=False)
    assert all(r["status"] == "ok" and r["forked"] for r in doc["runs"])
    seen = {(r["cell"]["env"]["BENCHCTL_FORK_TEST"], r["readback"]["env"]["observed"]["BENCHCTL_FORK_TEST"])
            for r in doc["runs"]}
    assert seen == {("1", "1"), ("2", "2")}
    pids = {r["worker"]["pid"] for r in doc["runs"]}
    assert len(pids) == 4  # a fresh process each


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_each_round_forks_from_new_servers_and_a_round_shares_one_per_environment():
    doc = runner.run_matrix("conv", TINY_CONV, {"env": ["BENCHCTL_FORK_TEST=1", "BENCHCTL_FORK_TEST=2"]},
                            repeat=3, progress=False, control=True)
    servers = {}
    for r in doc["runs"]:
        servers.setdefault(r["repetition"], {}).setdefault(r["cell"]["env"]["BENCHCTL_FORK_TEST"], set()).add(
            r["fork_server_pid"])
    # The control's arm B has arm A's environment: one server for both within a round.
    assert all(len(by_env["1"]) == 1 and len(by_env["2"]) == 1 for by_env in servers.values())
    # Each server's start is counted once, to its first worker (the budget's estimates include it).
    starts = [r for r in doc["runs"] if "fork_server_start_s" in r]
    assert len(starts) == 6 and all(r["fork_server_start_s"] > 0 for r in starts)
    assert len({r["fork_server_pid"] for r in starts}) == 6
    per_round = [by_env["1"] | by_env["2"] for by_env in servers.values()]
    assert all(len(s) == 2 for s in per_round)
    assert len(set().union(*per_round)) == 6  # never a server of an earlier round: its layout is not sampled again


def test_a_workload_without_preload_is_not_forked():
    doc = runner.run_matrix("sleep", {"iterations": 2}, {}, repeat=1, progress=False, control=False)
    assert doc["runs"][0]["forked"] is False and doc["metadata"]["runner"]["forked"] is False


@pytest.fixture
def server(tmp_path):
    srv = forkserver.ForkServer(("json",), dict(os.environ), str(tmp_path / "server.stderr"))
    yield srv
    srv.close()


def test_a_forked_worker_past_its_timeout_is_killed_and_the_server_serves_the_next(server, tmp_path):
    pause = tmp_path / "pause"
    pause.write_text("")
    started = time.perf_counter()
    record = launch.run_worker("sleep", {"ms": 1.0, "iterations": 2, "pause_file": str(pause), "fail_with": ""},
                               {}, dict(os.environ), str(tmp_path), timeout_s=3.0, server=server)
    assert record["status"] == "failed" and record["forked"]
    assert record["error"] == "worker exceeded the 3.0 s timeout and was killed"
    assert record["signal"] == "SIGKILL"
    assert time.perf_counter() - started < 30
    pause.unlink()
    # A worker that ends at once, under a timeout: its exit is read as soon as the server says it.
    started = time.perf_counter()
    record = launch.run_worker("sleep", {"ms": 1.0, "iterations": 2, "pause_file": "", "fail_with": ""},
                               {}, dict(os.environ), str(tmp_path), timeout_s=20.0, server=server)
    assert record["status"] == "ok" and len(record["phases"]["sleep"]["ns"]) == 2
    assert time.perf_counter() - started < 10
    assert record["worker"]["pid"] not in (server.pid, os.getpid())


def test_a_forked_worker_that_raises_is_recorded_with_its_traceback(server, tmp_path):
    record = launch.run_worker("sleep", {"ms": 1.0, "iterations": 3, "pause_file": "", "fail_with": "boom"},
                               {}, dict(os.environ), str(tmp_path), server=server)
    assert record["status"] == "failed" and record["exit_status"] == 1
    assert "RuntimeError" in record["error"] and "boom" in record["stderr_tail"]
    assert len(record["phases"]["sleep"]["ns"]) == 1


def test_a_server_that_died_fails_its_worker_with_its_stderr_and_the_pool_starts_another(tmp_path):
    with forkserver.ForkServers(str(tmp_path)) as pool:
        first = pool.get(("json",), dict(os.environ))
        first.proc.kill()
        first.proc.wait()
        record = launch.run_worker("sleep", {"ms": 1.0, "iterations": 1, "pause_file": "", "fail_with": ""},
                                   {}, dict(os.environ), str(tmp_path), server=first)
        assert record["status"] == "failed" and "fork server (json) did not" in record["error"]
        again = pool.get(("json",), dict(os.environ))
        assert again is not first and again.proc.poll() is None
    assert again.proc.poll() is not None  # closed with the pool


def test_a_server_that_cannot_import_its_modules_says_why(tmp_path):
    with pytest.raises(forkserver.ForkServerError, match="no_such_module_for_benchctl"):
        forkserver.ForkServer(("no_such_module_for_benchctl",), dict(os.environ), str(tmp_path / "err"))


def test_a_run_whose_server_cannot_start_runs_its_workers_afresh(monkeypatch):
    def refuse(self, modules, env):
        raise forkserver.ForkServerError("refused by the test")

    monkeypatch.setattr(forkserver.ForkServers, "get", refuse)
    doc = runner.run_matrix("conv", TINY_CONV, {}, repeat=1, progress=False, control=False)
    assert doc["runs"][0]["status"] == "ok" and doc["runs"][0]["forked"] is False
    assert doc["metadata"]["runner"]["fork_server_error"] == "refused by the test"
