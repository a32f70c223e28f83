"""What the ``benchctl`` fixture gives a test: pytest-benchmark's call forms, timed with benchctl's
clock and statistics (the fixture function is in :mod:`._hooks`, which imports this module only
when a test asks for it).

``benchctl(fn, *args, **kwargs)`` calibrates rounds and times them
(:func:`.timing.measure`) and returns ``fn``'s result;
``benchctl.pedantic(...)`` runs exactly the rounds asked for;
``benchctl.stats`` (:class:`.stats.Stats`) and ``benchctl.extra_info``
are filled as pytest-benchmark's are; ``assert_faster`` and
``assert_not_slower`` judge two callables timed interleaved
(:mod:`._assertions`). The test's ``@pytest.mark.benchctl`` settings are in
force around every measured call and undone afterwards (:mod:`._inprocess`).
In an isolated worker (:mod:`._isolation`) the rounds go to the worker's
recorder instead, and the worker has applied the settings itself.
"""

from __future__ import annotations

import contextlib
import json
import time
import zlib
from typing import Any, Callable, Iterator, Optional

import pytest

from .. import _validate
from ._assertions import INCONCLUSIVE, NOT_SHOWN, Judgement, check_threshold, interleave, judge_faster, \
    judge_not_slower
from ._inprocess import Applied, applied
from ._markers import Spec
from ._options import Options
from ._session import PHASE, Session, in_process_run, now, skip_here
from ._stats import Stats
from ._timing import Series, Target, measure, measure_pedantic

__all__ = ["BenchctlFixture"]


