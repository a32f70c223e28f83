"""--executor slurm: options, the sbatch script (checked by a fake sbatch on PATH), and whole host jobs
through submitit's real code path: the Slurm executor under fake sbatch/srun/sacct, and its local
executor (jobs as local processes) for preemption and failures. No cluster needed."""

import argparse
import io
import json
import os
import signal
import stat
import sys
import threading
import time

import pytest
import submitit

from benchctl._cli import run as cli_run
from benchctl._results import document, manifest
from benchctl._run import slurm


PROGRAM = [sys.executable, "-u", "-m", "benchctl"]
WAIT_S = 180


def _parser():
    parser = argparse.ArgumentParser()
    cli_run.configure(parser)  # the executor options come with the run command's own
    return parser


def _opts(argv):
    """(options, argv) of ``python -m benchctl run ...``."""
    return _parser().parse_args(argv), ["run", *argv]


# ---- options ------------------------------------------------------------------------------------------


def test_slurm_options_are_parsed_and_bad_ones_refused():
    assert slurm.parse_slurm_option("partition=cpu") == ("partition", "cpu")
    assert slurm.parse_slurm_option("cpus-per-task=64") == ("cpus_per_task", 64)
    assert [slurm.parse_time(t) for t in ("90", "1:30:00", "0:30", "2-0", "1-2:03:04", "45:00")] == \
        [90, 90, 1, 2880, 1564, 45]
    for bad, said in (("partition", "write NAME=VALUE"), ("=cpu", "write NAME=VALUE"), ("foo=1", "not passed through"),
                      ("exclusive=1", "benchctl sets it"), ("time=abc", "MINUTES, MM:SS"),
                      ("time=0", "at least one minute"), ("time=UNLIMITED", "MINUTES"),
                      ("cpus_per_task=0", "at least 1"), ("account=a\nb", "control character")):
        with pytest.raises(slurm.ExecutorError, match=said):
            slurm.parse_slurm_option(bad)


def test_hosts_are_a_count_or_a_list_of_partitions_and_constraints():
    assert [t.label for t in slurm.parse_hosts("3")] == ["host-1", "host-2", "host-3"]
    assert all(t.params == {} for t in slurm.parse_hosts(2))
    targets = slurm.parse_hosts("amd, partition=intel,constraint=zen4&avx512")
    assert [(t.label, t.params) for t in targets] == [
        ("amd", {"partition": "amd"}), ("intel", {"partition": "intel"}),
        ("zen4_avx512", {"constraint": "zen4&avx512"})]
    for bad, said in (("0", "at least one host"), ("-2", "at least one host"), ("amd,amd", "both write amd.json"),
                      ("gres=gpu", "each item is a partition"), ("amd,", "each item is a partition"),
                      ("hosts", "cannot name a results file"), ("jobs", "cannot name a results file")):
        with pytest.raises(slurm.ExecutorError, match=said):
            slurm.parse_hosts(bad)


def test_the_command_line_refuses_bad_values_with_the_reason(capsys):
    for argv, said in ((["sleep", "--executor", "slurm", "--hosts", "0"], "argument --hosts: --hosts 0: give at least"),
                       (["sleep", "--slurm", "nonsense"], "argument --slurm: --slurm 'nonsense': write NAME=VALUE"),
                       (["sleep", "--executor", "pbs"], "invalid choice: 'pbs'")):
        with pytest.raises(SystemExit) as exit_:
            _parser().parse_args(argv)
        assert exit_.value.code == 2 and said in capsys.readouterr().err
    assert _parser().parse_args(["sleep"]).executor == "local", "local stays the default"


def test_slurm_options_need_the_slurm_executor_and_never_run_inside_a_host_job(monkeypatch):
    opts, _ = _opts(["sleep", "--hosts", "2"])
    with pytest.raises(slurm.ExecutorError, match="--hosts needs --executor slurm"):
        slurm.use_slurm(opts)
    with pytest.raises(slurm.ExecutorError, match="--slurm and --hosts need --executor slurm"):
        slurm.use_slurm(_opts(["sleep", "--slurm", "partition=x", "--hosts", "2"])[0])
    assert slurm.use_slurm(_opts(["sleep"])[0]) is False
    assert slurm.use_slurm(_opts(["sleep", "--executor", "slurm"])[0]) is True
    monkeypatch.setenv(slurm.NODE_ENV, "amd")
    with pytest.raises(slurm.ExecutorError, match="inside the benchctl host job 'amd'"):
        slurm.use_slurm(_opts(["sleep", "--executor", "slurm"])[0])


