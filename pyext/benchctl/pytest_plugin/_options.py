"""The plugin's command-line options, checked once per session into :class:`Options`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

__all__ = ["DEFAULT_MAX_TIME_S", "DEFAULT_MIN_ROUNDS", "DEFAULT_ROUND_TIME_S", "Options", "add_options"]

DEFAULT_MAX_TIME_S = 1.0
#: Ten steady rounds is what a bootstrap CI of the median needs (results.stats.MIN_SAMPLES_FOR_CI);
#: a few more leave room for a detected warm-up.
DEFAULT_MIN_ROUNDS = 15
#: A round's shortest duration: long against the clock's read cost (~20 ns) and against the
#: per-round cost of the timing loop (~0.1 us), short against a time slice.
DEFAULT_ROUND_TIME_S = 50e-6


def add_options(parser) -> None:
    group = parser.getgroup("benchctl", "benchctl: timings with benchctl's clock, settings and statistics")
    group.addoption("--benchctl-max-time", metavar="SECONDS", type=float, default=DEFAULT_MAX_TIME_S,
                    help=f"time budget of one measured series or assertion (default {DEFAULT_MAX_TIME_S:g}); "
                         "the minimum number of rounds is run even when it takes longer")
    group.addoption("--benchctl-min-rounds", metavar="N", type=int, default=DEFAULT_MIN_ROUNDS,
                    help=f"rounds of a series at least (default {DEFAULT_MIN_ROUNDS})")
    group.addoption("--benchctl-round-time", metavar="SECONDS", type=float, default=DEFAULT_ROUND_TIME_S,
                    help=f"shortest duration of one timed round of calls (default {DEFAULT_ROUND_TIME_S:g}); "
                         "fast functions are called several times per round")
    group.addoption("--benchctl-strict", action="store_true", default=False,
                    help="an inconclusive assert_faster/assert_not_slower fails the test instead of skipping it")
    group.addoption("--benchctl-json", metavar="FILE", default=None,
                    help="write every measured test as a benchctl results file (python -m benchctl report/compare "
                         "read it)")
    group.addoption("--benchctl-compare", metavar="FILE", default=None,
                    help="judge this run's tests against a results file saved with --benchctl-json: "
                         "slower, faster, unchanged or inconclusive, test by test")
    group.addoption("--benchctl-compare-fail", action="store_true", default=False,
                    help="with --benchctl-compare: exit with status 1 when a test got slower")
    group.addoption("--benchctl-as-benchmark", action="store_true", default=False,
                    help="serve the benchmark fixture and @pytest.mark.benchmark of pytest-benchmark suites with "
                         "benchctl's clock, statistics and settings (pytest-benchmark, if installed, is left out "
                         "of the session); adds --benchmark-json/-disable/-enable/-skip/-only where "
                         "pytest-benchmark does not")
    group.addoption("--benchctl-worker-timeout", metavar="SECONDS", type=float, default=None,
                    help="kill an isolated test's worker process after this long (default: no limit)")


@dataclass(frozen=True)
class Options:
    max_time_s: float = DEFAULT_MAX_TIME_S
    min_rounds: int = DEFAULT_MIN_ROUNDS
    round_time_s: float = DEFAULT_ROUND_TIME_S
    strict: bool = False
    json_path: Optional[str] = None
    compare_path: Optional[str] = None
    compare_fail: bool = False
    worker_timeout_s: Optional[float] = None
    #: --benchctl-as-benchmark: benchctl serves pytest-benchmark's fixture and marker (see .as_benchmark).
    as_benchmark: bool = False

    @classmethod
    def from_config(cls, config) -> "Options":
        """The session's options; a bad value raises ValueError naming the option."""
        get = config.getoption
        out = cls(get("benchctl_max_time"), get("benchctl_min_rounds"), get("benchctl_round_time"),
                  get("benchctl_strict"), get("benchctl_json"), get("benchctl_compare"),
                  get("benchctl_compare_fail"), get("benchctl_worker_timeout"), get("benchctl_as_benchmark"))
        for name, value in (("--benchctl-max-time", out.max_time_s), ("--benchctl-round-time", out.round_time_s),
                            ("--benchctl-worker-timeout", out.worker_timeout_s)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a number of seconds > 0, got {value}")
        if out.min_rounds < 1:
            raise ValueError(f"--benchctl-min-rounds must be 1 or more, got {out.min_rounds}")
        if out.compare_fail and not out.compare_path:
            raise ValueError("--benchctl-compare-fail needs --benchctl-compare FILE")
        return out

    def worker_args(self) -> list[str]:
        """The options an isolated test's worker session needs to time as this session does."""
        return [f"--benchctl-max-time={self.max_time_s!r}", f"--benchctl-min-rounds={self.min_rounds}",
                f"--benchctl-round-time={self.round_time_s!r}"] + (["--benchctl-strict"] if self.strict else []) \
            + (["--benchctl-as-benchmark"] if self.as_benchmark else [])