class BenchctlFixture:
    """What a test gets as ``benchctl``. One measured series per test (``benchctl(fn)`` or
    ``pedantic``); any number of ``assert_faster`` / ``assert_not_slower``."""

    #: How the fixture is called in messages (a subclass served under another name says that one).
    NAME = "benchctl"
    #: Whether a pedantic series' leading rounds may be set apart as warm-up by detection (pytest-benchmark's
    #: pedantic counts every round asked for: its caller says which rounds warm up, with warmup_rounds).
    PEDANTIC_DETECTS_WARMUP = True

    def __init__(self, node, session: Session, spec: Spec) -> None:
        self._node = node
        self._session = session
        self._spec = spec
        self._bridge = session.bridge
        #: JSON values stored with the test's results (as pytest-benchmark's ``extra_info``).
        self.extra_info: dict[str, Any] = {}
        self._stats: Optional[Stats] = None
        self._series: Optional[Series] = None
        self._readback: dict = {}
        self._assertions: list[dict] = []
        self._used: Optional[str] = None
        self._started_at, self._started = now(), time.perf_counter()
        self._seed = zlib.crc32(node.nodeid.encode())

    @property
    def stats(self) -> Optional[Stats]:
        """The measured series' statistics (:class:`benchctl.pytest_plugin._stats.Stats`), None before."""
        return self._stats

    @stats.setter
    def stats(self, value: Optional[Stats]) -> None:  # the isolation hook hands the workers' stats over
        self._stats = value

    # ------------------------------------------------------------------ measuring

    def __call__(self, fn: Callable, *args, **kwargs) -> Any:
        """Time ``fn(*args, **kwargs)`` in calibrated rounds; return its result."""
        self._claim(f"{self.NAME}(fn)")
        target = Target(fn, args, kwargs)
        budget = self._budget()
        with self._settings() as state:
            series = measure(target, min_round_ns=budget.round_time_s * 1e9, max_time_ns=budget.max_time_s * 1e9,
                             min_rounds=budget.min_rounds, recorder=self._recorder, phase=PHASE)
            self._readback = state.read_back()
        self._keep(series)
        return target.result

    def pedantic(self, fn: Callable, args=(), kwargs: Optional[dict] = None, setup: Optional[Callable] = None,
                 rounds: int = 1, iterations: int = 1, warmup_rounds: int = 0,
                 teardown: Optional[Callable] = None) -> Any:
        """Exactly ``rounds`` timed rounds of ``iterations`` calls after ``warmup_rounds`` untimed ones;
        ``setup()`` runs before each round, untimed, and may return ``(args, kwargs)`` for it;
        ``teardown(*args, **kwargs)`` runs after each round with that round's arguments, untimed.
        Returns the last call's result. Each round adds the cost of starting it (~0.1 us) to its
        time: for calls that short, use ``benchctl(fn)``, which calibrates."""
        rounds = _validate.count("rounds", rounds, 1)
        iterations = _validate.count("iterations", iterations, 1)
        warmup_rounds = _validate.count("warmup_rounds", warmup_rounds, 0)
        for name, hook in (("setup", setup), ("teardown", teardown)):
            if hook is not None and not callable(hook):
                raise _validate.ArgumentError(f"{name} must be callable or None, got {type(hook).__name__}")
        if setup is not None and iterations > 1:
            raise _validate.ArgumentError("pedantic: setup runs once per round, so iterations must be 1 with it "
                                          "(each call would otherwise reuse the round's arguments)")
        if not isinstance(args, (tuple, list)) or not isinstance(kwargs, (dict, type(None))):
            raise _validate.ArgumentError("pedantic: args must be a tuple or list and kwargs a dict or None")
        self._claim(f"{self.NAME}.pedantic")
        target = Target(fn, args, kwargs)
        with self._settings() as state:
            series = measure_pedantic(target, rounds=rounds, iterations=iterations, warmup_rounds=warmup_rounds,
                                      setup=setup, teardown=teardown, recorder=self._recorder, phase=PHASE)
            self._readback = state.read_back()
        self._keep(series, warmup=None if self.PEDANTIC_DETECTS_WARMUP else 0)
        return target.result

    def assert_faster(self, fn_a: Callable, fn_b: Callable, by: float = 1.1, *, args=(),
                      kwargs: Optional[dict] = None, max_time: Optional[float] = None) -> dict:
        """Fail unless ``fn_a`` is faster than ``fn_b`` by at least ``by`` (time B / time A), with 95%
        confidence; skip (fail under --benchctl-strict) when the interval straddles ``by``.
        Both get ``args``/``kwargs``. Returns the assertion's record."""
        by = check_threshold("by", by, 1.0)
        return self._conclude(judge_faster(self._interleave(fn_a, fn_b, args, kwargs, max_time), by))

    def assert_not_slower(self, fn_a: Callable, fn_b: Callable, tolerance: float = 0.05, *, args=(),
                          kwargs: Optional[dict] = None, max_time: Optional[float] = None) -> dict:
        """Fail when ``fn_a`` is slower than ``fn_b`` by more than ``tolerance`` (0.05: 5%), with 95%
        confidence; skip (fail under --benchctl-strict) when the interval straddles the limit."""
        tolerance = check_threshold("tolerance", tolerance, 0.0)
        return self._conclude(judge_not_slower(self._interleave(fn_a, fn_b, args, kwargs, max_time), tolerance))

    # ------------------------------------------------------------------ internals

    @property
    def _recorder(self):
        return self._bridge.rec if self._bridge is not None else None

    def _budget(self) -> Options:
        """The round time, time budget and minimum rounds of this test's series (the session's)."""
        return self._session.options

    def _claim(self, how: str) -> None:
        if self._used is not None:
            raise RuntimeError(f"the {self.NAME} fixture measures one series per test and {self._used} already "
                               f"did; time the other function in its own test, or compare the two with "
                               f"{self.NAME}.assert_faster / assert_not_slower")
        self._used = how

    @contextlib.contextmanager
    def _settings(self) -> Iterator[Applied]:
        # An isolated worker started with the settings applied: applying them again in-process
        # would differ (pinning a pinned team collapses it onto one CPU).
        with applied([] if self._bridge is not None else self._spec.in_process_settings()) as state:
            yield state

    def _keep(self, series: Series, warmup: Optional[int] = None) -> None:
        """Keep the series and its stats (``warmup`` None: leading warm-up rounds detected)."""
        self._series = series
        self._stats = Stats.from_rounds(series.ns, series.calls_per_round, warmup=warmup, seed=self._seed)

    def _interleave(self, fn_a, fn_b, args, kwargs, max_time):
        budget = self._session.options.max_time_s if max_time is None else _validate.seconds("max_time", max_time)
        targets = Target(fn_a, args, kwargs), Target(fn_b, args, kwargs)
        with self._settings() as state:
            result = interleave(*targets, min_round_ns=self._session.options.round_time_s * 1e9,
                                max_time_ns=budget * 1e9, seed=self._seed + len(self._assertions))
            if not self._readback:
                self._readback = state.read_back()
        return result

    def _conclude(self, judgement: Judgement) -> dict:
        self._assertions.append(judgement.record)
        if judgement.outcome == NOT_SHOWN:
            pytest.fail(judgement.message, pytrace=False)
        if judgement.outcome == INCONCLUSIVE:
            if self._session.options.strict:
                pytest.fail(f"inconclusive (--benchctl-strict): {judgement.message}", pytrace=False)
            raise skip_here(f"inconclusive: {judgement.message}")
        return judgement.record

    def _notes(self) -> dict:
        try:
            json.dumps(self.extra_info)
        except (TypeError, ValueError) as e:
            pytest.fail(f"{self.NAME}.extra_info must hold JSON values (it goes into the results file): {e}",
                        pytrace=False)
        notes: dict[str, Any] = {"extra_info": self.extra_info, "assertions": self._assertions}
        if self._series is not None:
            notes["calls_per_round"] = {PHASE: self._series.calls_per_round}
        return notes

    def finish(self, outcome: Optional[str]) -> None:
        """At teardown: hand what was measured to the session (or to the worker's recorder)."""
        if self._spec.isolate and self._bridge is None:
            return  # the isolation hook recorded the workers' runs
        notes = self._notes()
        if self._bridge is not None:
            for key, value in notes.items():
                self._bridge.rec.note(key, value)
            return
        if self._series is None and not self._assertions and not self.extra_info:
            return  # requested but never used: nothing to report
        notes["outcome"] = outcome
        record = self._session.record(self._node.nodeid)
        record.runs = [in_process_run(self._node.nodeid, self._series, self._stats.warmup if self._stats else 0,
                                      self._readback, notes, self._started_at,
                                      time.perf_counter() - self._started)]
        record.stats, record.assertions = self._stats, list(self._assertions)

