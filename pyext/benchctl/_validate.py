"""Argument checks shared by the public API: one exception type, never a silent cast.

Every check raises :class:`ArgumentError`, a :class:`benchctl.errors.UserError` that is both a
``ValueError`` and a ``TypeError``: callers may catch either (a wrong type and a value out of
range are one mistake to a user), and benchctl catches it in one place.
"""

from __future__ import annotations

import math
import numbers
import operator

from .errors import UserError

__all__ = ["ArgumentError", "count", "optional_count", "seconds", "flag"]


class ArgumentError(UserError, ValueError, TypeError):
    """An argument of the wrong type or out of range; the message names it and what it accepts (a user error)."""


def count(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; bools and non-integers are refused."""
    if isinstance(value, bool):
        raise ArgumentError(f"{name} must be an integer, got bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise ArgumentError(f"{name} must be an integer, got {type(value).__name__}") from None
    if value < minimum:
        raise ArgumentError(f"{name} must be >= {minimum}, got {value}")
    return value


def optional_count(name: str, value, minimum: int) -> int | None:
    """:func:`count`, or None when ``value`` is None."""
    if value is None:
        return None
    try:
        return count(name, value, minimum)
    except ArgumentError as e:
        raise ArgumentError(f"{e} (or None)") from None


def seconds(name: str, value, maximum: float = math.inf) -> float:
    """``value`` as a float number of seconds > 0 (and <= ``maximum``); NaN and bools are refused."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not 0 < value <= maximum or math.isinf(value)):
        bound = f" and <= {maximum}" if math.isfinite(maximum) else ""
        raise ArgumentError(f"{name} must be a finite number of seconds > 0{bound}, got {value!r}")
    return float(value)


def flag(name: str, value) -> bool:
    """``value`` itself when it is True or False; anything else (1, "yes") is refused."""
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value
