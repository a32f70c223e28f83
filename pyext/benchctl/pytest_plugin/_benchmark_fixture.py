"""What a test gets as ``benchmark`` under ``--benchctl-as-benchmark``: the ``benchctl`` fixture
(:class:`.fixture.BenchctlFixture`: the same timing, settings and statistics) with pytest-benchmark's
names around it.

* ``benchmark(fn, *args, **kwargs)`` and ``benchmark.pedantic(fn, args, kwargs, setup, teardown, rounds,
  warmup_rounds, iterations)``, returning ``fn``'s result;
* ``name``, ``fullname``, ``param``, ``params``, ``group`` (the marker's, settable), ``extra_info``,
  ``disabled`` / ``enabled``, ``has_error``;
* ``stats``: :class:`.benchmark_stats.BenchmarkStats` (``stats["mean"]``, ``stats.stats.median``);
* the settings real suites write from a wrapping fixture: ``_min_rounds``, ``_max_time``, ``_min_time``,
  ``_disable_gc``, ``_warmup`` (the marker's keywords, for this test).

What pytest-benchmark offers and benchctl does not (:data:`NOT_SERVED`) raises
:class:`NotServed` naming the call, on reading or on setting it.
Under ``--benchmark-disable`` the function is called once, untimed, and
``stats`` stays None, as there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from ..errors import UnavailableError
from ._benchmark_marker import BenchmarkMark
from ._benchmark_stats import BenchmarkStats
from ._fixture import BenchctlFixture
from ._inprocess import Applied
from ._markers import Spec
from ._options import Options
from ._session import Session

__all__ = ["NOT_SERVED", "TIMER", "NotServed", "BenchmarkEntry", "AsBenchmarkFixture"]

_RERUN = "run the test without --benchctl-as-benchmark (pytest-benchmark serves it then)"
#: pytest-benchmark's fixture attributes that benchctl does not serve, and what to do instead.
NOT_SERVED = {
    "weave": "benchctl does not patch functions to time their calls; call benchmark(fn, ...) with the function",
    "patch": "benchctl does not patch functions to time their calls; call benchmark(fn, ...) with the function",
    "cprofile": "benchctl does not profile the benchmarked calls",
    "cprofile_loops": "benchctl does not profile the benchmarked calls",
    "cprofile_dump": "benchctl does not profile the benchmarked calls",
    "cprofile_stats": "benchctl does not profile the benchmarked calls",
    "_timer": "benchctl times with its own clock (choose it with $BENCHCTL_CLOCK)",
    "_precision": "benchctl does not run until a target precision; the median's 95% interval says how precise it is",
    "_confidence": "benchctl does not run until a target precision",
    "_calibration_precision": "benchctl calibrates rounds to the round time and its clock's read cost",
    "_calibrate_timer": "benchctl's calibration is its own (benchctl.pytest_plugin._timing.calibrate)",
    "_make_runner": "benchctl's timing loop is its own (benchctl.pytest_plugin._timing)",
    "_raw": "use benchmark(fn, ...)",
    "_raw_pedantic": "use benchmark.pedantic(fn, ...)",
    "_run_until_precise": "benchctl does not run until a target precision",
}


#: What the JSON's ``options.timer`` says (the clock's own description is under ``benchctl.clock``).
TIMER = "benchctl.clock"


@dataclass(frozen=True)
class BenchmarkEntry:
    """What pytest-benchmark's JSON says of a test besides its statistics, as the test left the fixture."""

    name: str
    fullname: str
    group: Optional[str]
    param: Optional[str]
    params: Optional[dict]
    has_error: bool
    options: dict


class NotServed(UnavailableError, NotImplementedError):
    """Something pytest-benchmark's fixture offers that benchctl's ``benchmark`` does not; names the call
    (this build cannot do it: the environment's kind of error)."""

    def __init__(self, name: str) -> None:
        call = f"benchmark.{name}" + ("(...)" if name in ("weave", "patch") else "")
        super().__init__(f"{call} is pytest-benchmark's and benchctl does not serve it under --benchctl-as-benchmark:"
                         f" {NOT_SERVED.get(name, 'benchctl has no counterpart')}; or {_RERUN}")


