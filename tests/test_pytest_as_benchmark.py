"""``--benchctl-as-benchmark``: pytest-benchmark suites run unchanged on benchctl, tested with pytester.

The acceptance suite is tests/pytest_benchmark_style/suite.py (pytest-benchmark's call forms as public
projects write them); it runs under pytest-benchmark itself, under benchctl with pytest-benchmark
installed and taken over, with it blocked (-p no:benchmark), and with it not loaded at all.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchctl._results import document

pytest_plugins = ["pytester"]

SUITE = (Path(__file__).parent / "pytest_benchmark_style" / "suite.py").read_text()
FAST = ("--benchctl-max-time=0.02", "-p", "no:cacheprovider")
AS = "--benchctl-as-benchmark"
SUITE_TESTS = 14  # 13 benchmarks and one plain test

try:
    import pytest_benchmark  # noqa: F401
    HAVE_PYTEST_BENCHMARK = True
except ImportError:
    HAVE_PYTEST_BENCHMARK = False
needs_pytest_benchmark = pytest.mark.skipif(not HAVE_PYTEST_BENCHMARK, reason="pytest-benchmark is not installed "
                                            "(pip install '.[test]'): its own reader and CLI are the acceptance")


@pytest.fixture(scope="module", autouse=True)
def _import_what_inner_sessions_import():
    """As in test_pytest_plugin.py: modules first imported inside an in-process session are forgotten after it,
    and some cannot be imported twice into one process."""
    from benchctl import _workloads, settings  # noqa: F401
    from benchctl.pytest_plugin import (_as_benchmark, _benchmark_fixture, _benchmark_json, _compare,  # noqa: F401
                                        _fixture, _isolation, _results_file, _terminal)
    from benchctl._system import metadata

    metadata.collect()
    _workloads.names()


def run(pytester, *args):
    return pytester.runpytest_inprocess(*FAST, *args)


def run_without_pytest_benchmark(directory, *args):
    """pytest in a fresh process where pytest-benchmark cannot be imported and no entry point is loaded: what an
    environment without it installed looks like to pytest."""
    code = ("import sys; sys.modules['pytest_benchmark'] = None; import pytest; "
            f"sys.exit(pytest.main({['-p', 'benchctl.pytest_plugin', *FAST, *args]!r}))")
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=directory, env=env, capture_output=True, text=True,
                          timeout=300)


def load(path):
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------------- the acceptance suite, unchanged


@pytest.mark.slow
@needs_pytest_benchmark
def test_the_suite_is_a_pytest_benchmark_suite(pytester):
    """Under pytest-benchmark itself (no flag) the suite passes: it asks nothing pytest-benchmark lacks."""
    pytester.makepyfile(test_style=SUITE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--benchmark-max-time=0.005",
                                          "--benchmark-json=theirs.json")
    result.assert_outcomes(passed=SUITE_TESTS)
    assert len(load(pytester.path / "theirs.json")["benchmarks"]) == SUITE_TESTS - 1


@pytest.mark.slow
@pytest.mark.parametrize("blocked", [False, True], ids=["taken-over", "p-no-benchmark"])
def test_the_suite_passes_unchanged_under_benchctl(pytester, blocked):
    pytester.makepyfile(test_style=SUITE)
    result = run(pytester, AS, "--benchmark-json=out.json", "--benchctl-json=ours.json",
                 *(["-p", "no:benchmark"] if blocked else []))
    result.assert_outcomes(passed=SUITE_TESTS)
    result.stdout.fnmatch_lines(["*= benchctl =*", "*test_style.py::test_group_marker *in-process*",
                                 "pytest-benchmark JSON written to out.json (served by benchctl)"])
    report = load(pytester.path / "out.json")
    names = [b["name"] for b in report["benchmarks"]]
    assert len(names) == SUITE_TESTS - 1 and "test_not_a_benchmark" not in names
    assert "test_parametrized[10]" in names and "test_sum[tuple]" in names
    # benchctl's own results file holds the same tests, with the same medians.
    summary = document.load(str(pytester.path / "ours.json"))["summary"]
    ours = {e["cell"]["test"]: e["median_ms"] * 1e-3 for e in summary}
    for b in report["benchmarks"]:
        assert b["stats"]["median"] == pytest.approx(ours[b["fullname"]], rel=1e-9)


@pytest.mark.slow
def test_the_suite_passes_unchanged_without_pytest_benchmark(pytester):
    pytester.makepyfile(test_style=SUITE)
    pytester.makeconftest("""
