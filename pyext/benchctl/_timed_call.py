"""What a setting puts around each timed call of a user workload (``hooks=off``: the module hooks detached).

A setting's control :func:`put` s a context factory under the setting it serves (``"hooks=off"``), or with
:func:`put_runner` a function that runs the call and may look at what it returned (``inference=on``), and
:func:`take` s it out again; the user workloads that call the code once per iteration
(:mod:`benchctl._workloads.user`) run each timed call through :func:`wrapped`, which applies every one put
in at the moment of the call (not of the wrapping), so that a setting switched between two timed
iterations holds from the next one. With none put in, the call runs as written.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, ContextManager, Iterator

__all__ = ["put", "put_runner", "take", "active", "wrapped", "HeldContext", "SpanContext"]

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


class HeldContext:
    """A setting's context around every timed call, with the count of the calls it wrapped and of those it still
    held at their end (the code did not undo it inside the call): what the setting reads back. ``context()``
    makes the context; ``holds(entered)``, given what it yielded, says after the call whether it still holds."""

    def __init__(self, what: str, context: Callable[[], ContextManager], holds: Callable[[Any], bool]) -> None:
        self.what, self._context, self._holds = what, context, holds
        self.enabled = False
        self.calls = self.held = 0

    @contextlib.contextmanager
    def _around(self) -> Iterator[None]:
        with self._context() as entered:
            yield
            self.calls += 1  # a call that raised is not counted
            self.held += bool(self._holds(entered))

    def start(self) -> None:
        """Every later timed call runs inside the context (counts start at zero; already so: kept)."""
        if not self.enabled:
            self.enabled, self.calls, self.held = True, 0, 0
            put(self.what, self._around)

    def stop(self) -> None:
        """The timed calls run as written again."""
        take(self.what)
        self.enabled, self.calls, self.held = False, 0, 0

    def all_held(self) -> bool:
        """Whether at least one timed call ran inside it and it held to the end of every one of them."""
        return self.enabled and self.calls > 0 and self.held == self.calls

    def counts(self) -> dict[str, int]:
        """``{"calls", "held"}``."""
        return {"calls": self.calls, "held": self.held}


class SpanContext:
    """A setting's context held across the timed calls rather than put around each: entered as the first timed call
    after :meth:`start` begins (the code may set up what it acts on after the setting is applied, at import) and left
    by :meth:`stop`, so that entering and leaving it is no share of a short call's time. Each call is counted, and
    held where ``mark(entered)``, given what the context yielded, reads the same after it as before (the code did
    not undo the setting inside the call)."""

    def __init__(self, what: str, context: Callable[[], ContextManager], mark: Callable[[Any], Any]) -> None:
        self.what, self._context, self._mark = what, context, mark
        self.enabled = False
        self.calls = self.held = 0
        self._span: contextlib.ExitStack | None = None
        self._entered: Any = None

    def _run(self, call: Callable[[], Any]) -> Any:
        if self._span is None:
            span = contextlib.ExitStack()
            self._entered = span.enter_context(self._context())  # one that fails to enter is tried at the next call
            self._span = span
        before = self._mark(self._entered)
        out = call()
        self.calls += 1  # a call that raised is not counted
        self.held += self._mark(self._entered) == before
        return out

    def start(self) -> None:
        """Every later timed call runs inside the context, entered at the first of them (counts start at zero;
        already so: kept)."""
        if not self.enabled:
            self.enabled, self.calls, self.held = True, 0, 0
            put_runner(self.what, self._run)

    def stop(self) -> None:
        """The context left, if a call entered it; the timed calls run as written again."""
        take(self.what)
        span, self._span, self._entered = self._span, None, None
        self.enabled, self.calls, self.held = False, 0, 0
        if span is not None:
            span.close()

    def all_held(self) -> bool:
        """Whether at least one timed call ran inside it and none undid it."""
        return self.enabled and self.calls > 0 and self.held == self.calls

    def counts(self) -> dict[str, int]:
        """``{"calls", "held"}``."""
        return {"calls": self.calls, "held": self.held}
