"""The cross-machine view: findings side by side, what differs between machines, hosts without results."""

import json
import re
import subprocess
import sys

import pytest

from benchctl._results import document, machines, manifest
from synthetic_results import make_doc

MATRIX = {"order": ["eval_only", "train_then_eval"], "alloc": ["default", "retain"]}
PARALLEL_INFO = ("ATen/Parallel:\n\tat::get_num_threads() : 2\nOpenMP 201511 (a.k.a. OpenMP 4.5)\n"
                 "Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64\n"
                 "Intel(R) MKL-DNN v3.12.0 (Git Hash 80afa71)\nATen parallel backend: OpenMP\n")


def _system(host, model, omp_path, torch_version):
    return {
        "hostname": host,
        "cpu": {"model_name": model, "flags_of_interest": ["avx2", "fma"]},
        "topology": {"logical_cpus": 8, "cores": 8, "sockets": 1, "smt_active": False, "allowed_cpus": list(range(8))},
        "libc": {"gnu_libc_version": "glibc 2.36"},
        "environment": {},
        "kernel": {"release": "6.1.0"},
        "packages": {"torch": "2.14.1", "torch_runtime_version": torch_version, "torch_cuda": None, "numpy": "2.0",
                     "torch_parallel_info": PARALLEL_INFO},
        "threadpools": [{"user_api": "openmp", "internal_api": "openmp", "prefix": "x", "filepath": omp_path,
                         "version": None}],
    }


def _penalty(mul_ratio):
    slow = mul_ratio > 1.5
    return {"mul": {"subnormal_ratio": mul_ratio, "zero_ratio": 1.0, "subnormal_ratio_ftz": 1.0,
                    "class": "hardware penalty that FTZ/DAZ removes" if slow else "no penalty",
                    "penalised_subnormal": slow, "penalised_zero": False, "ftz_removes": True if slow else None,
                    "threads": 1},
            "conv2d": {"subnormal_ratio": 1.01, "zero_ratio": 1.0, "subnormal_ratio_ftz": 1.0, "class": "no penalty",
                       "penalised_subnormal": False, "penalised_zero": False, "ftz_removes": None, "threads": 1}}


def _gap(ratio, significant):
    a = {"order": "eval_only", "alloc": "default"}
    b = {"order": "train_then_eval", "alloc": "default"}
    return {"rule": "gap", "phase": "eval", "a": a, "b": b, "ratio": ratio,
            "ci95": [ratio * 0.97, ratio * 1.03], "significant": significant, "p_value": 0.01,
            "setting": None, "explains": False, "evidence": {}, "message": f"gap {ratio}", "new_field": "kept"}


def _machine_doc(host, model, omp_path, torch_version, gap_ratio, gap_significant, mul_ratio, extra=()):
    doc = make_doc(MATRIX, lambda c: 1.0, repeat=2)
    doc["metadata"].update(system=_system(host, model, omp_path, torch_version), python="3.11.7",
                           benchctl_version="0.1.0")
    doc["evidence"] = {"penalty": _penalty(mul_ratio)}
    doc["summary"] = [{"phase": "eval", "cell": r["cell"], "median_ms": 10.0 * gap_ratio, "n": 16}
                      for r in doc["runs"] if r["repetition"] == 0]
    doc["verdict"] = [_gap(gap_ratio, gap_significant), *extra]
    return doc


AMD = dict(host="cn01", model="AMD EPYC 9654", omp_path="/v/torch/lib/libgomp-a34b3233.so.1",
           torch_version="2.14.1+cpu", gap_ratio=1.45, gap_significant=True, mul_ratio=1.0)
INTEL = dict(host="cn17", model="Intel Xeon Platinum 8480", omp_path="/opt/intel/lib/libiomp5.so",
             torch_version="2.14.1+cpu", gap_ratio=1.02, gap_significant=False, mul_ratio=2.2)
FTZ_RULE = {"rule": "ftz_explained", "phase": None, "a": None, "b": None, "ratio": None, "ci95": None,
            "significant": None, "explains": True, "message": "FTZ explains it: weights hold subnormals"}