import sys

def pytest_configure(config):
    # what this run is about: pytest-benchmark is nowhere in it
    assert sys.modules.get("pytest_benchmark") is None
    assert not any("pytest_benchmark" in getattr(p, "__name__", "") for p in config.pluginmanager.get_plugins())
""")
    done = run_without_pytest_benchmark(pytester.path, AS, "--benchmark-json=out.json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{SUITE_TESTS} passed" in done.stdout
    assert len(load(pytester.path / "out.json")["benchmarks"]) == SUITE_TESTS - 1


@pytest.mark.slow
def test_without_pytest_benchmark_its_unserved_options_do_not_exist(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    done = run_without_pytest_benchmark(pytester.path, AS, "--benchmark-max-time=1")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --benchmark-max-time=1" in done.stderr


@pytest.mark.slow
def test_the_flag_imports_nothing_heavy_until_a_test_times(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.makeconftest("""
import sys

def pytest_sessionfinish(session):
    print("heavy:", [m for m in ("numpy", "torch", "benchctl._native", "benchctl.clock") if m in sys.modules])
""")
    done = subprocess.run([sys.executable, "-m", "pytest", "-s", *FAST, AS, "-p", "no:benchmark"],
                          cwd=pytester.path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "heavy: []" in done.stdout


# ---------------------------------------------------------------- one plugin serves benchmark

SERVED_BY = """
def test_who_serves(benchmark, request):
    print("served by", type(benchmark).__module__, request.config.pluginmanager.get_plugin("benchmark"))
    benchmark(len, "x")
"""


@needs_pytest_benchmark
def test_one_plugin_serves_benchmark(pytester):
    pytester.makepyfile(SERVED_BY)
    ours = run(pytester, AS, "-s")
    ours.assert_outcomes(passed=1)
    ours.stdout.fnmatch_lines(["*served by benchctl.pytest_plugin._benchmark_fixture None*"])
    assert "pytest-benchmark" not in ours.stdout.str().split("= benchctl =")[0]  # not its header, not its table
    theirs = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-s", "--benchmark-max-time=0.001")
    theirs.assert_outcomes(passed=1)
    theirs.stdout.fnmatch_lines(["*served by pytest_benchmark.fixture <module 'pytest_benchmark.plugin'*"])
    assert "= benchctl =" not in theirs.stdout.str()


@needs_pytest_benchmark
def test_a_conftest_cannot_bring_pytest_benchmark_back(pytester):
    pytester.makeconftest('pytest_plugins = ["pytest_benchmark.plugin"]\n')
    pytester.makepyfile(SERVED_BY)
    result = run(pytester, AS, "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*served by benchctl.pytest_plugin._benchmark_fixture None*"])


@needs_pytest_benchmark
def test_pytest_benchmark_options_benchctl_does_not_serve_are_refused(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = run(pytester, AS, "--benchmark-max-time=0.5", "--benchmark-autosave")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark-max-time, --benchmark-autosave: pytest-benchmark's, not served under "
                                 "--benchctl-as-benchmark (benchctl serves --benchmark-json, --benchmark-disable, "
                                 "--benchmark-enable, --benchmark-skip, --benchmark-only; --benchctl-max-time, *"])


# ---------------------------------------------------------------- --benchmark-json in pytest-benchmark's schema

JSON_SUITE = """
import pytest

@pytest.mark.parametrize("n", [10, 20])
def test_sum(benchmark, n):
    benchmark.extra_info["n"] = n
    benchmark(sum, range(n))