def test_a_host_job_repeats_the_command_without_the_controller_options():
    argv = ["run", "sleep", "--set", "ms=1,2", "--executor", "slurm", "--slurm", "partition=a", "--slurm=time=5",
            "--hosts=amd,intel", "--json", "out", "--plot=p.png", "--resume", "--arg", "iterations=3",
            "--exec", "slurm", "--host", "2", "--js", "x", "--res", "--repeat", "2", "--", "--json"]
    assert slurm.node_argv(argv) == ["run", "sleep", "--set", "ms=1,2", "--arg", "iterations=3", "--repeat", "2",
                                     "--", "--json"]
    # What the node runs parses as a plain local run of the same matrix.
    opts = _parser().parse_args(slurm.node_argv(argv)[1:-2] + ["--json", "out/amd.json"])
    assert (opts.executor, opts.slurm, opts.hosts, opts.json_path, opts.resume) == \
        ("local", [], None, "out/amd.json", False)
    assert opts.sets == ["ms=1,2"] and opts.repeat == 2


def test_the_program_is_started_again_the_way_it_was_started(tmp_path):
    import benchctl

    main = os.path.join(os.path.dirname(benchctl.__file__), "__main__.py")
    assert slurm.default_program(main) == [sys.executable, "-u", "-m", "benchctl"]
    assert slurm.default_program("/venv/bin/benchctl") == [sys.executable, "-u", "-m", "benchctl"]
    script = tmp_path / "resnet_order.py"
    script.write_text("")
    assert slurm.default_program(str(script)) == [sys.executable, "-u", str(script)]
    with pytest.raises(slurm.ExecutorError, match="cannot tell how to start"):
        slurm.default_program("-c")


def test_the_plan_is_checked_before_anything_is_submitted(tmp_path):
    out = tmp_path / "out"
    for argv, said in (([], "needs --json DIR"), (["--json", str(tmp_path / "r.json")], "names a folder"),
                       (["--json", str(out), "--slurm", "time=5", "--slurm", "time=6"], "given twice"),
                       (["--json", str(out), "--hosts", "amd", "--slurm", "partition=b"], "say it in one place")):
        opts, full = _opts(["sleep", "--executor", "slurm", *argv])
        with pytest.raises(slurm.ExecutorError, match=said):
            slurm.plan_hosts(opts, full, PROGRAM)
    assert not out.exists(), "nothing half-applied: no folder was made"
    out.mkdir()
    (out / "amd.json").write_text("{}")
    opts, full = _opts(["sleep", "--executor", "slurm", "--hosts", "amd,intel", "--json", str(out)])
    with pytest.raises(slurm.ExecutorError, match="already holds amd.json: continue those runs with --resume"):
        slurm.plan_hosts(opts, full, PROGRAM)
    opts, full = _opts(["sleep", "--executor", "slurm", "--hosts", "amd,intel", "--json", str(out), "--resume",
                        "--slurm", "time=2:00:00", "--slurm", "reservation=bench", "--plot", "x.png"])
    plan = slurm.plan_hosts(opts, full, PROGRAM)
    assert plan.time_min == 120 and [t.label for t in plan.targets] == ["amd", "intel"]
    amd = plan.targets[0]
    assert plan.command(amd) == PROGRAM + ["run", "sleep", "--json", str(out / "amd.json"),
                                           "--plot", str(out / "amd.png")]
    params = plan.sbatch_for(amd)
    assert params["exclusive"] is True and params["time"] == 120 and params["partition"] == "amd"
    assert params["mem"] == "0" and params["additional_parameters"] == {"reservation": "bench"}
    assert params["setup"] == list(slurm.CPU_SETUP)