def _folder(tmp_path, manifest_hosts=None):
    folder = tmp_path / "run"
    folder.mkdir()
    document.save(_machine_doc(**AMD, extra=[FTZ_RULE]), str(folder / "amd.json"))
    intel_only = {"rule": "setting_effect", "phase": "eval", "a": {"alloc": "retain"}, "b": {"alloc": "default"},
                  "ratio": 0.8, "ci95": [0.75, 0.85], "significant": True, "setting": "alloc=retain",
                  "explains": True, "message": "retain is faster"}
    document.save(_machine_doc(**INTEL, extra=[{**FTZ_RULE, "explains": False, "message": "no subnormals"},
                                               intel_only]), str(folder / "intel.json"))
    if manifest_hosts is not None:
        (folder / manifest.NAME).write_text(json.dumps(
            {"schema": manifest.SCHEMA, "version": manifest.VERSION, "hosts": manifest_hosts}))
    return folder


MISSING_HOST = {"label": "arm", "json": "arm.json", "status": "failed", "message": "the run was killed by SIGKILL",
                "jobs": [{"job_id": "1003", "why": "submitted", "state": "FAILED", "exit_status": -9,
                          "error": None, "stderr_tail": "line one\nTraceback: the node ran out of memory\n"}]}
MANIFEST = [{"label": "amd", "json": "amd.json", "status": "ok", "jobs": []},
            {"label": "intel", "json": "intel.json", "status": "ok", "jobs": []}, MISSING_HOST]


def test_findings_are_set_side_by_side_with_the_machines_that_show_them(tmp_path):
    found = machines.load([str(_folder(tmp_path, MANIFEST))])
    assert [m.label for m in found] == ["amd", "intel", "arm"]
    text = machines.format_machines(found)
    gap_row = next(line for line in text.splitlines() if "[eval] gap" in line)
    assert "order=eval_only vs order=train_then_eval at alloc=default" in gap_row
    # The file's findings carry no outcome: each is judged from its interval against the 5% floor.
    assert "1.450 [1.406, 1.494]*" in gap_row and "1.020 [0.989, 1.051] (unresolved)" in gap_row
    assert gap_row.rstrip().endswith("amd")  # shown on amd only
    retain_row = next(line for line in text.splitlines() if "setting_effect" in line)
    # No such finding on amd: "-".
    assert re.split(r"\s{2,}", retain_row.strip())[-3:] == ["-", "0.800 [0.750, 0.850]*", "intel"]
    # A finding without a ratio is told per machine, with its message.
    assert "\n  ftz_explained (shown on: amd)" in text
    assert "amd: * FTZ explains it: weights hold subnormals" in text and "intel: - no subnormals" in text


def test_what_differs_between_machines_is_listed_and_the_rest_said_once(tmp_path):
    found = machines.load([str(_folder(tmp_path))])
    text = machines.format_machines(found)
    differs = text.split("what differs between the machines:")[1].split("same on every machine:")[0]
    assert "AMD EPYC 9654" in differs and "Intel Xeon Platinum 8480" in differs
    assert "libgomp" in differs and "libiomp5" in differs
    assert "penalty mul" in differs and "hardware penalty that FTZ/DAZ removes (subnormal 2.20×" in differs
    same = text.split("same on every machine:")[1].split("findings")[0]
    assert "penalty conv2d: no penalty" in same
    assert "torch build: torch 2.14.1+cpu, CPU only, MKL 2024.2, oneDNN v3.12.0, OpenMP backend" in same
    assert "CPUs: 8 of 8 logical CPUs" in same
    assert "median per cell" in text and "14.5" in text  # amd's medians beside intel's 10.2
    assert "hosts without complete results" not in text  # everything there is complete


def test_a_missing_host_an_unreadable_file_and_a_partial_run_are_listed_not_dropped(tmp_path):
    folder = _folder(tmp_path, MANIFEST)
    (folder / "broken.json").write_text('{"schema": "benchctl.results", "vers')
    partial = _machine_doc(**AMD)
    partial["runs"] = partial["runs"][:3]
    document.save(partial, str(folder / "late.json"))
    found = machines.load([str(folder)])
    by_label = {m.label: m for m in found}
    assert set(by_label) == {"amd", "intel", "arm", "broken", "late"}
    assert not by_label["arm"].complete and by_label["arm"].problem.startswith("missing: the run was killed")
    assert by_label["broken"].problem.startswith("unreadable:") and "truncated" in by_label["broken"].problem
    assert by_label["late"].problem == "partial: 3 of 8 worker runs recorded" and by_label["late"].doc is not None
    text = machines.format_machines(found)
    problems = text.split("hosts without complete results:")[1]
    assert "arm: missing: the run was killed by SIGKILL" in problems
    assert "job 1003 (submitted): state FAILED, exit_status -9" in problems
    assert "| Traceback: the node ran out of memory" in problems
    assert "broken: unreadable" in problems and "late: partial: 3 of 8" in problems