@pytest.mark.benchmark(group="io")
def test_grouped(benchmark):
    benchmark.pedantic(str, args=(12345,), rounds=12, iterations=3)

def test_raises(benchmark):
    benchmark(int, "not a number")
"""


@needs_pytest_benchmark
def test_json_loads_in_pytest_benchmarks_reader_and_compare(pytester):
    from pytest_benchmark.storage.file import FileStorage

    pytester.makepyfile(JSON_SUITE)
    result = run(pytester, AS, "--benchmark-json=out.json")
    result.assert_outcomes(passed=3, failed=1)
    path = pytester.path / "out.json"
    report = load(path)
    assert set(report) >= {"machine_info", "commit_info", "benchmarks", "datetime", "version", "benchctl"}
    assert report["machine_info"]["python_version"] == ".".join(map(str, sys.version_info[:3]))
    assert report["benchctl"]["clock"]["frequency_hz"] > 0
    # The benchmark whose function raised is left out, as pytest-benchmark leaves it out.
    assert [b["name"] for b in report["benchmarks"]] == ["test_sum[10]", "test_sum[20]", "test_grouped"]
    first, _, grouped = report["benchmarks"]
    assert first["params"] == {"n": 10} and first["param"] == "10" and first["extra_info"] == {"n": 10}
    assert first["fullname"].endswith("::test_sum[10]") and first["group"] is None
    assert grouped["group"] == "io" and grouped["stats"]["rounds"] == 12 and grouped["stats"]["iterations"] == 3
    for b in report["benchmarks"]:
        s = b["stats"]
        assert len(s["data"]) == s["rounds"] and s["total"] == pytest.approx(sum(s["data"]))
        assert s["min"] <= s["ld15iqr"] <= s["median"] <= s["hd15iqr"] <= s["max"]
        assert s["q1"] <= s["median"] <= s["q3"]
        assert s["iqr"] == pytest.approx(s["q3"] - s["q1"]) and s["ops"] == pytest.approx(1 / s["mean"])
        assert s["outliers"] == f"{s['stddev_outliers']};{s['iqr_outliers']}"
        ci = b["benchctl"]["median_ci95"]
        assert 0 < ci[0] <= ci[1] and b["benchctl"]["calls_per_round"] == s["iterations"]
        assert b["options"]["timer"] == "benchctl.clock"

    warnings = []

    class Logger:
        def warning(self, text, **_):
            warnings.append(text)

        info = debug = error = warning

    loaded = list(FileStorage(str(pytester.path), logger=Logger()).load_benchmarks(str(path)))
    assert not warnings, warnings
    assert [b["name"] for b in loaded] == ["test_sum[10]", "test_sum[20]", "test_grouped"]
    assert loaded[2]["median"] == grouped["stats"]["median"]  # the reader flattens stats into the entry

    done = subprocess.run([sys.executable, "-m", "pytest_benchmark", "compare", str(path)], cwd=pytester.path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Failed to load" not in done.stdout + done.stderr
    for name in ("test_sum[10]", "test_sum[20]", "test_grouped", "benchmark 'io': 1 tests"):
        assert name in done.stdout


# ---------------------------------------------------------------- the marker and what a fixture may set

MARKED = """
import gc
import pytest

def gc_state():
    return gc.isenabled()

@pytest.mark.benchmark(min_rounds=30, max_time=1e-6, min_time=1e-6)
def test_rounds(benchmark):
    benchmark(len, "abc")
    assert benchmark.stats.rounds + benchmark.stats.benchctl.warmup == 30

@pytest.mark.benchmark(disable_gc=True)
def test_gc_off(benchmark):
    assert benchmark(gc_state) is False
    assert gc.isenabled()

@pytest.fixture
def configured(benchmark):
    assert benchmark._min_rounds == 15 and benchmark._max_time == 0.02  # the session's, read as suites read them
    benchmark._min_rounds = 25
    benchmark._max_time = 1e-6
    benchmark._disable_gc = True
    return benchmark

