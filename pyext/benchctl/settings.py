"""Every setting a matrix cell can have, by name, and what the rest of benchctl asks of them.

What a setting is and its duties (``canonical``, ``environment``, ``apply``, ``readback``, ``during``,
``in_process`` and the worker's hooks) are in :mod:`benchctl._setting`. The settings no cause owns are
here (``env``, ``busy``, ``only``, ``with``); each cause's is in its package
(``benchctl._causes.<name>.setting``), and another installed package's comes through the
``benchctl.causes`` entry points: :data:`SETTINGS` gathers them all, in ``run --help``'s order.

Cells hold setting values and workload parameters side by side; a matrix key
that is not a setting name is a workload parameter.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from . import _contention as contention, _plugins
from ._setting import Setting, SettingError, SettingUnavailable, format_value, split_values

__all__ = ["SettingError", "SettingUnavailable", "Setting", "SETTINGS", "BUSY", "ONLY_PHASE_ENV", "is_setting",
           "split_values", "parse_assignment", "canonical_value", "canonical_matrix", "check_available",
           "cell_environment", "format_value", "cell_label", "split_cell", "ordered", "clock_waits"]



class ExtraEnvironment(Setting):
    """``env``: extra environment variables for the worker, read back from inside it."""

    name = "env"
    help = "NAME=VALUE or [A=1,B=2] or none: extra environment variables"
    order = 0

    def canonical(self, value: Any) -> dict[str, str]:
        pairs = self._pairs(value, "NAME=VALUE (or [A=1,B=2] for several)")
        for name, val in pairs.items():
            if not name or name != name.strip() or any(c in name for c in "=\0[],") or not isinstance(val, str):
                raise SettingError(f"env: invalid variable {name!r}={val!r} (names without '=', '[', ']', ',' or "
                                   f"edge spaces (the syntax of env=[A=1,B=2]), string values)")
            if val != val.strip() or any(c in val for c in "\0[],"):
                # --set text could not carry it back: a value is written as it is inside [A=1,B=2].
                raise SettingError(f"env: the value of {name} ({val!r}) cannot be written in env=[A=1,B=2]: no "
                                   "',', '[', ']' or NUL, no leading or trailing space")
        return dict(sorted(pairs.items()))

    def environment(self, value: dict, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, **value}

    def owns(self, value: dict) -> tuple[str, ...]:
        return tuple(value)

    def readback(self, value: dict) -> dict:
        return {name: os.environ.get(name) for name in value}


class BusyPool(Setting):
    """``busy``: another BLAS pool kept busy beside the workload (:mod:`benchctl._contention`)."""

    name = "busy"
    help = "off | pool: keep numpy's BLAS pool busy on every allowed CPU beside the workload"
    order = 40  # after threads: the competing pool takes all CPUs whatever torch was given

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "pool"))

    def apply(self, value: str) -> Any:
        return contention.start_busy_pool() if value == "pool" else None

    probe = "pool"
    evidence_counter = "context_switches_per_iter"
    mechanism = "two thread pools competing for the same CPUs"

    def facts(self, observed: dict) -> dict:
        return {"running": observed.get("running"), "products": observed.get("products")}

    def facts_phrase(self, facts: dict) -> str:
        return "a busy BLAS pool read back running beside it" if facts.get("running") else ""

    def readback(self, value: str) -> dict:
        return contention.busy_pool_state()


#: The environment variable through which ``only`` tells the worker's recorder which phase runs.
ONLY_PHASE_ENV = "BENCHCTL_ONLY_PHASE"


#: The ``busy`` setting (the threads cause probes ``busy=pool``).
BUSY = BusyPool()


class OnlyPhase(Setting):
    """``only``: run one phase of the workload alone (its ``rec.runs(phase)`` says which), or all of them.

    Comparing a phase run alone, in a fresh process, with the same phase
    after the others shows what the earlier phases leave behind (seed 1's gap).
    Only workloads that ask ``rec.runs(phase)`` before each phase can skip one.
    """

    name = "only"
    help = "all | PHASE: run only this phase of a workload that asks rec.runs(phase)"
    order = 0

    def canonical(self, value: Any) -> str:
        text = str(value).strip()
        if not text or any(c in text for c in "=,[]"):
            raise SettingError(f"only={value!r}: name one phase, or all")
        return text

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        out = {k: v for k, v in env.items() if k != ONLY_PHASE_ENV}
        if value != "all":
            out[ONLY_PHASE_ENV] = value
        return out

    def owns(self, value: str) -> tuple[str, ...]:
        return (ONLY_PHASE_ENV,)

    def readback(self, value: str) -> dict:
        return {"phase": os.environ.get(ONLY_PHASE_ENV, "all")}


class Combination(Setting):
    """``with``: several settings as one value of one axis, e.g. ``[alloc=retain,threads=1]`` or ``none``.

    A matrix axis of combinations measures each against the first (a star of
    single changes around a baseline) where crossing every axis would cost too
    many cells. The worker applies the settings inside as if each were an axis.
    """

    name = "with"
    help = "none | [NAME=V,NAME=V...]: several settings as one value"

    def canonical(self, value: Any) -> dict[str, Any]:
        out = {}
        for name, inner in self._pairs(value, "[NAME=VALUE,...] (or none)").items():
            if name == self.name or name not in SETTINGS:
                raise SettingError(f"with: {name!r} is not a setting that can be combined "
                                   f"({', '.join(n for n in SETTINGS if n != self.name)})")
            try:
                out[name] = SETTINGS[name].canonical(inner)
            except SettingError as e:
                raise SettingError(f"with: {e}") from None
        return dict(sorted(out.items()))


#: Every setting by name, in alphabetical order (``run --help``'s): the cause packages' (benchctl's own and installed
#: packages': :mod:`benchctl._plugins`) and those no cause owns (defined here).
SETTINGS: dict[str, Setting] = dict(sorted(
    (s.name, s)
    for s in (*_plugins.gathered("setting", "SETTINGS"), ExtraEnvironment(), BUSY, OnlyPhase(), Combination())
))
_WITH = Combination.name


def is_setting(name: str) -> bool:
    return name in SETTINGS


def parse_assignment(text: str) -> tuple[str, list[str]]:
    """``"k=v1,v2"`` -> ``("k", ["v1", "v2"])`` (brackets group: ``pin=[0,1],off``)."""
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SettingError(f"--set {text!r}: write NAME=VALUE[,VALUE...]")
    # An empty value is kept: it is a valid string parameter ("pause_file=,/tmp/p").
    return key, split_values(rest)


def _coerce_param(name: str, value: Any, default: Any) -> Any:
    """A workload parameter from the CLI's text, typed like its default."""
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # 1 and 1.0 must be the same cell (resume matches cells exactly)
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except ValueError:
        raise SettingError(
            f"parameter {name}={value!r}: expected {type(default).__name__} like its default {default!r}"
        ) from None
    if default is None or isinstance(default, (list, dict)):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def canonical_value(key: str, value: Any, params: dict[str, Any]) -> Any:
    """Canonical form of one matrix value: a setting's, or a workload parameter typed like its default."""
    if key in SETTINGS:
        return SETTINGS[key].canonical(value)
    if key not in params:
        raise SettingError(
            f"{key!r} is neither a setting ({', '.join(SETTINGS)}) nor a parameter of this workload "
            f"({', '.join(sorted(params)) or 'none'})"
        )
    return _coerce_param(key, value, params[key])


def canonical_matrix(matrix: dict[str, Any], params: dict[str, Any]) -> dict[str, list]:
    """Validate a matrix ``{key: [values]}``; values canonical, duplicates rejected."""
    out: dict[str, list] = {}
    for key, values in matrix.items():
        if not isinstance(values, (list, tuple)):
            values = [values]
        if not values:
            raise SettingError(f"matrix key {key!r} has no values")
        canon = [canonical_value(key, v, params) for v in values]
        seen = [json.dumps(c, sort_keys=True) for c in canon]
        if len(set(seen)) != len(seen):
            raise SettingError(f"matrix key {key!r} repeats a value: {canon}")
        out[key] = canon
    both = {name for combo in out.get(_WITH, []) for name in combo} & set(out)
    if both:
        raise SettingError(f"{', '.join(sorted(both))} both an axis and inside a with=[...] value: choose one")
    return out


def check_available(matrix: dict[str, list]) -> None:
    """Raise SettingError if a setting in ``matrix`` (or inside a ``with`` value) cannot be applied here."""
    names = {name for name in matrix if name in SETTINGS}
    names |= {inner for combo in matrix.get(_WITH, []) for inner in combo}
    for name in sorted(names):
        SETTINGS[name].check_available()


def cell_environment(cell: dict[str, Any], base: dict[str, str]) -> dict[str, str]:
    """The environment a worker for ``cell`` starts with; raises SettingError before anything runs.

    Each setting edits a copy of ``base`` on its own, so the outcome cannot
    depend on the order of the cell's keys. Two settings that want one
    variable different ways (``env`` setting ``GLIBC_TUNABLES`` while
    ``alloc`` decides it) are an error, not a silent override; two that agree
    (``threads`` and ``pin`` on the thread count) are fine.
    """
    wanted: dict[str, tuple[str | None, str]] = {}  # variable -> (value or None = unset, who)
    flat, _ = split_cell(cell)
    for name, value in flat.items():
        setting = SETTINGS[name]
        alone = setting.environment(value, dict(base), flat)
        written = {v for v in set(alone) | set(base) if alone.get(v) != base.get(v)} | set(setting.owns(value))
        who = f"{name}={format_value(value)}"
        for var in sorted(written):
            if var in wanted and wanted[var][0] != alone.get(var):
                raise SettingError(f"{who} and {wanted[var][1]} both set {var}: choose one of them for this cell")
            wanted[var] = (alone.get(var), who)
    env = dict(base)
    for var, (val, _) in wanted.items():
        if val is None:
            env.pop(var, None)
        else:
            env[var] = val
    return env


def cell_label(cell: dict[str, Any]) -> str:
    """``"order=eval_only ftz=process"``: the cell in words, keys in matrix order."""
    return " ".join(f"{k}={format_value(v)}" for k, v in cell.items()) or "(single cell)"


def split_cell(cell: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(settings, workload parameters) of a cell; the settings inside a ``with`` value count as settings."""
    settings = {k: v for k, v in cell.items() if k in SETTINGS and k != _WITH}
    settings.update(cell.get(_WITH) or {})
    params = {k: v for k, v in cell.items() if k not in SETTINGS}
    return settings, params


def ordered(settings: dict[str, Any]) -> list[tuple[str, Setting, Any]]:
    return [(n, SETTINGS[n], settings[n]) for n in sorted(settings, key=lambda n: SETTINGS[n].order)]


def clock_waits() -> tuple[Callable[[], None], ...]:
    """What a timed iteration calls before each clock read: every setting's :meth:`Setting.clock_wait`."""
    return tuple(wait for s in SETTINGS.values() if (wait := s.clock_wait()) is not None)
