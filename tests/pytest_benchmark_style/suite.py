"""A benchmark suite written for pytest-benchmark, in the style of public projects' benchmark files.

Data for tests/test_pytest_as_benchmark.py, which copies it into a pytester
directory as test_style.py and runs it unchanged: under pytest-benchmark
itself, and under benchctl with --benchctl-as-benchmark (pytest-benchmark
installed and taken over, blocked with -p no:benchmark, or not loaded at all).
It is not named test_*.py, so the project's own test run does not collect it.
"""

import gc
import json

import pytest

DATA = list(range(400, 0, -1))
DOC = {"k%d" % i: [i, str(i), {"x": i}] for i in range(40)}


def insertion_sort(values):
    out = []
    for v in values:
        i = len(out)
        while i and out[i - 1] > v:
            i -= 1
        out.insert(i, v)
    return out


def scale(values, factor=1, offset=0):
    return [v * factor + offset for v in values]


# --------------------------------------------------------------- call forms


def test_function_with_args_and_kwargs(benchmark):
    result = benchmark(scale, DATA, factor=3, offset=1)
    assert result[0] == 400 * 3 + 1


def test_lambda_returns_the_result(benchmark):
    result = benchmark(lambda: sorted(DATA))
    assert result == sorted(DATA)


def test_builtin(benchmark):
    assert benchmark(json.dumps, DOC, sort_keys=True).startswith('{"k0"')


# --------------------------------------------------------------- pedantic


def test_pedantic_setup_returns_args_and_kwargs(benchmark):
    torn_down = []

    def setup():
        return (list(DATA),), {}

    def teardown(values):
        torn_down.append(len(values))

    result = benchmark.pedantic(insertion_sort, setup=setup, teardown=teardown, rounds=7, warmup_rounds=2)
    assert result == sorted(DATA)
    assert torn_down == [len(DATA)] * 9  # after every round, the warm-up ones included
    assert benchmark.stats.stats.rounds == 7


def test_pedantic_args_iterations(benchmark):
    result = benchmark.pedantic(sum, args=(DATA,), rounds=5, iterations=10)
    assert result == sum(DATA)
    assert benchmark.stats["rounds"] == 5


# --------------------------------------------------------------- extra_info, group, name; stats read in the test


def test_extra_info_and_throughput(benchmark):
    benchmark.extra_info["items"] = len(DATA)
    benchmark.group = "throughput"
    benchmark(sorted, DATA)
    stats = benchmark.stats
    assert 0 < stats.stats.min <= stats.stats.median <= stats.stats.max
    assert stats["mean"] > 0 and stats.stats.stddev >= 0 and stats.stats.iqr >= 0
    assert stats.stats.rounds >= 1
    assert stats.stats.ops == pytest.approx(1 / stats["mean"])
    benchmark.extra_info["items_per_s"] = len(DATA) / stats["median"]
    assert benchmark.name == "test_extra_info_and_throughput"
    assert benchmark.group == "throughput"


@pytest.mark.benchmark(group="sorting", min_rounds=7, max_time=0.05, warmup=False, disable_gc=True)
def test_group_marker(benchmark):
    assert benchmark(insertion_sort, DATA) == sorted(DATA)
    assert benchmark.group == "sorting"
    assert benchmark.stats.stats.rounds >= 1


# --------------------------------------------------------------- a wrapping fixture


@pytest.fixture
def quiet_benchmark(benchmark):
    """What suites write to configure the fixture once for many tests: gc off, tags in extra_info."""
    benchmark.extra_info["gc"] = "off"
    benchmark.group = "quiet"
    was = gc.isenabled()
    gc.disable()
    yield benchmark
    if was:
        gc.enable()


def test_through_a_wrapping_fixture(quiet_benchmark):
    assert quiet_benchmark(sum, DATA) == sum(DATA)
    assert quiet_benchmark.extra_info["gc"] == "off"


# --------------------------------------------------------------- parametrized, in a class


@pytest.mark.parametrize("size", [10, 100])
def test_parametrized(benchmark, size):
    values = DATA[:size]
    assert benchmark(sorted, values) == sorted(values)


@pytest.mark.benchmark(group="class")
class TestInAClass:
    def test_join(self, benchmark):
        assert benchmark("-".join, ["a"] * 50) == "-".join(["a"] * 50)

    @pytest.mark.parametrize("kind", ["list", "tuple"])
    def test_sum(self, benchmark, kind):
        values = list(DATA) if kind == "list" else tuple(DATA)
        assert benchmark(sum, values) == sum(DATA)


def test_not_a_benchmark():
    assert insertion_sort([3, 1, 2]) == [1, 2, 3]
