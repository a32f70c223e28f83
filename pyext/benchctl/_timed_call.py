"""Contexts a setting puts around each timed call of a user workload (``hooks=off``: the module hooks detached).

A setting's control :func:`put` s a context factory under the setting it serves (``"hooks=off"``) and
:func:`take` s it out again; the user workloads that call the code once per iteration
(:mod:`benchctl._workloads.user`) run each timed call through :func:`wrapped`, which enters every context
put in at the moment of the call (not of the wrapping), so that a setting switched between two timed
iterations holds from the next one. With none put in, the call runs as written, at the cost of one test.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, ContextManager

__all__ = ["put", "take", "active", "wrapped"]

# The setting it serves ("hooks=off") -> a factory of the context one timed call runs inside.
_around: dict[str, Callable[[], ContextManager]] = {}


def put(what: str, context: Callable[[], ContextManager]) -> None:
    """Run every later timed call inside ``context()``, for the setting ``what`` (put again: replaced)."""
    _around[what] = context


def take(what: str) -> None:
    """The timed calls no longer run inside what :func:`put` put in for ``what`` (none there: nothing)."""
    _around.pop(what, None)


def active() -> tuple[str, ...]:
    """The settings whose contexts the timed calls run inside now (``("hooks=off",)``)."""
    return tuple(_around)


def wrapped(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` as a timed iteration runs it: inside every context put in when it runs (in the order they were
    put in, the first outermost)."""

    def around() -> Any:
        if not _around:
            return call()
        with contextlib.ExitStack() as stack:
            for context in list(_around.values()):
                stack.enter_context(context())
            return call()

    return around
