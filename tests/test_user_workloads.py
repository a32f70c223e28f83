"""Workloads from the user's own files, in each of the three forms, run in fresh workers."""

import subprocess
import sys
import textwrap

import pytest

import benchctl
from benchctl import ArgumentError, _workloads as workloads
from benchctl._results import report
from benchctl._run import runner
from benchctl.settings import SettingError


def write(tmp_path, name, code):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return str(path)


def run(target, matrix=None, **args):
    return runner.run_matrix(target, args, matrix or {}, progress=False, control=False)


def test_a_plain_callable_is_timed_call_by_call(tmp_path):
    path = write(tmp_path, "plain.py", """
        def total():
            return sum(range(2000))
    """)
    doc = run(f"{path}:total", iterations=7)
    [r] = doc["runs"]
    assert r["status"] == "ok" and list(r["phases"]) == ["call"] and len(r["phases"]["call"]["ns"]) == 7


def test_a_decorated_function_times_its_own_phases_with_its_params(tmp_path):
    path = write(tmp_path, "decorated.py", """
        import benchctl

        @benchctl.workload(params={"n": 3, "label": "x"})
        def work(rec, n, label):
            rec.note("label", label)
            for _ in range(n):
                with rec.iteration("build"):
                    data = list(range(1000))
                with rec.iteration("sum"):
                    sum(data)
    """)
    doc = run(f"{path}:work", {"n": ["2", "4"]}, label="seen")
    assert [len(r["phases"]["sum"]["ns"]) for r in doc["runs"]] == [2, 4]
    assert all(r["notes"]["label"] == "seen" and list(r["phases"]) == ["build", "sum"] for r in doc["runs"])


def test_a_decorated_function_may_name_a_parameter_iterations_without_seconds(tmp_path):
    # explain ended in "KeyError: 'seconds'" (an internal error): benchctl's own check of iterations and seconds
    # was applied to the decorated function's own parameter.
    path = write(tmp_path, "own_iterations.py", """
        import benchctl

        @benchctl.workload(params={"iterations": 2})
        def work(rec, iterations):
            for _ in range(iterations):
                with rec.iteration("mm"):
                    sum(range(100))
    """)
    workload = workloads.get(f"{path}:work")
    workload.check_args(workload.resolve_args({"iterations": 3}))
    doc = run(f"{path}:work", {"iterations": ["3"]})
    assert [len(r["phases"]["mm"]["ns"]) for r in doc["runs"]] == [3]


def test_setup_runs_once_untimed_then_run_per_iteration(tmp_path):
    path = write(tmp_path, "setup_run.py", """
        import os

        class Bench:
            calls = 0

            @staticmethod
            def setup():
                return {"pid": os.getpid(), "data": list(range(5000))}

            @staticmethod
            def run(state):
                return sum(state["data"])
    """)
    doc = run(f"{path}:Bench", iterations=4)
    [r] = doc["runs"]
    assert r["status"] == "ok" and list(r["phases"]) == ["run"] and len(r["phases"]["run"]["ns"]) == 4


def test_a_module_by_its_import_name(tmp_path, monkeypatch):
    write(tmp_path, "my_pkg_mod.py", """
        def tiny():
            return 1 + 1
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the fresh worker imports it too
    [r] = run("my_pkg_mod:tiny", iterations=3)["runs"]
    assert r["status"] == "ok" and len(r["phases"]["call"]["ns"]) == 3


def test_an_exception_in_user_code_fails_the_cell_with_its_traceback(tmp_path):
    path = write(tmp_path, "broken.py", """
        import benchctl

        @benchctl.workload(params={})
        def fails(rec):
            with rec.iteration("x"):
                pass
            raise ValueError("planted in the user's code")
    """)
    doc = run(f"{path}:fails")
    [r] = doc["runs"]
    assert r["status"] == "failed" and "planted in the user's code" in r["error"]
    assert 'broken.py", line 8, in fails' in r["traceback"]
    text = report.format_report(doc)
    assert "ValueError: planted in the user's code" in text and "broken.py" in text


def test_only_runs_the_phase_a_workload_asks_for(tmp_path):
    path = write(tmp_path, "phases.py", """
        import benchctl

        @benchctl.workload(params={})
        def two(rec):
            if rec.runs("train"):
                with rec.iteration("train"):
                    sum(range(1000))
            with rec.iteration("eval"):
                sum(range(1000))
    """)
    doc = run(f"{path}:two", {"only": ["all", "eval"]})
    assert [sorted(r["phases"]) for r in doc["runs"]] == [["eval", "train"], ["eval"]]
    assert doc["runs"][1]["readback"]["only"]["observed"] == {"phase": "eval"}


def test_bad_targets_fail_before_any_worker(tmp_path):
    path = write(tmp_path, "things.py", """
        NUMBER = 3
    """)
    with pytest.raises(ArgumentError, match="is not a workload"):
        workloads.get(f"{path}:NUMBER")
    with pytest.raises(ArgumentError, match="has no 'missing'"):
        workloads.get(f"{path}:missing")
    with pytest.raises(workloads.TargetImportError, match="no such file"):
        workloads.get(str(tmp_path / "absent.py") + ":f")
    with pytest.raises(ArgumentError, match=r"takes a dict of parameter names and their defaults.*got int"):
        benchctl.workload(params=5)
    with pytest.raises(ArgumentError, match="each name must be a Python identifier"):
        benchctl.workload(params={"two words": 1})
    ok = write(tmp_path, "ok.py", "def f():\n    pass\n")
    with pytest.raises(SettingError, match="expected int"):
        runner.run_matrix(f"{ok}:f", {"iterations": "many"}, {}, progress=False)


def test_the_cli_runs_a_user_file(tmp_path):
    path = write(tmp_path, "cli_target.py", """
        def f():
            return [i * i for i in range(1000)]
    """)
    done = subprocess.run([sys.executable, "-m", "benchctl", "run", f"{path}:f", "--arg", "iterations=5",
                           "--no-control", "--no-progress"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "phase call" in done.stdout