def test_a_host_still_running_is_said_to_be_so(tmp_path):
    waiting = {"label": "arm", "json": "arm.json", "status": "submitted", "jobs": [{"job_id": "77"}]}
    found = machines.load([str(_folder(tmp_path, MANIFEST[:2] + [waiting]))])
    assert found[2].problem == ("missing: no results file yet (job 77 was submitted and may still be queued "
                                "or running)")


def test_progress_counts_cells_times_repetitions():
    doc = make_doc(MATRIX, lambda c: 1.0, repeat=3)
    assert machines.progress(doc) == (12, 12)
    doc["runs"] = doc["runs"][:5] + doc["runs"][:2]  # a rerun of a failed attempt is one run
    assert machines.progress(doc) == (5, 12)
    # An A/A control runs the baseline cell as a second arm; "auto" repetitions have no plan.
    doc["control"] = {"cell": doc["runs"][0]["cell"], "arms": ["A", "B"]}
    doc["runs"].append({**doc["runs"][0], "arm": "B"})
    assert machines.progress(doc) == (6, 15)
    doc["repeat"] = "auto"
    assert machines.progress(doc) == (6, None)


def test_a_verdict_with_outcomes_and_no_interval_is_written_with_its_own_words(tmp_path):
    one = _machine_doc(**AMD)
    one["verdict"] = [{**_gap(1.3, False), "outcome": "unresolved"}]
    two = _machine_doc(**INTEL)
    two["verdict"] = [{**_gap(1.1, False), "ci95": None, "outcome": "one_process"}]
    for name, doc in (("one", one), ("two", two)):
        document.save(doc, str(tmp_path / f"{name}.json"))
    text = machines.format_machines(machines.load([str(tmp_path / "one.json"), str(tmp_path / "two.json")]))
    row = next(line for line in text.splitlines() if "[eval] gap" in line)
    assert "1.300 [1.261, 1.339] (unresolved)" in row and "1.100 (one process)" in row
    assert row.rstrip().endswith("none")


def test_bad_manifests_are_refused_with_the_reason(tmp_path):
    path = tmp_path / manifest.NAME
    path.write_text('{"schema": "something.else"}')
    with pytest.raises(document.ResultsError, match="not a benchctl hosts manifest"):
        manifest.load(str(path))
    path.write_text(json.dumps({"schema": manifest.SCHEMA, "version": 99, "hosts": []}))
    with pytest.raises(document.ResultsError, match="upgrade benchctl"):
        manifest.load(str(path))
    path.write_text(json.dumps({"schema": manifest.SCHEMA, "version": 1, "hosts": [{"label": "a"}]}))
    with pytest.raises(document.ResultsError, match="'label' and 'json'"):
        manifest.load(str(path))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(document.ResultsError, match="no results files"):
        machines.load([str(empty)])


def _compare(*args):
    return subprocess.run([sys.executable, "-m", "benchctl", "compare", *map(str, args)],
                          capture_output=True, text=True)


def test_compare_command_two_files_as_before_several_or_a_folder_by_machine(tmp_path):
    folder = _folder(tmp_path, MANIFEST)
    amd, intel = folder / "amd.json", folder / "intel.json"
    two = _compare(amd, intel)
    assert two.returncode == 0, two.stderr
    assert f"{intel}/{amd} [95% CI]" in two.stdout and "what differs" not in two.stdout
    forced = _compare("--machines", amd, intel)
    assert forced.returncode == 0 and "what differs between the machines" in forced.stdout
    whole = _compare(folder)
    assert whole.returncode == 1, "a missing host makes the exit status 1"
    assert "3 machine(s), 2 with results" in whole.stdout and "arm: missing" in whole.stdout
    one = _compare(amd)
    assert one.returncode == 2 and "nothing to compare with" in one.stderr
    for missing in ((tmp_path / "absent.json",), (amd, tmp_path / "absent.json")):
        gone = _compare(*missing)
        assert gone.returncode == 2 and gone.stderr.strip() == f"compare: no such file or folder: {missing[-1]}", \
            gone.stderr
