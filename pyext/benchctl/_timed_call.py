"""What a setting puts around each timed call of a user workload (``hooks=off``: the module hooks detached).

A setting's control :func:`put` s a context factory under the setting it serves (``"hooks=off"``), or with
:func:`put_runner` a function that runs the call and may look at what it returned (``inference=on``), and
:func:`take` s it out again; the user workloads that call the code once per iteration
(:mod:`benchctl._workloads.user`) run each timed call through :func:`wrapped`, which applies every one put
in at the moment of the call (not of the wrapping), so that a setting switched between two timed
iterations holds from the next one. With none put in, the call runs as written.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, ContextManager

__all__ = ["put", "put_runner", "take", "active", "wrapped"]

# The setting it serves ("hooks=off") -> how one timed call runs: runner(call) calls it and returns its result.
_around: dict[str, Callable[[Callable[[], Any]], Any]] = {}


def put(what: str, context: Callable[[], ContextManager]) -> None:
    """Run every later timed call inside ``context()``, for the setting ``what`` (put again: replaced)."""

    def inside(call: Callable[[], Any]) -> Any:
        with context():
            return call()

    _around[what] = inside


def put_runner(what: str, runner: Callable[[Callable[[], Any]], Any]) -> None:
    """Run every later timed call as ``runner(call)`` (which calls it and returns its result, and may look at
    it: ``inference=on`` checks that no tensor it returned records a graph), for the setting ``what``."""
    _around[what] = runner


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
        run = call
        for runner in reversed(list(_around.values())):
            run = functools.partial(runner, run)
        return run()

    return around