def test_without_submitit_the_message_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit now raises ImportError
    opts, full = _opts(["sleep", "--executor", "slurm", "--json", str(tmp_path / "out")])
    with pytest.raises(slurm.ExecutorError, match=r"needs submitit: pip install 'benchctl\[slurm\]'"):
        slurm.run_with_executor(opts, full, PROGRAM)
    assert not (tmp_path / "out").exists()


# ---- the Slurm executor under a fake Slurm --------------------------------------------------------------

FAKE_SBATCH = r"""#!/bin/bash
# Fake sbatch: keep the script, refuse it unless it asks for what benchctl promises, and start it
# (as Slurm would, with the variables a job sees).
set -u
state="$FAKE_SLURM_STATE"
n=$(( $(cat "$state/last_id" 2>/dev/null || echo 1000) + 1 )); echo "$n" > "$state/last_id"
cp "$1" "$state/sbatch-$n.sh"
fail() { echo "sbatch: error: $1" >&2; exit 1; }
grep -qx '#SBATCH --exclusive' "$1" || fail "the job does not ask for an exclusive node"
grep -Eqx '#SBATCH --time=[0-9]+' "$1" || fail "the job has no time limit"
grep -qx 'export SRUN_CPUS_PER_TASK=$SLURM_CPUS_ON_NODE' "$1" || fail "the job's task does not get every CPU"
grep -qx 'export SLURM_CPUS_PER_TASK=$SLURM_CPUS_ON_NODE' "$1" || fail "the job's task does not get every CPU"
! grep -qx '#SBATCH --partition=bad' "$1" || fail "invalid partition specified: bad"
echo RUNNING > "$state/job-$n.state"
( export SLURM_JOB_ID=$n SLURM_CPUS_ON_NODE=$(nproc) SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=1 SLURM_PROCID=0
  bash "$state/sbatch-$n.sh"; if [ $? = 0 ]; then s=COMPLETED; else s=FAILED; fi; echo $s > "$state/job-$n.state"
) > "$state/job-$n.log" 2>&1 < /dev/null &
echo "Submitted batch job $n"
"""

FAKE_SRUN = r"""#!/bin/bash
# Fake srun: run the job's one task into its log files, if the task gets every CPU of the node.
out= err=
while [ $# -gt 0 ]; do
  case "$1" in
    --output) out=$2; shift 2;;
    --error) err=$2; shift 2;;
    -*) shift;;
    *) break;;
  esac
done
if [ "${SRUN_CPUS_PER_TASK:-}" != "$SLURM_CPUS_ON_NODE" ]; then
  echo "srun (fake): the task would get ${SRUN_CPUS_PER_TASK:-1} of $SLURM_CPUS_ON_NODE CPUs" >&2; exit 3
fi
out=${out//%j/$SLURM_JOB_ID}; out=${out//%t/0}; err=${err//%j/$SLURM_JOB_ID}; err=${err//%t/0}
exec "$@" >> "$out" 2>> "$err"
"""

FAKE_SACCT = r"""#!/bin/bash
# Fake sacct: the state the fake sbatch keeps for each -j ID.
echo "JobID|State|NodeList"
while [ $# -gt 0 ]; do
  if [ "$1" = -j ]; then echo "$2|$(cat "$FAKE_SLURM_STATE/job-$2.state" 2>/dev/null || echo PENDING)|fake1"; shift; fi
  shift
done
"""


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """sbatch, srun and sacct on PATH that check and run jobs on this machine; yields their state folder."""
    bin_dir, state = tmp_path / "bin", tmp_path / "slurm-state"
    bin_dir.mkdir()
    state.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("srun", FAKE_SRUN), ("sacct", FAKE_SACCT)):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_STATE", str(state))
    return state


