"""The runner composed with the other controls: FTZ census, thread counts, pinning, counters, stats.

Each test needs the module it composes and is skipped, with the reason,
where that module is not part of this build.
"""

import os

import numpy as np
import pytest

from benchctl._results import queries
from benchctl._run import runner

SUMMARY_KEYS = {"workload", "phase", "cell", "n", "median_ms", "ci95_ms", "iqr_over_median",
                "minor_faults_per_iter", "major_faults_per_iter", "context_switches_per_iter",
                "cpu_migrations_per_iter", "runqueue_wait_ns_per_iter"}


def test_summary_and_verdict_of_a_real_matrix(tmp_path):
    doc = runner.run_matrix("sleep", {"iterations": 12}, {"ms": [1.0, 3.0]}, repeat=2,
                            json_path=str(tmp_path / "r.json"), progress=False, control=False)
    assert "analysis_error" not in doc["metadata"]
    assert [e["cell"] for e in doc["summary"]] == [{"ms": 1.0}, {"ms": 3.0}]
    for entry, ms in zip(doc["summary"], (1.0, 3.0)):
        assert SUMMARY_KEYS <= set(entry)
        assert entry["workload"] == "sleep" and entry["phase"] == "sleep" and entry["repetitions"] == 2
        assert entry["n"] == 24 - sum(entry["warmup"])
        assert ms <= entry["median_ms"] and entry["ci95_ms"][0] <= entry["median_ms"] <= entry["ci95_ms"][1]
    assert doc["summary"][1]["median_ms"] > doc["summary"][0]["median_ms"]
    for entry in doc["summary"]:
        # Every iteration has its share of the wait for a CPU; the summary gives its mean (a wait comes in ticks).
        series = [r["phases"]["sleep"] for r in queries.ok_runs(doc, entry["cell"])]
        _, counted = queries.pool_steady(series)
        assert all(w is not None and w >= 0 for w in counted["runqueue_wait_ns"])
        assert entry["runqueue_wait_ns_per_iter"] == pytest.approx(float(np.mean(counted["runqueue_wait_ns"])))
    (effect,) = [f for f in doc["verdict"] if f["rule"] == "setting_effect"]
    assert effect["setting"] == "ms=3.0" and effect["comparison"]["ratio"] > 1


@pytest.mark.slow
def test_ftz_census_shows_flushing_in_process_cells_only():
    doc = runner.run_matrix("matmul", {"n": 32, "iterations": 3, "init": "subnormal"},
                            {"ftz": ["off", "process"], "threads": [1]}, progress=False, control=False)
    assert [r["status"] for r in doc["runs"]] == ["ok"] * 2, [r.get("stderr_tail") for r in doc["runs"]]
    for run in doc["runs"]:
        seen = run["readback"]["ftz"]["observed"]
        assert seen["threads"] >= 1 and len(seen["census"]) == seen["threads"]
        if run["cell"]["ftz"] == "process":
            assert seen["all_flushed"], seen["census"]
            assert run["readback"]["ftz"]["applied"]  # the census set_flush_denormal returned
        else:
            assert seen["none_flushed"], seen["census"]
        # threads=1 is applied and read back in the same worker
        assert run["notes"]["torch_num_threads"] == 1
        assert run["readback"]["threads"]["applied"] and run["readback"]["threads"]["observed"]


@pytest.mark.slow
def test_compact_pinning_and_thread_count_are_read_back():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("pinning a team needs at least 2 allowed CPUs")
    doc = runner.run_matrix("matmul", {"n": 64, "iterations": 2}, {"threads": [2], "pin": ["off", "compact"]},
                            progress=False, control=False)
    off, compact = doc["runs"]
    assert off["status"] == compact["status"] == "ok", compact.get("stderr_tail")
    assert off["notes"]["torch_num_threads"] == compact["notes"]["torch_num_threads"] == 2
    assert off["readback"]["pin"]["observed"]["team_single_cpu"] is False
    assert compact["readback"]["pin"]["observed"]["team_single_cpu"] is True
    team = [t for t in compact["readback"]["pin"]["observed"]["census"] if t["omp_thread"] is not None]
    assert len(team) == 2 and len({tuple(t["allowed_cpus"]) for t in team}) == 2  # distinct CPUs


def test_counters_are_recorded_per_iteration():
    doc = runner.run_matrix("sleep", {"iterations": 4, "ms": 1.0}, {}, progress=False, control=False)
    run = doc["runs"][0]
    assert run["status"] == "ok", run.get("stderr_tail")
    assert run["counters_info"]["scope"] == "process"
    switches = run["phases"]["sleep"]["counters"]["context_switches"]
    assert len(switches) == 4 and all(v >= 1 for v in switches)  # each sleep gives up the CPU
