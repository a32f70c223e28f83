"""The plugin's pytest hooks and its fixture: options, marker checks at collection, isolation,
outcome, output.

Every hook does nothing for a session in which no test uses benchctl, apart
from registering the options and the marker, and checking markers. What
measures (numpy, the native clock, the runner) is imported only once a test
uses benchctl, so a session that does not pays nothing for it: not the import
time, and not a failure of the clock's setup (a bad ``$BENCHCTL_CLOCK``).
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from ._collecting import bad_marker, stash_marker
from ._markers import MARKER, MARKER_HELP, Spec, parse
from ._options import Options, add_options
from ._session import FIXTURE, OUTCOME, PHASE, SESSION, SPEC, Session, serve, skip_here
from ._takeover import take_over

__all__ = ["benchctl", "pytest_addoption", "pytest_load_initial_conftests", "pytest_configure",
           "pytest_pycollect_makeitem", "pytest_runtest_setup", "pytest_pyfunc_call", "pytest_runtest_makereport",
           "pytest_sessionfinish", "pytest_terminal_summary"]


@pytest.fixture
def benchctl(request) -> Iterator:
    """Time a function with benchctl's clock: ``benchctl(fn, *args)``, ``benchctl.pedantic(...)``,
    ``benchctl.stats``, ``benchctl.assert_faster(a, b, by=1.1)``, ``benchctl.assert_not_slower(a, b)``;
    settings with ``@pytest.mark.benchctl(threads=1, ftz="process", pin="compact", isolate=True, ...)``."""
    from ._fixture import BenchctlFixture

    yield from serve(request, BenchctlFixture(request.node, request.config.stash[SESSION],
                                              request.node.stash.get(SPEC, Spec())))


def pytest_addoption(parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args) -> None:
    """--benchctl-as-benchmark: benchctl serves pytest-benchmark's fixture and marker (:mod:`._takeover`)."""
    take_over(early_config, parser)


def _bridge(config):
    """The recorder bridge of an isolated worker's session, if this is one."""
    from .._workloads.pytest_node import RecorderBridge

    return next((p for p in config.pluginmanager.get_plugins() if isinstance(p, RecorderBridge)), None)


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    try:
        options = Options.from_config(config)
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    if options.json_path and not os.path.isdir(os.path.dirname(os.path.abspath(options.json_path))):
        raise pytest.UsageError(f"--benchctl-json {options.json_path}: its directory does not exist")
    saved = None
    if options.compare_path:
        from .._results.document import ResultsError
        from . import _compare as compare

        try:
            saved = compare.load_saved(options.compare_path)
        except ResultsError as e:
            raise pytest.UsageError(f"--benchctl-compare: {e}") from None
    config.stash[SESSION] = Session(options, saved, bridge=_bridge(config))


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """Check each collected test's benchctl markers; a bad one fails that test (:func:`pytest_runtest_setup`)."""
    return stash_marker((yield), MARKER, SPEC, lambda item: parse(item.iter_markers(MARKER)))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    """A test whose benchctl (or benchmark) marker is bad fails here, before its fixtures, with what to write;
    the other tests of its file run."""
    bad = bad_marker(item)
    if bad is not None:
        pytest.fail(bad, pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """An isolated test runs in fresh workers, not here."""
    session = pyfuncitem.config.stash[SESSION]
    spec = pyfuncitem.stash.get(SPEC, Spec())
    if not spec.isolate or session.bridge is not None:
        return None
    from ._isolation import run_isolated

    result = run_isolated(pyfuncitem, spec, session.options, PHASE)
    record = session.record(pyfuncitem.nodeid)
    record.runs, record.stats, record.isolated = result.runs, result.stats, True
    record.assertions = [a for r in result.runs for a in (r.get("notes") or {}).get("assertions", [])]
    fixture = pyfuncitem.stash.get(FIXTURE, None)
    if fixture is not None:
        fixture.stats = result.stats
    if result.failure:
        pytest.fail(result.failure, pytrace=False)
    if result.skipped is not None:
        raise skip_here(result.skipped)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call" or (report.when == "setup" and not report.passed):
        item.stash[OUTCOME] = report.outcome
        state = item.config.stash.get(SESSION, None)
        if report.failed and state is not None:
            state.failed.append(item.nodeid)
    return report


def pytest_sessionfinish(session, exitstatus) -> None:
    state = session.config.stash.get(SESSION, None)
    if state is None or state.bridge is not None:
        return  # an isolated worker: its recorder carries the results
    state.drop_failed()
    if not state.records and not state.options.json_path and state.saved is None:
        return
    from .._results.document import save
    from . import _compare as compare, _reference as reference, _results_file as results_file

    isolated = [len(r.runs) for r in state.records.values() if r.isolated and r.runs]
    if isolated and (state.options.json_path or state.saved is not None):
        # How fast the machine itself ran this session, for a comparison with another.
        state.reference = reference.measure(max(isolated), state.options.worker_timeout_s)
    # A file of no runs is not written: under the name of a saved baseline it would replace it.
    write = bool(state.options.json_path) and any(r.runs for r in state.records.values())
    state.document = results_file.build(session.config, state, with_metadata=write)
    if write:
        save(state.document, state.options.json_path)
        state.json_written = True
    if state.saved is not None:
        state.drift = reference.drift(state.document, state.saved)
        state.judgements = compare.judge(state.document, state.saved, state.drift.band)
        slower = any(j.category == "slower" for j in state.judgements)
        # Only a passing session is turned into a failing one: a worse status says more.
        if state.options.compare_fail and slower and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    state = terminalreporter.config.stash.get(SESSION, None)
    if state is None or state.bridge is not None or not (state.records or state.document or state.judgements
                                                         or state.dropped):
        return
    from . import _terminal as terminal

    out = terminal.lines(state)
    if out:
        terminalreporter.write_sep("=", "benchctl")
        for line in out:
            terminalreporter.write_line(line)