@pytest.mark.slow
def test_each_host_is_an_exclusive_slurm_job_running_the_same_matrix(tmp_path, fake_slurm):
    out = tmp_path / "out"
    opts, argv = _opts(["sleep", "--set", "ms=1,2", "--arg", "iterations=3", "--executor", "slurm",
                        "--hosts", "amd,bad", "--slurm", "time=1:30:00", "--slurm", "account=lab",
                        "--slurm", "reservation=bench", "--json", str(out)])
    said = io.StringIO()
    rc = slurm.run_with_executor(opts, argv, PROGRAM, poll_s=0.5, out=said)
    text = said.getvalue()
    assert rc == 1, f"one host never ran, so the exit status says so\n{text}"

    scripts = {p.name: p.read_text() for p in fake_slurm.glob("sbatch-*.sh")}
    assert len(scripts) == 2, "one job per host"
    amd = next(s for s in scripts.values() if "#SBATCH --partition=amd" in s)
    for line in ("#SBATCH --exclusive", "#SBATCH --time=90", "#SBATCH --account=lab", "#SBATCH --reservation=bench",
                 "#SBATCH --mem=0", "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1",
                 "#SBATCH --job-name=benchctl-amd", *slurm.CPU_SETUP):
        assert line in amd.splitlines(), line

    doc = document.load(str(out / "amd.json"))
    assert doc["workload"] == "sleep" and doc["matrix"] == {"ms": [1.0, 2.0]}
    # Both cells, and the baseline again as the A/A control's second arm, exactly as a local run.
    assert {r["status"] for r in doc["runs"]} == {"ok"} and len(doc["runs"]) == 3
    assert doc["metadata"]["system"]["environment"].get(slurm.NODE_ENV) == "amd", "the run knew it was a host job"
    written = manifest.load(str(out / manifest.NAME))
    hosts = {h["label"]: h for h in written["hosts"]}
    assert hosts["amd"]["status"] == "ok" and hosts["amd"]["jobs"][0]["exit_status"] == 0
    assert "attempt 1 on" in hosts["amd"]["jobs"][0]["stderr_tail"]
    assert hosts["amd"]["sbatch"]["exclusive"] is True and hosts["amd"]["sbatch"]["partition"] == "amd"
    assert hosts["bad"]["status"] == "not submitted"
    assert "invalid partition specified: bad" in hosts["bad"]["message"]
    # The cross-machine view printed at the end lists the host that never ran.
    assert "2 machine(s), 1 with results" in text
    assert "bad: missing: submission failed: FailedJobError: sbatch: error: invalid partition specified: bad" in text


# ---- the local executor: preemption and failures ---------------------------------------------------------


def _local_executor(folder, target, plan):
    executor = submitit.LocalExecutor(folder, max_num_timeout=slurm.MAX_REQUEUES)
    executor.update_parameters(timeout_min=plan.time_min)
    return executor


def _parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _wait_for(predicate, what):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _paused_worker(pause, not_pid=None):
    """The pid of the worker blocked on ``pause`` (the sleep workload writes it there)."""
    def read():
        text = pause.read_text().strip() if pause.exists() else ""
        return int(text) if text.isdigit() and int(text) != not_pid else None

    return _wait_for(read, "a worker blocked on the pause file")


class _Controller(threading.Thread):
    """run_with_executor in a thread, so that the test can preempt and kill its jobs meanwhile."""

    def __init__(self, argv):
        super().__init__(daemon=True)
        self.opts, self.argv = _opts(argv)
        self.out, self.rc = io.StringIO(), None

    def run(self):
        self.rc = slurm.run_with_executor(self.opts, self.argv, PROGRAM, executor_factory=_local_executor,
                                          poll_s=0.2, out=self.out)

    def result(self):
        self.join(WAIT_S)
        assert not self.is_alive(), f"the controller did not finish:\n{self.out.getvalue()}"
        return self.rc, self.out.getvalue()


def _paused_matrix(pause, out):
    # Cell 1 runs straight through; cell 2's worker blocks while the pause file exists.
    return ["sleep", "--set", f"pause_file=,{pause}", "--arg", "iterations=2", "--executor", "slurm",
            "--json", str(out)]


