"""Workloads: named Python callables that the runner measures.

A workload is ``fn(args: dict, rec) -> None`` registered with
:func:`register`; ``args`` holds every parameter declared in ``params``
(defaults filled in, unknown keys rejected), and ``rec`` is a
:class:`benchctl._run.recorder.Recorder`-like object (``rec.iteration(phase)``,
``rec.note(key, value)``).

The package holds the registry, the small built-in workloads, the seed
questions' workloads, and :mod:`.user`: workloads from the user's own files.
It may import the controls at the package root (the census of
:mod:`benchctl.denormals`, :mod:`benchctl.cuda`) and nothing above.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from .._validate import ArgumentError
from ..errors import UnavailableError, UserError

__all__ = ["TARGET_FORMS", "WorkloadFailed", "TargetImportError", "Workload", "register", "get", "names"]

#: How a user names their own code where a workload is expected.
TARGET_FORMS = "path/to/file.py:name or package.module:name"


class WorkloadFailed(UserError, RuntimeError):
    """The workload's own code failed in a worker where benchctl needed it to run (the explain probe):
    the message holds its error and traceback, the user's code to fix (a user error, not retried)."""


class TargetImportError(UserError, ImportError):
    """The user's code named as a workload does not import (no such module, a syntax error, an exception
    its module raised): the message names the target and holds the error, the user's to fix."""


# Modules whose import registers the workloads shipped with benchctl.
_BUILTIN_MODULES: tuple[str, ...] = (
    "benchctl._workloads.builtin",
    "benchctl._workloads.resnet_order",
    "benchctl._workloads.zero_weights",
    "benchctl._workloads.pytest_node",
    "benchctl._workloads.machine_reference",
)


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable[[dict, Any], None]
    params: dict[str, Any] = field(default_factory=dict)
    help: str = ""
    #: ``check(args) -> None`` raising ValueError on bad values; the runner calls it before any worker.
    check: Callable[[dict], None] | None = None
    #: Modules its workers may find imported already: the runner forks them from an interpreter that has
    #: imported these (:mod:`benchctl._run.forkserver`); () starts each worker's interpreter afresh.
    preload: tuple[str, ...] = ()
    #: The phases it times, when it says (the ``only`` setting is then checked before any worker); ()
    #: unknown until it runs (user code, a phase named by its arguments).
    phases: tuple[str, ...] = ()

    def check_args(self, args: dict[str, Any]) -> None:
        """Raise ArgumentError naming the workload when resolved ``args`` hold a value it cannot run
        (a check's ValueError is that, by its contract); what the machine lacks passes through."""
        if self.check is None:
            return
        try:
            self.check(args)
        except UnavailableError:
            raise
        except ValueError as e:
            raise ArgumentError(f"workload {self.name!r}: {e}") from None

    def resolve_args(self, given: dict[str, Any] | None) -> dict[str, Any]:
        """Defaults overlaid with ``given``; unknown names raise ArgumentError."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            raise ArgumentError(
                f"workload {self.name!r} has no parameter {', '.join(unknown)}; "
                f"its parameters: {', '.join(sorted(self.params)) or '(none)'}"
            )
        return {**self.params, **given}


_registry: dict[str, Workload] = {}


def register(name: str, *, params: dict[str, Any] | None = None, help: str = "",
             check: Callable[[dict], None] | None = None, preload: tuple[str, ...] = (),
             phases: tuple[str, ...] = ()):
    """Decorator: register ``fn(args, rec)`` under ``name``.

    ``check(args)``, if given, validates resolved arguments (raising
    ValueError) so a bad value fails once, before any worker starts.
    ``preload``: the modules its workers would import anyway (see :attr:`Workload.preload`).
    ``phases``: the phases it times, whatever its arguments (see :attr:`Workload.phases`).
    """

    def decorate(fn):
        if name in _registry and _registry[name].fn is not fn:
            raise ArgumentError(f"workload {name!r} is already registered")
        _registry[name] = Workload(name, fn, dict(params or {}), help, check, tuple(preload), tuple(phases))
        return fn

    return decorate


def _load_builtins() -> None:
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)


def get(name: str) -> Workload:
    """A registered workload, or user code named ``path/file.py:name`` or ``package.module:name``."""
    from . import user

    if user.is_target(name):
        _import_target(name)
        return Workload(name, *user.load(name))
    _load_builtins()
    try:
        return _registry[name]
    except KeyError:
        raise ArgumentError(f"unknown workload {name!r}; known: {', '.join(names()) or '(none)'}; or name your "
                            f"own code as {TARGET_FORMS}") from None


def _import_target(target: str) -> None:
    """Import the module ``target`` names (``user.load`` then finds it imported), so that whatever its import
    raises is said as the user's error, naming the target, and not as a bug in benchctl."""
    from . import user

    where = target.rpartition(":")[0] if ":" in target else target
    if not where.endswith(".py") and os.path.isfile(where):  # a file, though "notes.txt" reads as a module name
        raise TargetImportError(f"{target}: {where} is a file but not Python source (.py); name your code as "
                                f"{TARGET_FORMS}")
    if not where.endswith(".py") and not all(part.isidentifier() for part in where.split(".")):
        raise TargetImportError(f"{target}: {where!r} is neither a .py file nor a module name; name your code as "
                                f"{TARGET_FORMS}")
    if where.endswith(".py") and not os.path.isfile(where):
        raise TargetImportError(f"{target}: no such file {os.path.abspath(where)}; name your code as {TARGET_FORMS}")
    try:
        if where.endswith(".py"):
            user._import_file(where)
        else:
            importlib.import_module(where)
    except UserError:
        raise
    except SystemExit as e:  # a script's own argument parsing or exit, run at import
        raise TargetImportError(
            f"{target}: importing {where} ended the process (SystemExit: {e}): code that runs at import, such as "
            "argument parsing or sys.exit(), stops it; put that under `if __name__ == \"__main__\":` and give the "
            "workload its values by default") from e
    except Exception as e:
        raise TargetImportError(f"{target}: importing {where} failed: {type(e).__name__}: {e}") from e


def names() -> list[str]:
    _load_builtins()
    return sorted(_registry)