def test_set_from_a_fixture(configured):
    assert configured(gc_state) is False
    assert configured.stats.rounds + configured.stats.benchctl.warmup == 25

class TestNearestMarkerWins:
    pytestmark = pytest.mark.benchmark(group="class", min_rounds=3)

    @pytest.mark.benchmark(group="function")
    def test_function_marker(self, benchmark):
        assert benchmark.group == "function"
"""


def test_marker_keywords_and_fixture_settings_are_honoured(pytester):
    pytester.makepyfile(MARKED)
    run(pytester, AS).assert_outcomes(passed=4)


@pytest.mark.parametrize("marker, message", [
    ("timer=time.process_time", "timer= is pytest-benchmark's and not served under --benchctl-as-benchmark: "
                                "benchctl times with its own clock"),
    ("precision=0.01", "precision= is pytest-benchmark's and not served"),
    ("cprofile=True", "cprofile= is pytest-benchmark's and not served"),
    ("min_rounds=0", "min_rounds must be a positive integer, got 0"),
    ("max_time=-1", "max_time must be a number of seconds > 0, got -1"),
    ("grup='x'", "unknown keyword grup"),
    ("'io'", "takes keywords only"),
])
def test_bad_benchmark_markers_fail_at_collection_naming_the_test(pytester, marker, message):
    pytester.makepyfile(f"""
import time
import pytest

@pytest.mark.benchmark({marker})
def test_marked(benchmark):
    benchmark(len, "x")
""")
    result = run(pytester, AS)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*test_marked: @pytest.mark.benchmark: *{message}*"])


# ---------------------------------------------------------------- what benchctl does not serve fails clearly

NOT_SERVED = """
import pytest

def target():
    return 1

def test_weave(benchmark):
    benchmark.weave(target)

def test_weave_fixture(benchmark_weave):
    benchmark_weave(target)

def test_set_timer(benchmark):
    benchmark._timer = lambda: 0

def test_cprofile_stats(benchmark):
    benchmark(target)
    benchmark.cprofile_stats

def test_a_typo_is_an_ordinary_attribute_error(benchmark):
    benchmark.pedantc(target)

def test_used_twice(benchmark):
    benchmark(target)
    benchmark(target)
"""


def test_what_benchctl_does_not_serve_fails_naming_the_call(pytester):
    pytester.makepyfile(NOT_SERVED)
    result = run(pytester, AS)
    result.assert_outcomes(failed=5, errors=1)
    out = result.stdout.str()
    served = "is pytest-benchmark's and benchctl does not serve it under --benchctl-as-benchmark"
    result.stdout.fnmatch_lines([
        f"*NotServed: benchmark.weave(...) {served}: benchctl does not patch functions*",
        f"*NotServed: benchmark._timer {served}: benchctl times with its own clock*",
        f"*NotServed: benchmark.cprofile_stats {served}: benchctl does not profile*",
        "*AttributeError: 'AsBenchmarkFixture' object has no attribute 'pedantc'*",
        "*RuntimeError: the benchmark fixture measures one series per test and benchmark(fn) already did*",
    ])
    assert "AttributeError: 'AsBenchmarkFixture' object has no attribute 'weave'" not in out
    assert out.count("or run the test without --benchctl-as-benchmark (pytest-benchmark serves it then)") >= 4


# ---------------------------------------------------------------- --benchmark-skip, -only, -disable

MIXED = """
def test_bench(benchmark):
    assert benchmark(sum, [1, 2]) == 3

def test_pedantic_bench(benchmark):
    assert benchmark.pedantic(sum, setup=lambda: (([1, 2],), {}), rounds=3) == 3
    print("stats:", benchmark.stats)

def test_plain():
    pass
