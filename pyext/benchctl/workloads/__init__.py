"""Workloads: named Python callables that the runner measures.

A workload is ``fn(args: dict, rec) -> None`` registered with
:func:`register`; ``args`` holds every parameter declared in ``params``
(defaults filled in, unknown keys rejected), and ``rec`` is a
:class:`benchctl.recorder.Recorder`-like object (``rec.iteration(phase)``,
``rec.note(key, value)``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

# Modules whose import registers the workloads shipped with benchctl.
_BUILTIN_MODULES: tuple[str, ...] = ("benchctl.workloads.builtin",)


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable[[dict, Any], None]
    params: dict[str, Any] = field(default_factory=dict)
    help: str = ""

    def resolve_args(self, given: dict[str, Any] | None) -> dict[str, Any]:
        """Defaults overlaid with ``given``; unknown names raise ValueError."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            raise ValueError(
                f"workload {self.name!r} has no parameter {', '.join(unknown)}; "
                f"its parameters: {', '.join(sorted(self.params)) or '(none)'}"
            )
        return {**self.params, **given}


_registry: dict[str, Workload] = {}


def register(name: str, *, params: dict[str, Any] | None = None, help: str = ""):
    """Decorator: register ``fn(args, rec)`` under ``name``."""

    def decorate(fn):
        if name in _registry and _registry[name].fn is not fn:
            raise ValueError(f"workload {name!r} is already registered")
        _registry[name] = Workload(name, fn, dict(params or {}), help)
        return fn

    return decorate


def _load_builtins() -> None:
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)


def get(name: str) -> Workload:
    _load_builtins()
    try:
        return _registry[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(names()) or '(none)'}") from None


def names() -> list[str]:
    _load_builtins()
    return sorted(_registry)
