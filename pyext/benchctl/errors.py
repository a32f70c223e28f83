"""What can go wrong, as a protocol: one root exception, two kinds, and the exit code of each.

Every error benchctl raises on purpose is a :class:`Error` of one of two kinds:

* :class:`UserError`: the request itself is wrong (a bad argument, setting,
  results file or option). Asking again, here or on another machine, gets the
  same refusal: exit status :attr:`ExitCode.USER_ERROR`, which a Slurm
  controller reads as "do not retry".
* :class:`UnavailableError`: the request is fine but this machine, build or
  installation cannot do it (an allocator not installed, no FP control, no
  CUDA, weights not cached offline, submitit missing). Another node or an
  installed package may succeed: :attr:`ExitCode.UNAVAILABLE`, retried.

A class may be both a module's own error (so callers that catch, say, every
``SettingError`` keep catching it) and, first among its bases, the environment
kind: its :attr:`Error.exit_code` is the first kind in its method resolution
order. Anything else that escapes a command (a bare ``ValueError`` from deep
inside) is a bug: :func:`exit_code_of` gives :attr:`ExitCode.INTERNAL_ERROR`
and the CLI prints its traceback.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import types

__all__ = ["ExitCode", "NO_RETRY", "Error", "UserError", "UnavailableError", "MissingPackage", "exit_code_of",
           "require_package"]


class ExitCode(enum.IntEnum):
    """The exit statuses of ``python -m benchctl`` and of the scripts built on it; each says what it means
    (:attr:`meaning`, the line every command's ``--help`` lists)."""

    def __new__(cls, value: int, meaning: str) -> "ExitCode":
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    OK = 0, "done"
    FAILED = 1, ("the command ran, and what it found needs attention: a worker failed, a host left no results, "
                 "the doctor saw an error")
    USER_ERROR = 2, "the request was refused (bad input), before any work: a second try is refused too"
    UNAVAILABLE = 3, "this machine, build or installation cannot do what was asked (another may)"
    INTERNAL_ERROR = 70, "an unexpected exception, a bug: its traceback is on stderr (os.EX_SOFTWARE)"
    INTERRUPTED = 130, "stopped by Ctrl-C (128 + SIGINT, as a shell reports it)"


#: Exit statuses after which running the same command again cannot help.
NO_RETRY = frozenset({ExitCode.USER_ERROR})


class Error(Exception):
    """The root of every error benchctl raises on purpose; raise one of its kinds, not this."""

    exit_code: ExitCode = ExitCode.INTERNAL_ERROR


class UserError(Error):
    """The request is wrong: the message says what was given and what is accepted. Do not retry."""

    exit_code = ExitCode.USER_ERROR


class UnavailableError(Error):
    """This machine, build or installation cannot do what was asked; the message says what is missing."""

    exit_code = ExitCode.UNAVAILABLE


class MissingPackage(UnavailableError, RuntimeError):
    """An optional package this call needs is not installed; the message says how to install it."""


def require_package(module: str, extra: str, needed_for: str, load: bool = True) -> types.ModuleType | None:
    """``module`` imported (``load``), or only found installed (not ``load``: no import cost, returns None);
    else :class:`MissingPackage` naming what needs it and the pip command of benchctl's extra ``extra``."""
    try:
        if load:
            return importlib.import_module(module)
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)
    except (ImportError, ValueError) as e:  # ValueError: find_spec of a module set to None in sys.modules
        raise MissingPackage(f"{needed_for} needs {module} ({e}): pip install 'benchctl[{extra}]'") from None
    return None


def exit_code_of(error: BaseException) -> ExitCode:
    """The exit status a command ends with when ``error`` escapes it."""
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(error, (UserError, UnavailableError)):
        return type(error).exit_code
    return ExitCode.INTERNAL_ERROR