"""


@pytest.mark.parametrize("args, outcomes", [
    (("--benchmark-skip",), dict(passed=1, skipped=2)),
    (("--benchmark-only",), dict(passed=2, skipped=1)),
    (("--benchmark-only", "--benchmark-skip"), dict(passed=2, skipped=1)),
    (("--benchmark-disable",), dict(passed=3)),
    (("--benchmark-disable", "--benchmark-enable"), dict(passed=3)),
])
@pytest.mark.parametrize("blocked", [False, True], ids=["taken-over", "p-no-benchmark"])
def test_skip_only_and_disable_behave_as_in_pytest_benchmark(pytester, args, outcomes, blocked):
    if not blocked and not HAVE_PYTEST_BENCHMARK:
        pytest.skip("pytest-benchmark is not installed: nothing to take over")
    pytester.makepyfile(MIXED)
    result = run(pytester, AS, "-s", "-rs", "--benchmark-json=out.json", *args,
                 *(["-p", "no:benchmark"] if blocked else []))
    result.assert_outcomes(**outcomes)
    timed = [b["name"] for b in load(pytester.path / "out.json")["benchmarks"]]
    disabled = "--benchmark-disable" in args and "--benchmark-enable" not in args
    if "--benchmark-skip" in args and "--benchmark-only" not in args:
        result.stdout.fnmatch_lines(["*Skipping benchmark (--benchmark-skip active).*"])
    if "--benchmark-only" in args:
        result.stdout.fnmatch_lines(["*Skipping non-benchmark (--benchmark-only active).*"])
    if disabled:
        result.stdout.fnmatch_lines(["*stats: None"])  # called once, untimed, as in pytest-benchmark
    expected = [] if disabled or "--benchmark-skip" in args and "--benchmark-only" not in args \
        else ["test_bench", "test_pedantic_bench"]
    assert timed == expected


def test_only_with_disable_is_a_usage_error(pytester):
    pytester.makepyfile(MIXED)
    result = run(pytester, AS, "--benchmark-only", "--benchmark-disable")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark-only and --benchmark-disable contradict each other*"])


# ---------------------------------------------------------------- benchctl's own settings and isolation


@pytest.mark.slow
def test_benchctl_markers_and_isolation_apply_to_benchmark_tests(pytester):
    pytester.makepyfile("""
import pytest

@pytest.mark.benchctl(isolate=True, repeat=2)
@pytest.mark.benchmark(group="isolated")
def test_isolated(benchmark):
    benchmark.extra_info["where"] = "worker"
    benchmark(sum, range(100))
    assert benchmark.stats["rounds"] >= 1
""")
    result = run(pytester, AS, "--benchmark-json=out.json", "-p", "no:benchmark")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_isolated *2 processes*"])
    (b,) = load(pytester.path / "out.json")["benchmarks"]
    assert b["group"] == "isolated" and b["extra_info"] == {"where": "worker"}
    assert b["benchctl"]["isolated"] and len(b["benchctl"]["process_medians"]) == 2
    assert len(b["stats"]["data"]) == b["stats"]["rounds"]


def test_the_benchctl_fixture_gets_pedantic_teardown_too(pytester):
    pytester.makepyfile("""
def test_teardown(benchctl):
    seen = []
    benchctl.pedantic(sorted, setup=lambda: (([3, 1, 2],), {"reverse": True}),
                      teardown=lambda values, reverse: seen.append((values, reverse)), rounds=3, warmup_rounds=1)
    assert seen == [([3, 1, 2], True)] * 4
""")
    run(pytester).assert_outcomes(passed=1)


def test_help_shows_the_flag_and_the_options_it_adds(pytester):
    plain = pytester.runpytest_inprocess("--help", "-p", "no:benchmark").stdout.str()
    assert "--benchctl-as-benchmark" in plain and "--benchmark-json=PATH" not in plain
    served = pytester.runpytest_inprocess("--help", "-p", "no:benchmark", AS).stdout.str()
    for option in ("--benchmark-json=PATH", "--benchmark-disable", "--benchmark-enable", "--benchmark-skip",
                   "--benchmark-only"):
        assert option in served
    assert "--benchmark-max-time" not in served
