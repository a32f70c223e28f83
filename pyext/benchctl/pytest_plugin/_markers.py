"""``@pytest.mark.benchctl(...)``: the settings a test's measured calls run under, checked at collection.

Keywords: the settings of :mod:`benchctl.settings` (``ftz``, ``threads``,
``pin``, ``alloc``, ``env``, ...) with the values they accept there, and
``isolate=True`` with ``repeat=N`` (fresh worker processes, see
:mod:`._isolation`). ``ftz``, ``threads`` and ``pin`` can change in a running
process and are applied around the measured calls, then restored; the
others are set when a worker starts (the allocator and the environment are
fixed by then), so they are accepted only with ``isolate=True``.
Markers on a class or module apply to its tests; the one nearest the test
wins per keyword.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError

__all__ = ["MARKER", "MARKER_HELP", "IN_PROCESS", "DEFAULT_REPEAT", "MarkerError", "Spec",
           "parse"]

MARKER = "benchctl"
IN_PROCESS = ("threads", "pin", "ftz")  # the order they are applied in: pin pins the sized team
#: Fresh processes per isolated test when ``repeat`` is not given: the fewest that give a
#: t interval over processes with some width to it (2 processes: t quantile 12.7).
DEFAULT_REPEAT = 3
MARKER_HELP = (f"{MARKER}(ftz=..., threads=N, pin=..., alloc=..., env=..., isolate=False, repeat={DEFAULT_REPEAT}): "
               "settings for the benchctl fixture's measured calls; alloc and env need isolate=True "
               "(fresh worker processes, repeat of them)")


class MarkerError(UserError, ValueError):
    """A benchctl marker that cannot be honoured; the message names the test and what to write."""


@dataclass(frozen=True)
class Spec:
    """A test's benchctl marker, checked: canonical setting values, isolation and repetitions."""

    settings: dict = field(default_factory=dict)
    isolate: bool = False
    repeat: int = 1

    def in_process_settings(self) -> list[tuple[str, Any]]:
        return [(name, self.settings[name]) for name in IN_PROCESS if name in self.settings]


def _merge(marks) -> dict[str, Any]:
    """Keyword values of every benchctl marker on the item, the nearest one winning per keyword."""
    merged: dict[str, Any] = {}
    for mark in marks:  # nearest first (function, then class, then module)
        if mark.args:
            raise MarkerError(f"takes keywords only (e.g. {MARKER}(threads=1)), got positional {mark.args!r}")
        for key, value in mark.kwargs.items():
            merged.setdefault(key, value)
    return merged


def _check_cpus(value: Any) -> None:
    """A CPU list must name CPUs this process may run on: pinning in-process cannot use others."""
    if isinstance(value, list):
        allowed = os.sched_getaffinity(0)
        outside = [c for c in value if c not in allowed]
        if outside:
            raise MarkerError(f"pin={value}: CPUs {outside} are not among the CPUs this process may run on "
                              f"({sorted(allowed)})")


def parse(marks) -> Spec:
    """Check the benchctl markers of one test (``item.iter_markers("benchctl")``); raise MarkerError."""
    given = _merge(marks)
    if not given:
        return Spec()
    from .. import settings as _settings  # here, not at plugin load: it brings numpy and the native module

    allowed = tuple(_settings.SETTINGS) + ("isolate", "repeat")
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise MarkerError(f"unknown keyword {', '.join(unknown)}; {MARKER}() takes {', '.join(allowed)}")
    isolate = given.pop("isolate", False)
    if not isinstance(isolate, bool):
        raise MarkerError(f"isolate must be True or False, got {isolate!r}")
    repeat = given.pop("repeat", None)
    if repeat is not None and not isolate:
        raise MarkerError(f"repeat={repeat!r} counts fresh processes: it needs isolate=True")
    if repeat is None:
        repeat = DEFAULT_REPEAT if isolate else 1
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise MarkerError(f"repeat must be a positive integer, got {repeat!r}")
    canonical = {}
    for name, value in given.items():
        try:
            canonical[name] = _settings.SETTINGS[name].canonical(value)
        except _settings.SettingError as e:
            raise MarkerError(str(e)) from None
        if name not in IN_PROCESS and not isolate:
            raise MarkerError(f"{name}={_settings.format_value(canonical[name])} is set when a process starts, not "
                              f"around calls in a running one: add isolate=True to measure in fresh worker "
                              f"processes that start with it")
    if "ftz" in canonical and not isolate:
        from .. import fpenv

        ok, reason = fpenv.supported()
        if not ok:
            raise MarkerError(f"ftz cannot be applied here: {reason}")
    if "pin" in canonical and not isolate:
        _check_cpus(canonical["pin"])
    if isolate:
        _check_isolated(canonical)
    return Spec(canonical, isolate, repeat)


def _check_isolated(canonical: dict) -> None:
    """What the runner would refuse before starting any worker, refused now (at collection)."""
    from .. import settings as _settings

    try:
        _settings.check_available({k: [v] for k, v in canonical.items()})
        _settings.cell_environment(canonical, dict(os.environ))
    except _settings.SettingError as e:
        raise MarkerError(str(e)) from None
