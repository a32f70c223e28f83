"""The plugin :mod:`._takeover` registers under ``--benchctl-as-benchmark``: pytest-benchmark's ``benchmark``
fixture and ``@pytest.mark.benchmark`` marker, served by benchctl, and its ``--benchmark-*`` options that benchctl
serves.

* ``benchmark``: :class:`.benchmark_fixture.AsBenchmarkFixture`, the ``benchctl``
  fixture under pytest-benchmark's names; its series goes to the session as a
  ``benchctl`` test's does (the terminal table, ``--benchctl-json``,
  ``--benchctl-compare``, ``@pytest.mark.benchctl`` settings and isolation);
* ``benchmark_weave``: refused, naming the call (:class:`.benchmark_fixture.NotServed`);
* the marker's keywords checked at collection (:mod:`._benchmark_marker`);
* ``--benchmark-skip`` / ``--benchmark-only`` skip the tests that use / do not use ``benchmark``,
  ``--benchmark-disable`` (unless ``--benchmark-enable``) calls each function once, untimed;
* ``--benchmark-json FILE``: pytest-benchmark's report (:mod:`._benchmark_json`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator, Optional

import pytest

from ._benchmark_marker import MARKER, MARKER_HELP, BenchmarkMark, parse
from ._collecting import stash_marker
from ._markers import Spec
from ._session import SESSION, SPEC, serve
from ._benchmark_options import SERVED_OPTIONS, UNSERVED

__all__ = ["STATE", "MARK", "AsBenchmark", "benchmark", "benchmark_weave", "pytest_configure",
           "pytest_pycollect_makeitem", "pytest_collection_modifyitems", "pytest_sessionfinish",
           "pytest_terminal_summary"]

SKIPPED = "Skipping benchmark (--benchmark-skip active)."
NOT_A_BENCHMARK = "Skipping non-benchmark (--benchmark-only active)."


@dataclass
class AsBenchmark:
    """The session's ``--benchmark-*`` options, and what each test left in its ``benchmark`` fixture."""

    json_path: Optional[str] = None
    disabled: bool = False
    skip: bool = False
    only: bool = False
    entries: dict = field(default_factory=dict)   # nodeid -> benchmark_fixture.BenchmarkEntry
    written: bool = False


STATE = pytest.StashKey[AsBenchmark]()
#: The test's checked benchmark marker (benchmark_marker.BenchmarkMark), stored at collection.
MARK = pytest.StashKey[BenchmarkMark]()


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    unserved = config.stash.get(UNSERVED, [])
    if unserved:
        served = ", ".join(option for option, _ in SERVED_OPTIONS)
        raise pytest.UsageError(
            f"{', '.join(unserved)}: pytest-benchmark's, not served under --benchctl-as-benchmark (benchctl serves "
            f"{served}; --benchctl-max-time, --benchctl-min-rounds and --benchctl-round-time set its timing)")
    get = config.getoption
    json_path = get("benchmark_json")
    json_path = os.fspath(json_path) if json_path is not None else None
    if json_path and not os.path.isdir(os.path.dirname(os.path.abspath(json_path))):
        raise pytest.UsageError(f"--benchmark-json {json_path}: its directory does not exist")
    state = AsBenchmark(json_path=json_path, disabled=get("benchmark_disable") and not get("benchmark_enable"),
                        skip=get("benchmark_skip"), only=get("benchmark_only"))
    if state.disabled and state.only:
        raise pytest.UsageError("--benchmark-only and --benchmark-disable contradict each other: "
                                "the first runs only benchmarks, the second does not time them")
    config.stash[STATE] = state


@pytest.fixture
def benchmark(request) -> Iterator:
    """pytest-benchmark's ``benchmark``, served by benchctl (``--benchctl-as-benchmark``): ``benchmark(fn, *args)``,
    ``benchmark.pedantic(...)``, ``benchmark.stats``, ``benchmark.extra_info``, ``benchmark.group``."""
    from ._benchmark_fixture import AsBenchmarkFixture

    state = request.config.stash[STATE]
    if state.skip and not state.only:
        pytest.skip(SKIPPED)
    node = request.node
    fixture = AsBenchmarkFixture(node, request.config.stash[SESSION], node.stash.get(SPEC, Spec()),
                                 node.stash.get(MARK, BenchmarkMark()), state.disabled)
    yield from serve(request, fixture)
    state.entries[node.nodeid] = fixture.entry()


@pytest.fixture
def benchmark_weave(benchmark):
    """pytest-benchmark's ``benchmark_weave``: not served by benchctl (the test fails, naming it)."""
    from ._benchmark_fixture import NotServed

    raise NotServed("weave")


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """Check each collected test's benchmark marker; a bad one fails that test, naming it."""
    return stash_marker((yield), MARKER, MARK, lambda item: parse(item.get_closest_marker(MARKER)))


def pytest_collection_modifyitems(config, items) -> None:
    state = config.stash[STATE]
    for item in items:
        uses = "benchmark" in getattr(item, "fixturenames", ())
        if uses and state.skip and not state.only:
            item.add_marker(pytest.mark.skip(reason=SKIPPED))
        elif not uses and state.only:
            item.add_marker(pytest.mark.skip(reason=NOT_A_BENCHMARK))


def pytest_sessionfinish(session, exitstatus) -> None:
    state = session.config.stash.get(STATE, None)
    measured = session.config.stash.get(SESSION, None)
    if state is None or not state.json_path or measured is None or measured.bridge is not None:
        return
    from . import _benchmark_json as benchmark_json

    benchmark_json.write(benchmark_json.build(measured, state.entries, str(session.config.rootpath)), state.json_path)
    state.written = True


@pytest.hookimpl(trylast=True)  # after benchctl's table
def pytest_terminal_summary(terminalreporter) -> None:
    state = terminalreporter.config.stash.get(STATE, None)
    if state is not None and state.written:
        terminalreporter.write_line(f"pytest-benchmark JSON written to {state.json_path} (served by benchctl)")
