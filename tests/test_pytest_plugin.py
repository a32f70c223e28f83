"""benchctl's pytest plugin, tested the way users meet it: test files run by pytester, outcomes checked."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from benchctl.pytest_plugin import _assertions as assertions, _results_file as results_file
from benchctl.pytest_plugin._stats import Stats
from benchctl._results import document, processes

pytest_plugins = ["pytester"]

# Short budgets: the tests check behaviour, not precision.
FAST = ("--benchctl-max-time=0.05", "-p", "no:cacheprovider")

WORK = """
def work(n=200):
    return sum(range(n))
"""


def run(pytester, *args):
    return pytester.runpytest_inprocess(*FAST, *args)


def lit(text):
    """``text`` as a literal in a fnmatch pattern, where ``[`` opens a character set."""
    return text.replace("[", "[[]")


@pytest.fixture(scope="module", autouse=True)
def _import_what_inner_sessions_import():
    """pytester's in-process runs forget the modules first imported inside them, and some cannot be
    imported twice into one process: torch (a second import crashes the interpreter later) and the
    workload modules (a second import registers every workload again, which the registry refuses).
    Import them, everything the results file's metadata loads, and the plugin modules its hooks load
    on first use (a test file importing one must get the module the hooks use), before the first
    inner session."""
    from benchctl import _workloads, settings  # noqa: F401
    from benchctl.pytest_plugin import _compare, _fixture, _isolation, _results_file, _terminal  # noqa: F401
    from benchctl._system import metadata

    metadata.collect()
    _workloads.names()  # the workload modules register their workloads once per process


# ---------------------------------------------------------------- loading


def test_loading_the_plugin_imports_no_torch_numpy_or_native_code():
    code = ("import sys, benchctl.pytest_plugin; "
            "print([m for m in ('torch', 'numpy', 'benchctl._native', 'benchctl.clock') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_bad_clock_setting_fails_only_the_tests_that_time(pytester):
    """$BENCHCTL_CLOCK is read when the clock loads: a session that times nothing never loads it."""
    pytester.makepyfile("def test_plain():\n    pass\n\ndef test_timed(benchctl):\n    benchctl(len, 'x')\n")
    env = {**os.environ, "BENCHCTL_CLOCK": "bogus"}
    plain = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "plain"],
                           cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    timed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "timed"],
                           cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120)
    assert timed.returncode == 1 and "BENCHCTL_CLOCK='bogus' is not one of" in timed.stdout


def test_a_suite_that_does_not_use_benchctl_sees_nothing_of_it(pytester):
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "= benchctl =" not in result.stdout.str()


def test_every_option_has_help_text(pytester):
    result = pytester.runpytest_inprocess("--help")
    text = result.stdout.str()
    for option in ("--benchctl-max-time", "--benchctl-min-rounds", "--benchctl-round-time", "--benchctl-strict",
                   "--benchctl-json", "--benchctl-compare", "--benchctl-compare-fail", "--benchctl-worker-timeout"):
        assert option in text
    assert "time budget of one measured series" in text
    markers = pytester.runpytest_inprocess("--markers").stdout.str()
    assert "@pytest.mark.benchctl(ftz=..., threads=N, pin=..., alloc=..., env=..., isolate=False, repeat=3)" in markers


@pytest.mark.parametrize("args, message", [
    (("--benchctl-max-time=0",), "--benchctl-max-time must be a number of seconds > 0"),
    (("--benchctl-min-rounds=0",), "--benchctl-min-rounds must be 1 or more"),
    (("--benchctl-compare-fail",), "--benchctl-compare-fail needs --benchctl-compare FILE"),
    (("--benchctl-json=no/such/dir/out.json",), "its directory does not exist"),
    (("--benchctl-compare=missing.json",), "missing.json: no such results file"),
])
def test_bad_options_stop_the_session_with_a_message(pytester, args, message):
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


# ---------------------------------------------------------------- the fixture


def test_call_form_returns_the_result_and_fills_stats(pytester):
    pytester.makepyfile(WORK + """
def test_it(benchctl):
    assert benchctl(work, 300) == sum(range(300))
    s = benchctl.stats
    assert s.unit == "s" and s["median"] == s.median and s.stats is s
    assert 0 < s.min <= s.median <= s.max
    assert s.ci95[0] <= s.median <= s.ci95[1]
    assert s.rounds + s.warmup >= 15 and s.iterations >= 1
    assert s.ops == 1 / s.mean
    assert isinstance(s.flags, tuple)
    benchctl.extra_info["size"] = 300
""")
    result = run(pytester, "--benchctl-min-rounds=15")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= benchctl =*", "test * median * 95% CI * IQR/median * rounds * flags*",
                                 "test_call_form_returns_the_result_and_fills_stats.py::test_it * in-process *"])


def test_the_terminal_table_writes_each_time_column_in_one_unit():
    from benchctl.pytest_plugin import _terminal as terminal
    from benchctl.pytest_plugin._options import Options
    from benchctl.pytest_plugin._session import Session

    session = Session(Options())
    for nodeid, median in (("t.py::fast", 2.5e-7), ("t.py::slow", 1.25e-4)):
        session.record(nodeid).stats = Stats(median, median, median, median, 0.0, 0.0, 20, 1,
                                             (median * 0.99, median * 1.01), 0)
    lines = terminal.lines(session)
    assert "median µs" in lines[1] and "95% CI µs" in lines[1]
    rows = {line.split()[0]: line.split() for line in lines[3:]}
    assert rows["t.py::fast"][1] == "0.2500" and rows["t.py::slow"][1] == "125.0000"  # one unit, one precision


def test_pedantic_runs_exactly_the_rounds_asked_for(pytester):
    pytester.makepyfile(WORK + """
import pytest

def test_rounds(benchctl):
    made = []
    def setup():
        made.append(1)
        return (100 + len(made),), {}
    assert benchctl.pedantic(work, setup=setup, rounds=6, warmup_rounds=2) == sum(range(108))
    assert len(made) == 8
    assert benchctl.stats.rounds + benchctl.stats.warmup == 6 and benchctl.stats.iterations == 1

def test_iterations(benchctl):
    calls = []
    benchctl.pedantic(calls.append, args=(1,), rounds=3, iterations=4)
    assert len(calls) == 12 and benchctl.stats.iterations == 4

def test_setup_with_iterations(benchctl):
    with pytest.raises(ValueError, match="iterations must be 1"):
        benchctl.pedantic(work, setup=lambda: None, iterations=2)

def test_args_twice(benchctl):
    with pytest.raises(TypeError, match="either to pedantic or from setup"):
        benchctl.pedantic(work, args=(3,), setup=lambda: ((4,), {}))
""")
    run(pytester).assert_outcomes(passed=4)


def test_one_series_per_test_and_json_extra_info(pytester):
    pytester.makepyfile(WORK + """
def test_twice(benchctl):
    benchctl(work)
    benchctl(work)

def test_extra_info(benchctl):
    benchctl.extra_info["bad"] = object()
    benchctl(work)
""")
    result = run(pytester)
    result.assert_outcomes(failed=1, errors=1, passed=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_extra_info*",
                                 "benchctl.extra_info must hold JSON values (it goes into the results file): *",
                                 "*RuntimeError: the benchctl fixture measures one series per test and benchctl(fn) "
                                 "already did*"])


def test_an_exception_in_the_timed_function_fails_the_test(pytester):
    pytester.makepyfile("""
def test_raises(benchctl):
    def boom():
        raise KeyError("inside")
    benchctl(boom)
""")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*KeyError: 'inside'*"])


# ---------------------------------------------------------------- markers


@pytest.mark.parametrize("marker, message", [
    ("threads=0", "threads=0: expected a positive integer"),
    ("ftz='sometimes'", "ftz='sometimes': choose one of off, thread, openmp, process"),
    ("pin='diagonal'", "pin='diagonal': choose one of off, compact, scatter"),
    ("pin=[99999]", "pin=[99999]: CPUs [99999] are not among the CPUs this process may run on"),
    ("alloc='retain'", "alloc=retain is set when a process starts, not around calls in a running one: add "
                       "isolate=True"),
    ("env='A=1'", "env=[A=1] is set when a process starts"),
    ("busy='pool'", "busy=pool is set when a process starts"),
    ("repeat=3", "repeat=3 counts fresh processes: it needs isolate=True"),
    ("isolate=True, repeat=0", "repeat must be a positive integer"),
    ("isolate='yes'", "isolate must be True or False"),
    ("speed=2", "unknown keyword speed"),
])
def test_a_bad_marker_fails_its_test_and_the_others_in_its_file_run(pytester, marker, message):
    pytester.makepyfile(f"""
import pytest

@pytest.mark.benchctl({marker})
def test_marked(benchctl):
    pass

def test_other():
    pass

def test_timed(benchctl):
    benchctl(len, "x")
""")
    result = run(pytester)
    result.assert_outcomes(errors=1, passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*::test_marked: @pytest.mark.benchctl: {lit(message)}*"])
    result.stdout.fnmatch_lines(["*::test_timed * in-process *"])  # measured, in the table


def test_settings_are_in_force_for_the_measured_calls_and_restored_after(pytester):
    pytester.makepyfile("""
import pytest
import torch
from benchctl import fpenv

seen = []

def probe():
    seen.append((torch.get_num_threads(), fpenv.thread_state()["ftz"]))

def test_baseline():
    torch.set_num_threads(2)
    assert not fpenv.thread_state()["ftz"]

@pytest.mark.benchctl(threads=1, ftz="process")
def test_marked(benchctl):
    benchctl(probe)
    assert set(seen) == {(1, True)}
    assert torch.get_num_threads() == 2 and not fpenv.thread_state()["ftz"]

@pytest.mark.benchctl(threads=1, ftz="process")
def test_restored_after_an_exception(benchctl):
    def fails():
        assert torch.get_num_threads() == 1 and fpenv.thread_state()["ftz"]
        raise RuntimeError("while the settings were applied")
    with pytest.raises(RuntimeError):
        benchctl(fails)
    assert torch.get_num_threads() == 2 and not fpenv.thread_state()["ftz"]

@pytest.mark.benchctl(ftz="off")
class TestOff:
    def test_off_clears_a_flushed_process(self, benchctl):
        states = []
        with fpenv.flush_denormals(True, "process"):
            benchctl(lambda: states.append(fpenv.thread_state()["ftz"]))
            assert fpenv.thread_state()["ftz"]
        assert set(states) == {False}
""")
    result = run(pytester, "--benchctl-json=out.json")
    result.assert_outcomes(passed=4)
    doc = document.load(str(pytester.path / "out.json"))
    (marked,) = [r for r in doc["runs"] if r["cell"]["test"].endswith("::test_marked")]
    assert marked["readback"]["threads"]["observed"]["torch"] == 1
    assert marked["readback"]["ftz"]["observed"]["all_flushed"] is True


# ---------------------------------------------------------------- assertions


def test_assertions_pass_and_fail_on_clear_differences(pytester):
    pytester.makepyfile(WORK + """
def slow():
    return work(20000)

def fast():
    return work(200)

def test_faster_shown(benchctl):
    record = benchctl.assert_faster(fast, slow, by=2)
    assert record["outcome"] == "shown" and record["ratio"] < 0.5

def test_faster_not_shown(benchctl):
    benchctl.assert_faster(slow, fast, by=1.1)

def test_not_slower_shown(benchctl):
    benchctl.assert_not_slower(fast, slow)

def test_not_slower_not_shown(benchctl):
    benchctl.assert_not_slower(slow, fast, tolerance=0.05)
""")
    result = run(pytester, "--benchctl-json=out.json")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "slow is not 1.10× faster than fast: slow is * slower than fast [[]95% CI *] over * interleaved "
        "rounds; the whole interval falls short of 1.10× faster",
        "slow is slower than fast by more than the 5% tolerance: slow is * slower than fast [[]95% CI *] over * "
        "interleaved rounds; the whole interval of time(slow)/time(fast) is above 1.05",
    ])
    doc = document.load(str(pytester.path / "out.json"))
    records = [a for r in doc["runs"] for a in r["notes"]["assertions"]]
    assert sorted(a["outcome"] for a in records) == ["not_shown", "not_shown", "shown", "shown"]


def test_assertions_on_slow_calls_keep_to_the_minimum_rounds(pytester):
    pytester.makepyfile("""
import time

def test_sleeps(benchctl):
    record = benchctl.assert_faster(lambda: time.sleep(0.001), lambda: time.sleep(0.01), by=2, max_time=0.1)
    assert record["units_per_block"] == 1 and record["rounds"] + record["warmup_rounds"] == 10
    assert record["a"] == "fn_a" and record["b"] == "fn_b"
""")
    run(pytester).assert_outcomes(passed=1)


INCONCLUSIVE = """
import numpy as np
from benchctl.pytest_plugin import _assertions as assertions, _fixture as fixture

def test_straddles(benchctl, monkeypatch):
    measured = assertions.Interleaved(("a", "b"), np.ones(12), np.ones(12), (1, 1), 0, 1.0, (0.9, 1.1))
    monkeypatch.setattr(fixture, "interleave", lambda *args, **kwargs: measured)
    benchctl.assert_faster(sum, max, by=1.05)
"""


def test_an_inconclusive_assertion_skips_with_the_reason(pytester):
    pytester.makepyfile(INCONCLUSIVE)
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_an_inconclusive_assertion_skips_with_the_reason.py:*: "
                                 "inconclusive: cannot tell whether a is 1.05× faster than b: the speed-up is "
                                 "1.000× with a 95% interval from 0.91× to 1.11×, across 1.05×*"])


def test_an_inconclusive_assertion_fails_under_strict(pytester):
    pytester.makepyfile(INCONCLUSIVE)
    result = run(pytester, "--benchctl-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["inconclusive (--benchctl-strict): cannot tell whether a is 1.05× faster than b*"])


def _measured(ratio, lo, hi):
    return assertions.Interleaved(("a", "b"), np.ones(12), np.ones(12), (1, 1), 0, ratio, (lo, hi))


@pytest.mark.parametrize("ratio, lo, hi, outcome", [
    (0.5, 0.45, 0.55, "shown"),          # speed-up 1.82-2.22 >= 1.5
    (0.9, 0.85, 0.95, "not_shown"),      # speed-up 1.05-1.18 < 1.5
    (0.7, 0.6, 0.8, "inconclusive"),     # speed-up 1.25-1.67 straddles 1.5
])
def test_judge_faster_reads_the_interval_against_the_threshold(ratio, lo, hi, outcome):
    assert assertions.judge_faster(_measured(ratio, lo, hi), by=1.5).outcome == outcome


@pytest.mark.parametrize("ratio, lo, hi, outcome", [
    (1.01, 0.98, 1.04, "shown"),
    (1.2, 1.1, 1.3, "not_shown"),
    (1.05, 1.0, 1.1, "inconclusive"),
])
def test_judge_not_slower_reads_the_interval_against_the_tolerance(ratio, lo, hi, outcome):
    assert assertions.judge_not_slower(_measured(ratio, lo, hi), tolerance=0.05).outcome == outcome


@pytest.mark.parametrize("kwargs, message", [
    ("by=0.9", "by must be a finite number >= 1.0"),
    ("by=float('nan')", "by must be a finite number"),
    ("tolerance=-0.1", "tolerance must be a finite number >= 0.0"),
    ("max_time=0", "max_time must be a finite number of seconds > 0"),
])
def test_assertion_arguments_are_checked(pytester, kwargs, message):
    pytester.makepyfile(f"""
import pytest

def test_bad(benchctl):
    with pytest.raises(ValueError, match={message!r}):
        check = benchctl.assert_not_slower if {kwargs!r}.startswith("tolerance") else benchctl.assert_faster
        check(sum, max, args=([1],), {kwargs})
""")
    run(pytester).assert_outcomes(passed=1)


# ---------------------------------------------------------------- results file, compare


COMPARED = """
import os

def work(n):
    return sum(range(n))

def test_sized(benchctl):
    benchctl(work, int(os.environ["SIZE"]))

def test_fixed(benchctl):
    benchctl(work, 2000)
"""


def test_json_is_a_results_document_the_cli_reads(pytester, monkeypatch):
    pytester.makepyfile(COMPARED)
    monkeypatch.setenv("SIZE", "500")
    result = run(pytester, "--benchctl-json=out.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["results written to out.json (python -m benchctl report out.json)"])
    path = pytester.path / "out.json"
    doc = document.load(str(path))
    assert doc["version"] == document.VERSION and doc["workload"] == "pytest"
    assert doc["matrix"] == {"test": ["test_json_is_a_results_document_the_cli_reads.py::test_sized",
                                      "test_json_is_a_results_document_the_cli_reads.py::test_fixed"]}
    assert [e["cell"]["test"].split("::")[1] for e in doc["summary"]] == ["test_sized", "test_fixed"]
    phase = doc["runs"][0]["phases"]["call"]
    assert len(phase["ns"]) == len(phase["ticks"]) and phase["calls_per_round"] >= 1
    assert doc["metadata"]["system"] and doc["metadata"]["clock"]["frequency_hz"] > 0
    for command in (["report", str(path)], ["compare", str(path), str(path)],
                    ["report", str(path), "--export", "pyperf", "-o", str(pytester.path / "out.pyperf.json")]):
        done = subprocess.run([sys.executable, "-m", "benchctl", *command], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "test=test_json_is_a_results_document_the_cli_reads.py::test_sized" in done.stdout or \
            "pyperf file written" in done.stdout
    exported = json.loads((pytester.path / "out.pyperf.json").read_text())
    assert len(exported["benchmarks"]) == 2


def test_compare_calls_no_difference_for_in_process_tests(pytester, monkeypatch):
    pytester.makepyfile(COMPARED)
    monkeypatch.setenv("SIZE", "300")
    run(pytester, "--benchctl-json=saved.json").assert_outcomes(passed=2)
    monkeypatch.setenv("SIZE", "30000")
    result = run(pytester, "--benchctl-json=again.json", "--benchctl-compare=saved.json", "--benchctl-compare-fail")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK and (pytester.path / "again.json").exists()
    # No isolated test, no comparison the machine's drift could change: no reference is run.
    assert "session_reference" not in document.load(str(pytester.path / "again.json"))["metadata"]
    assert "the machine itself" not in result.stdout.str()
    result.stdout.fnmatch_lines([
        "against saved.json:", "  one process (2):",
        "    *::test_sized [[]call[]]: * (no interval: one process) from 1 and 1 process(es): no difference is "
        "called without two or more fresh processes per cell",
        "*",
        "  note: a test measured in-process is one process a side: no difference is called for it; mark it "
        "@pytest.mark.benchctl(isolate=True, repeat=3) in both runs to compare it"])


@pytest.mark.slow
def test_compare_calls_a_slowdown_of_an_isolated_test(pytester, monkeypatch):
    pytester.makepyfile("""
import os
import pytest

def work(n):
    return sum(range(n))

@pytest.mark.benchctl(isolate=True, repeat=2)
def test_sized(benchctl):
    benchctl(work, int(os.environ["SIZE"]))
""")
    monkeypatch.setenv("SIZE", "200")
    run(pytester, "--benchctl-json=saved.json").assert_outcomes(passed=1)
    monkeypatch.setenv("SIZE", "40000")
    slower = run(pytester, "--benchctl-compare=saved.json", "--benchctl-compare-fail")
    slower.assert_outcomes(passed=1)
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(["against saved.json:",
                                 "  the machine itself (fixed reference work in 3 and 3 fresh processes) ran *× "
                                 "[[]95% CI *] as long in this session as in the saved one: differences within ±*% "
                                 "are not called",
                                 "  slower (1):",
                                 "    *::test_sized [[]call[]]: * slower [[]95% CI *]"])
    assert "note:" not in slower.stdout.str()
    kept = document.load(str(pytester.path / "saved.json"))["metadata"]["session_reference"]
    assert kept["workload"] == "machine_reference" and kept["failed"] == 0
    assert len(kept["process_medians_ns"]) == 3 and min(kept["process_medians_ns"]) > 0  # repeat 2, at least 3


def test_a_session_that_measured_nothing_writes_no_file_and_says_so(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    baseline = pytester.path / "baseline.json"
    baseline.write_text("a saved baseline")
    result = run(pytester, f"--benchctl-json={baseline}", "--benchctl-json=fresh.json")  # the last one counts
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["--benchctl-json fresh.json not written: no test measured anything*"])
    assert not (pytester.path / "fresh.json").exists()
    again = run(pytester, f"--benchctl-json={baseline}")
    again.stdout.fnmatch_lines([f"--benchctl-json {baseline} not written: no test measured anything (a file already "
                                "there is left as it was)"])
    assert baseline.read_text() == "a saved baseline"


def test_a_saved_file_of_no_test_is_compared_with(pytester, tmp_path):
    path = str(tmp_path / "empty.json")  # as an earlier plugin wrote for a session that measured nothing
    document.save(document.new_document(results_file.WORKLOAD, {}, {}, 1, {}), path)
    pytester.makepyfile("def test_plain():\n    pass\n")
    again = run(pytester, f"--benchctl-compare={path}")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines([f"against {path}:", "  no test of this run measured anything to compare"])


def test_a_failed_test_s_timings_are_left_out_of_the_table_the_file_and_the_comparison(pytester):
    pytester.makepyfile(WORK + """
import pytest

def test_passes(benchctl):
    benchctl(work, 200)

def test_fails_after_timing(benchctl):
    benchctl(work, 200)
    assert False, "wrong result"

@pytest.mark.benchctl(threads=1)
def test_fails_after_asserting(benchctl):
    benchctl.assert_faster(lambda: work(20000), lambda: work(200), by=1.1)
""")
    result = run(pytester, "--benchctl-json=out.json")
    result.assert_outcomes(passed=1, failed=2)
    name = "test_a_failed_test_s_timings_are_left_out_of_the_table_the_file_and_the_comparison.py"
    result.stdout.fnmatch_lines([f"left out of the table, the results file and the comparison, because the test "
                                 f"failed: {name}::test_fails_after_timing, {name}::test_fails_after_asserting"])
    table = result.stdout.str().split("= benchctl =")[1].split("assertions:")[0]
    assert "::test_passes" in table and "::test_fails" not in table
    doc = document.load(str(pytester.path / "out.json"))
    # The failed assertion stays (it is the failure), on a run that holds no timings.
    assert doc["matrix"] == {"test": [f"{name}::test_passes", f"{name}::test_fails_after_asserting"]}
    kept = [r for r in doc["runs"] if r["cell"]["test"].endswith("after_asserting")]
    assert [r["phases"] for r in kept] == [{}] and kept[0]["notes"]["assertions"][0]["outcome"] == "not_shown"
    assert [e["cell"]["test"] for e in doc["summary"]] == [f"{name}::test_passes"]


def test_compare_refuses_a_file_of_another_workload(pytester, tmp_path):
    doc = document.new_document("sleep", {}, {}, 1, {})
    path = tmp_path / "other.json"
    document.save(doc, str(path))
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest_inprocess(f"--benchctl-compare={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*not by benchctl's pytest plugin; save a run with --benchctl-json*"])


def test_compare_judges_each_test_by_its_processes():
    from benchctl.pytest_plugin import _compare as compare

    def doc(medians):
        runs = [{"cell": {"test": test}, "repetition": r, "status": "ok",
                 "phases": {"call": {"ns": [m * f for f in (0.99, 1.0, 1.01)], "warmup": 0}}}
                for test, values in medians.items() for r, m in enumerate(values)]
        return {"matrix": {"test": list(medians)}, "runs": runs}

    saved = doc({"same": [1000, 1010, 990], "slow": [1000, 1010, 990], "fast": [1000, 1010, 990],
                 "wide": [1000, 1010, 990], "alone": [1000]})
    current = doc({"same": [1002, 998, 1000], "slow": [1500, 1490, 1510], "fast": [500, 505, 495],
                   "wide": [900, 1300, 1000], "alone": [3000], "added": [10]})
    found = {j.nodeid: j.category for j in compare.judge(current, saved)}
    assert found == {"same": "unchanged", "slow": "slower", "fast": "faster", "wide": "inconclusive",
                     "alone": "one process", "added": "new"}
    # Against a band of ±60% (a machine that moved that far) the 1.5x test is no longer called.
    assert {j.nodeid: j.category for j in compare.judge(current, saved, band=0.6)}["slow"] == "inconclusive"


def test_compare_calls_nothing_the_machine_itself_moved_by():
    from benchctl.pytest_plugin import _compare as compare, _reference as reference

    def doc(test_medians, reference_medians):
        runs = [{"cell": {"test": "t"}, "repetition": r, "status": "ok",
                 "phases": {"call": {"ns": [m * f for f in (0.99, 1.0, 1.01)], "warmup": 0}}}
                for r, m in enumerate(test_medians)]
        meta = {} if reference_medians is None else {"session_reference": {"process_medians_ns": reference_medians}}
        return {"matrix": {"test": ["t"]}, "runs": runs, "metadata": meta}

    saved = doc([1000, 1010, 990], [5000, 5050, 4950])
    steady = reference.drift(doc([1300, 1310, 1290], [5010, 4990, 5000]), saved)
    assert steady.band == processes.FLOOR and "differences within ±5% are not called" in steady.text
    moved_doc = doc([1300, 1310, 1290], [6500, 6600, 6400])
    moved = reference.drift(moved_doc, saved)
    assert moved.band > 0.3 and moved.comparison.ratio == pytest.approx(1.3, rel=0.01)
    assert "ran 1.30× [95% CI" in moved.text
    assert [j.category for j in compare.judge(moved_doc, saved, moved.band)] == ["inconclusive"]
    assert [j.category for j in compare.judge(moved_doc, saved, steady.band)] == ["slower"]
    unknown = reference.drift(moved_doc, doc([1000, 1010, 990], None))
    assert unknown.band == processes.FLOOR and unknown.comparison is None
    assert unknown.text.startswith("the saved run has no session reference")
    failed = doc([1300], None)
    failed["metadata"]["session_reference"] = {"process_medians_ns": [], "error": "boom"}
    assert reference.drift(failed, saved).text.startswith("this run's session reference failed (boom)")


def test_a_session_reference_that_cannot_run_is_said_and_the_results_kept(monkeypatch):
    import benchctl._run
    from benchctl.pytest_plugin import _reference as reference

    def refuse(*args, **kwargs):
        raise OSError("no fork here")

    monkeypatch.setattr(benchctl._run, "run_matrix", refuse)
    measured = reference.measure(2)
    assert measured["process_medians_ns"] == [] and measured["failed"] == 3
    assert measured["error"] == "OSError: no fork here"


# ---------------------------------------------------------------- isolation


@pytest.mark.slow
def test_isolated_tests_run_in_fresh_workers_with_their_settings(pytester, monkeypatch):
    monkeypatch.setenv("PARENT_PID", str(os.getpid()))  # workers inherit it
    pytester.makeconftest("""
import pytest

@pytest.fixture
def size():
    return 400
""")
    pytester.makepyfile(WORK + """
import os
import pytest

PARENT = int(os.environ["PARENT_PID"])

@pytest.mark.benchctl(isolate=True, repeat=2, env="BENCHCTL_TEST_VAR=7")
@pytest.mark.parametrize("k", [1, 3])
def test_measured(benchctl, size, k):
    assert os.environ["BENCHCTL_TEST_VAR"] == "7" and os.getpid() != PARENT
    benchctl(work, size * k)

@pytest.mark.benchctl(isolate=True, repeat=2)
def test_fails_in_worker(benchctl):
    assert os.getpid() == PARENT, "ran in a worker"

@pytest.mark.benchctl(isolate=True, repeat=2)
def test_skips_in_worker(benchctl):
    pytest.skip("nothing to measure here")
""")
    result = run(pytester, "--benchctl-json=out.json", "-rs")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "isolated run 1 of 2 failed (2 failed in all): call of *::test_fails_in_worker failed:",
        "E       AssertionError: ran in a worker",
        "*::test_measured[[]1[]] * 2 processes *",
        "SKIPPED [[]1[]] test_isolated_tests_run_in_fresh_workers_with_their_settings.py:*: nothing to measure here",
    ])
    doc = document.load(str(pytester.path / "out.json"))
    measured = [r for r in doc["runs"] if "test_measured" in r["cell"]["test"]]
    assert len(measured) == 4 and all(r["status"] == "ok" for r in measured)
    assert all(r["readback"]["env"]["observed"] == {"BENCHCTL_TEST_VAR": "7"} for r in measured)
    assert all(r["worker"]["pid"] != measured[0]["worker"]["pid"] for r in measured[1:])
    phase = measured[0]["phases"]["call"]
    assert phase["calls_per_round"] >= 1 and "minor_faults" in phase["counters"]


# ---------------------------------------------------------------- statistics


def test_stats_across_processes_use_their_medians():
    rng = np.random.default_rng(0)
    series = [(rng.normal(m, 1.0, 50), 4, 0) for m in (100.0, 110.0, 105.0)]
    s = Stats.from_processes(series)
    medians = [float(np.median(ns)) * 1e-9 for ns, _, _ in series]
    assert math.isclose(s.median, math.exp(np.mean(np.log(medians))))
    assert s.ci95[0] < min(medians) and s.ci95[1] > max(medians)  # 2 df: a wide interval
    assert len(s.processes) == 3 and s.rounds == 150 and s.iterations == 4
    assert "processes_differ" in Stats.from_processes([(np.full(20, 100.0), 1, 0), (np.full(20, 150.0), 1, 0)]).flags
    assert "one_process" in Stats.from_processes(series[:1]).flags
