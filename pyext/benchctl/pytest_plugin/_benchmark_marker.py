"""``@pytest.mark.benchmark(...)`` under ``--benchctl-as-benchmark``: pytest-benchmark's marker keywords, checked
at collection, as benchctl honours them.

As in pytest-benchmark, the marker nearest the test is the one that counts
(a function's marker replaces its class's, keyword for keyword it does not merge).
Honoured: ``group``; ``min_rounds``, ``max_time`` and ``min_time`` (the test's
own ``--benchctl-min-rounds``, ``--benchctl-max-time`` and ``--benchctl-round-time``);
``disable_gc`` (the garbage collector is off around the measured calls, and
restored). Accepted: ``warmup`` and ``warmup_iterations``: benchctl always
makes one untimed first call and sets the leading rounds that are still
warming up apart by detection (``benchctl.warmup_rounds`` in the JSON).
Refused with the reason, at collection: the keywords whose work benchctl does
differently (:data:`REFUSED`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

from ._markers import MarkerError
from ._options import Options

__all__ = ["MARKER", "MARKER_HELP", "REFUSED", "BenchmarkMark", "parse"]

MARKER = "benchmark"
MARKER_HELP = (f"{MARKER}(group=..., min_rounds=N, max_time=SECONDS, min_time=SECONDS, disable_gc=False, warmup=...): "
               "pytest-benchmark's marker, served by benchctl under --benchctl-as-benchmark")
#: pytest-benchmark's keywords that benchctl does not honour, and why.
REFUSED = {
    "timer": "benchctl times with its own clock (choose it with $BENCHCTL_CLOCK)",
    "precision": "benchctl does not run until a target precision: its rounds fill max_time, and the median's "
                 "95% interval says how precise it came out",
    "confidence": "it goes with precision, which benchctl does not offer",
    "calibration_precision": "benchctl calibrates rounds to min_time and to 1000 times its clock's read cost",
    "cprofile": "benchctl does not profile the benchmarked calls",
}
_ACCEPTED = ("group", "min_rounds", "max_time", "min_time", "disable_gc", "warmup", "warmup_iterations")


@dataclass(frozen=True)
class BenchmarkMark:
    """A test's ``benchmark`` marker, checked (None: the session's value)."""

    group: Optional[str] = None
    min_rounds: Optional[int] = None
    max_time_s: Optional[float] = None
    min_time_s: Optional[float] = None
    disable_gc: bool = False
    warmup: Any = None
    warmup_iterations: Optional[int] = None

    def budget(self, options: Options) -> Options:
        """The session's options with this marker's rounds, budget and round time in their place."""
        given = {name: value for name, value in (("min_rounds", self.min_rounds), ("max_time_s", self.max_time_s),
                                                  ("round_time_s", self.min_time_s)) if value is not None}
        return dataclasses.replace(options, **given) if given else options


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise MarkerError(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MarkerError(f"{name} must be a positive integer, got {value!r}")
    return value


def parse(mark) -> BenchmarkMark:
    """Check the test's nearest ``benchmark`` marker (``item.get_closest_marker("benchmark")``, or None)."""
    if mark is None:
        return BenchmarkMark()
    if mark.args:
        raise MarkerError(f"takes keywords only (e.g. {MARKER}(group='io')), got positional {mark.args!r}")
    given = dict(mark.kwargs)
    refused = sorted(set(given) & set(REFUSED))
    if refused:
        raise MarkerError("; ".join(f"{name}= is pytest-benchmark's and not served under --benchctl-as-benchmark: "
                                    f"{REFUSED[name]}" for name in refused))
    unknown = sorted(set(given) - set(_ACCEPTED))
    if unknown:
        raise MarkerError(f"unknown keyword {', '.join(unknown)}; {MARKER}() takes {', '.join(_ACCEPTED)}")
    group = given.get("group")
    if group is not None and not isinstance(group, str):
        raise MarkerError(f"group must be a string, got {group!r}")
    disable_gc = given.get("disable_gc", False)
    if not isinstance(disable_gc, bool):
        raise MarkerError(f"disable_gc must be True or False, got {disable_gc!r}")
    warmup_iterations = given.get("warmup_iterations")
    return BenchmarkMark(
        group=group,
        min_rounds=_count("min_rounds", given["min_rounds"]) if "min_rounds" in given else None,
        max_time_s=_seconds("max_time", given["max_time"]) if "max_time" in given else None,
        min_time_s=_seconds("min_time", given["min_time"]) if "min_time" in given else None,
        disable_gc=disable_gc, warmup=given.get("warmup"),
        warmup_iterations=None if warmup_iterations is None else _count("warmup_iterations", warmup_iterations))
