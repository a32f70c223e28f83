"""--executor slurm against a real one-node Slurm cluster (issue 27), end to end through the CLI.

.ci/slurm-up starts the cluster (munge, slurmctld, slurmd from Debian's
packages); without one answering `sinfo` these tests are skipped. The
fake-sbatch tests in test_slurm.py stay for what one node cannot make
(several machines, preemption signals, sacct states).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from benchctl._results import document
from benchctl._results import manifest as hosts_manifest

pytestmark = pytest.mark.slow

COMMAND = [sys.executable, "-m", "benchctl", "run", "sleep", "--executor", "slurm", "--hosts", "2",
           "--slurm", "time=10", "--no-progress"]


@pytest.fixture(scope="module")
def cluster():
    if shutil.which("sinfo") is None:
        pytest.skip("no Slurm here: .ci/slurm-up starts a one-node cluster (root)")
    states = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    if states.returncode != 0 or not any(s in states.stdout for s in ("idle", "mixed", "alloc")):
        pytest.skip(f"the Slurm cluster does not answer (.ci/slurm-up starts it): {states.stderr.strip()}")


def _our_jobs() -> list[str]:
    out = subprocess.run(["squeue", "-h", "-n", "benchctl-host-1,benchctl-host-2", "-o", "%i"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


@pytest.fixture
def clean_queue(cluster):
    yield
    leftover = _our_jobs()
    if leftover:
        subprocess.run(["scancel", *leftover], check=False)


def _run_keys(doc: dict) -> list[tuple]:
    return [(document.cell_id(r["cell"]), r.get("arm"), r["repetition"]) for r in doc["runs"]]


def _check_host_files(out, runs_each: int) -> dict:
    manifest = hosts_manifest.load(str(out / hosts_manifest.NAME))
    assert [h["status"] for h in manifest["hosts"]] == ["ok", "ok"], manifest
    for host in ("host-1", "host-2"):
        doc = document.load(str(out / f"{host}.json"))
        keys = _run_keys(doc)
        assert len(keys) == len(set(keys)) == runs_each, keys
        assert all(r["status"] == "ok" for r in doc["runs"])
    return manifest


def test_two_hosts_run_as_two_slurm_jobs_and_are_compared(tmp_path, clean_queue):
    out = tmp_path / "out"
    done = subprocess.run(COMMAND + ["--set", "ms=1,2", "--arg", "iterations=2", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    print(done.stdout[-3000:], done.stderr[-2000:])
    assert done.returncode == 0, done.stderr
    _check_host_files(out, runs_each=3)  # two cells and the control's second arm
    assert "2 machine(s), 2 with results" in done.stdout
    assert "ran on the same machine" in done.stdout  # one node: the comparison says so


def test_a_job_requeued_by_scontrol_resumes_its_file_and_loses_nothing(tmp_path, clean_queue):
    out = tmp_path / "out"
    # The requeue SIGKILLs the host job's runner, which cannot remove its benchctl-run-* work folder: its TMPDIR
    # (the job's environment is the command's) is this test's, not /tmp (two were left there by each CI run).
    proc = subprocess.Popen(COMMAND + ["--set", "ms=20,40", "--arg", "iterations=10", "--repeat", "3",
                                       "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        host1 = out / "host-1.json"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if host1.exists():
                try:
                    if len(document.load(str(host1))["runs"]) >= 2:
                        break
                except document.ResultsError:
                    pass  # not written yet
            time.sleep(0.5)
        else:
            pytest.fail("host-1 recorded no run within 300 s")
        before = {json.dumps(r, sort_keys=True) for r in document.load(str(host1))["runs"]}
        running = subprocess.run(["squeue", "-h", "-t", "R", "-n", "benchctl-host-1", "-o", "%i"],
                                 capture_output=True, text=True, check=True).stdout.split()
        assert len(running) == 1, running
        subprocess.run(["scontrol", "requeue", running[0]], check=True)
        text, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    print(text[-4000:])
    assert proc.returncode == 0, text
    manifest = _check_host_files(out, runs_each=9)
    doc = document.load(str(host1))
    assert doc["metadata"].get("resumed"), "the second attempt resumed the file"
    kept = {json.dumps(r, sort_keys=True) for r in doc["runs"]}
    assert before <= kept, "a run finished before the requeue was lost or changed"
    host = manifest["hosts"][0]
    assert len(host["jobs"]) == 2 and "resubmitted after" in host["jobs"][1]["why"], host["jobs"]


def test_after_a_requeue_no_job_of_the_run_is_left_in_the_queue(tmp_path, clean_queue):
    test_a_job_requeued_by_scontrol_resumes_its_file_and_loses_nothing(tmp_path, clean_queue=None)
    assert _our_jobs() == []