@pytest.mark.slow
def test_a_preempted_host_is_requeued_once_resumes_its_file_and_is_not_requeued_twice(tmp_path):
    pause, out = tmp_path / "pause", tmp_path / "out"
    pause.write_text("")
    controller = _Controller(_paused_matrix(pause, out))
    controller.start()
    try:
        worker = _paused_worker(pause)
        before = document.load(str(out / "host-1.json"))
        assert len(before["runs"]) == 1, "the first cell is in the file before the preemption"
        task = _parent(_parent(worker))  # worker <- the run <- submitit's task
        os.kill(task, signal.SIGUSR2)  # what Slurm sends on preemption

        second = _paused_worker(pause, not_pid=worker)
        resumed = document.load(str(out / "host-1.json"))
        assert resumed["metadata"].get("resumed"), "the requeued job continued the same file"
        assert resumed["runs"][0]["worker"] == before["runs"][0]["worker"], "the finished cell was kept, not rerun"
        requeued_task = _parent(_parent(second))
        assert requeued_task != task
        os.kill(requeued_task, signal.SIGUSR2)  # preempted again: not requeued a second time
        rc, text = controller.result()
    finally:
        pause.unlink(missing_ok=True)
    assert rc == 1, text
    host = manifest.load(str(out / manifest.NAME))["hosts"][0]
    assert host["status"] == "failed" and host["requeues"] == 1
    assert len(host["jobs"]) == 1, "a job its own checkpointing requeued once is not resubmitted as well"
    assert "checkpoint function returned None" in host["jobs"][0]["error"]
    tail = host["jobs"][0]["stderr_tail"]
    assert "preempted or timed out: requeued once" in tail and "not requeued" in tail
    assert host["message"] == ("preempted or timed out after its one requeue, so not requeued again; "
                               "1 of 3 worker runs recorded")
    assert f"host-1: partial: {host['message']}" in text


@pytest.mark.slow
def test_a_failed_host_job_is_resubmitted_once_and_finishes_its_file(tmp_path, monkeypatch):
    # The killed run's work folder in tmp_path: a SIGKILLed runner cannot remove it, and /tmp would keep it.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    pause, out = tmp_path / "pause", tmp_path / "out"
    pause.write_text("")
    controller = _Controller(_paused_matrix(pause, out))
    controller.start()
    try:
        worker = _paused_worker(pause)
        first_run = document.load(str(out / "host-1.json"))["runs"][0]
        os.kill(_parent(worker), signal.SIGKILL)  # the run dies (out of memory, say) ...
        os.kill(worker, signal.SIGKILL)  # ... and its worker, in a session of its own, with it
        _paused_worker(pause, not_pid=worker)  # the resubmitted job has reached the second cell
        pause.unlink()
        rc, text = controller.result()
    finally:
        pause.unlink(missing_ok=True)
    assert rc == 0, text
    host = manifest.load(str(out / manifest.NAME))["hosts"][0]
    assert host["status"] == "ok" and host["requeues"] == 1 and len(host["jobs"]) == 2
    assert host["jobs"][0]["exit_status"] == -signal.SIGKILL
    assert host["jobs"][1]["why"] == ("resubmitted after: the run was killed by SIGKILL; "
                                      "1 of 3 worker runs recorded")
    doc = document.load(str(out / "host-1.json"))
    assert doc["metadata"].get("resumed") and [r["status"] for r in doc["runs"]] == ["ok"] * 3
    assert doc["runs"][0]["worker"] == first_run["worker"], "the first attempt's finished cell was kept"
    assert "resubmitting once, resuming its results file" in text and "1 with results" in text


@pytest.mark.slow
def test_a_command_refused_on_the_node_is_not_retried_and_its_stderr_is_kept(tmp_path):
    out = tmp_path / "out"
    controller = _Controller(["no_such_workload", "--executor", "slurm", "--hosts", "2", "--json", str(out)])
    controller.run()
    rc, text = controller.rc, controller.out.getvalue()
    assert rc == 1, text
    hosts = manifest.load(str(out / manifest.NAME))["hosts"]
    assert [h["status"] for h in hosts] == ["failed", "failed"] and all(len(h["jobs"]) == 1 for h in hosts)
    assert "refused on the node (exit status 2" in hosts[0]["message"]
    assert "no_such_workload" in hosts[0]["jobs"][0]["stderr_tail"]
    assert "host-1: missing: the command was refused on the node" in text
    assert json.loads((out / manifest.NAME).read_text())["command"][-4:] == \
        ["--hosts", "2", "--json", str(out)]
