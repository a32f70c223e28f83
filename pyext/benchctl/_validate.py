"""Argument checks shared by the public API: clear TypeError/ValueError, never a silent cast."""

from __future__ import annotations

import operator


def count(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; bools and non-integers are refused."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value