class AsBenchmarkFixture(BenchctlFixture):
    """``benchmark`` served by benchctl. One measured series per test, as in pytest-benchmark."""

    NAME = "benchmark"
    PEDANTIC_DETECTS_WARMUP = False

    def __init__(self, node, session: Session, spec: Spec, mark: BenchmarkMark, disabled: bool) -> None:
        super().__init__(node, session, spec)
        callspec = getattr(node, "callspec", None)
        self.name: str = node.name
        self.fullname: str = node.nodeid
        self.param: Optional[str] = callspec.id if callspec is not None else None
        self.params: Optional[dict] = dict(callspec.params) if callspec is not None else None
        self.group: Optional[str] = mark.group
        self.disabled = disabled
        self.has_error = False
        self._mark = mark
        self._view: Optional[BenchmarkStats] = None

    # ------------------------------------------------------------------ pytest-benchmark's names

    @property
    def enabled(self) -> bool:
        return not self.disabled

    @property
    def stats(self) -> Optional[BenchmarkStats]:
        """pytest-benchmark's statistics of the measured series (None before it, and when disabled)."""
        if self._view is None and self._stats is not None and self._series is not None:
            self._view = BenchmarkStats.of(self._series.ns[self._stats.warmup:], self._stats)
        return self._view

    @stats.setter
    def stats(self, value) -> None:  # the isolation hook: the body ran in the workers, not here
        self._stats, self._view = value, None

    def _setting(name: str, session_name: Optional[str], doc: str):  # noqa: N805 - used in the class body
        """A property over the marker's ``name``; read, it falls back on the session's ``session_name``."""
        def get(self):
            value = getattr(self._mark, name)
            return getattr(self._session.options, session_name) if value is None and session_name else value

        def set_(self, value):
            self._mark = dataclasses.replace(self._mark, **{name: value})

        return property(get, set_, doc=doc)

    _min_rounds = _setting("min_rounds", "min_rounds", "rounds at least (the marker's min_rounds)")
    _max_time = _setting("max_time_s", "max_time_s", "the series' time budget in seconds (the marker's max_time)")
    _min_time = _setting("min_time_s", "round_time_s", "a round's shortest duration in seconds (marker's min_time)")
    _disable_gc = _setting("disable_gc", None, "the garbage collector off around the measured calls")
    _warmup = _setting("warmup", None, "accepted: benchctl always sets detected warm-up rounds apart")
    del _setting

    def __getattr__(self, name: str) -> Any:
        if name in NOT_SERVED:
            raise NotServed(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in NOT_SERVED:
            raise NotServed(name)
        super().__setattr__(name, value)

    # ------------------------------------------------------------------ measuring

    def __call__(self, fn: Callable, *args, **kwargs) -> Any:
        if self.disabled:
            self._claim(f"{self.NAME}(fn)")
            return fn(*args, **kwargs)
        return self._guarded(super().__call__, fn, *args, **kwargs)

    def pedantic(self, fn: Callable, args=(), kwargs: Optional[dict] = None, setup: Optional[Callable] = None,
                 teardown: Optional[Callable] = None, rounds: int = 1, warmup_rounds: int = 0,
                 iterations: int = 1) -> Any:
        """pytest-benchmark's argument order: ``(target, args, kwargs, setup, teardown, rounds, warmup_rounds,
        iterations)``; see :meth:`.fixture.BenchctlFixture.pedantic`."""
        if self.disabled:
            self._claim(f"{self.NAME}.pedantic")
            if setup is not None:
                made = setup()
                if made is not None:
                    args, kwargs = made
            return fn(*args, **(kwargs or {}))
        return self._guarded(super().pedantic, fn, args, kwargs, setup, rounds, iterations, warmup_rounds, teardown)

    def _guarded(self, measure: Callable, *args, **kwargs) -> Any:
        try:
            return measure(*args, **kwargs)
        except Exception:
            self.has_error = True  # as pytest-benchmark: a benchmark that raised is left out of its JSON
            raise

    def _budget(self) -> Options:
        o = self._mark.budget(self._session.options)
        for name, value in (("_min_rounds", o.min_rounds), ("_max_time", o.max_time_s), ("_min_time", o.round_time_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"benchmark.{name} must be a number > 0, got {value!r}")
        return o

    def entry(self) -> BenchmarkEntry:
        o = self._mark.budget(self._session.options)
        options = {"disable_gc": self._mark.disable_gc, "timer": TIMER, "min_rounds": o.min_rounds,
                   "max_time": o.max_time_s, "min_time": o.round_time_s, "precision": None, "confidence": None,
                   "warmup": "detected"}
        return BenchmarkEntry(self.name, self.fullname, self.group, self.param, self.params, self.has_error, options)

    @contextlib.contextmanager
    def _settings(self) -> Iterator[Applied]:
        with super()._settings() as state, _gc_off(self._mark.disable_gc):
            yield state


@contextlib.contextmanager
def _gc_off(wanted: bool) -> Iterator[None]:
    """The garbage collector disabled for the block when ``wanted``; enabled again after if it was."""
    was = gc.isenabled()
    if wanted:
        gc.disable()
    try:
        yield
    finally:
        if wanted and was:
            gc.enable()
