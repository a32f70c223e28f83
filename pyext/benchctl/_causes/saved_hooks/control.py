"""Saved-tensor hooks: run each timed call with the hooks that were on before it set aside, and read them.

``torch.autograd.graph.saved_tensors_hooks(pack, unpack)`` (and ``save_on_cpu``, a kind of it) pushes a
pair of functions on a stack of torch's: while it is on, autograd calls the top pair's ``pack`` in Python on
every tensor it saves for backward (and ``unpack`` on it in backward). Entered and never exited (at import,
in a setup, a library's activation offloading switched on for good), it runs on every op of every later
training step. torch reads the stack only through its top (``_top_saved_tensors_default_hooks``), so
reading it whole means popping it and pushing it back.

:func:`set_aside` takes the hooks on when a block starts off the stack for the block and puts them back
after it, under whatever the block pushed and left (also on an exception); the code's own hooks entered
and exited inside the block (``torch.utils.checkpoint``'s, a ``with save_on_cpu():`` around its forward)
work as written. :func:`set_aside_calls` puts it around every later timed call of a user workload
(:mod:`benchctl._timed_call`; a worker's ``saved_hooks=off`` cell) and :func:`restore_calls` takes it out.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from ... import _timed_call

__all__ = ["WHAT", "Pair", "stack", "swapped", "set_aside", "set_aside_calls", "restore_calls", "enabled", "held",
           "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "saved_hooks=off"

#: One entry of torch's stack: (pack, unpack).
Pair = tuple[Callable[[Any], Any], Callable[[Any], Any]]


def _autograd() -> Any:
    import torch

    return torch._C._autograd


def _top() -> Pair | None:
    # ignore_is_tracing: the stack as it is, also while torch traces (where torch itself would read none)
    return _autograd()._top_saved_tensors_default_hooks(True)


def _pop_all() -> list[Pair]:
    """Every pair on the stack, top first, the stack left empty."""
    autograd, pairs = _autograd(), []
    while (pair := _top()) is not None:
        pairs.append(pair)
        autograd._pop_saved_tensors_default_hooks()
    return pairs


def _push_all(pairs: list[Pair], refused: bool = True) -> None:
    """Push ``pairs`` (top first, as :func:`_pop_all` gives them) back, the first on top. Where the code disabled
    the hooks (``disable_saved_tensors_hooks``, under which a push raises), they are pushed with them enabled for the
    moment and disabled again with the code's message, which torch sets and then refuses with hooks on, as the code's
    own disable would have been refused with them on: the code's error raised (``refused``; not where the state read
    was already so), the hooks back."""
    autograd = _autograd()
    message = None if autograd._saved_tensors_hooks_is_enabled() else \
        autograd._saved_tensors_hooks_get_disabled_error_message()
    if message is not None and pairs:
        autograd._saved_tensors_hooks_enable()
    try:
        for pack, unpack in reversed(pairs):
            autograd._push_saved_tensors_default_hooks(pack, unpack)
    finally:
        if message is not None and pairs:
            try:
                autograd._saved_tensors_hooks_disable(message)
            except RuntimeError:
                if refused:
                    raise


def stack() -> list[Pair]:
    """The pairs on the stack now, top first (read by popping them and pushing them back)."""
    pairs = _pop_all()
    _push_all(pairs, refused=False)
    return pairs


@contextlib.contextmanager
def swapped(replace: Callable[[Pair], Pair | None]) -> Iterator[list[Pair]]:
    """Inside the block each pair on the stack as it began is ``replace(pair)`` instead (None: taken off); after it,
    the pairs as they were, under what the block pushed and did not pop (also on an exception). Yields the pairs
    found, top first."""
    found = _pop_all()
    put = [new for new in (replace(pair) for pair in found) if new is not None]
    _push_all(put)
    try:
        yield found
    finally:
        _push_all(_left_by(_pop_all(), put) + found)


def _left_by(now: list[Pair], put: list[Pair]) -> list[Pair]:
    """What a block pushed and did not pop: the stack ``now`` (top first) without the pairs ``put`` at its start,
    told by their pack functions (torch hands out a new tuple at each read). Where the block popped some of them,
    none of its own stays on that account."""
    packs = [pack for pack, _ in put]
    if not put or [pack for pack, _ in now[-len(put):]] == packs:
        return now[:len(now) - len(put)]
    return [pair for pair in now if all(pair[0] is not pack for pack in packs)]


def set_aside() -> contextlib.AbstractContextManager[list[Pair]]:
    """No saved-tensor hook that was on as the block began runs inside it; they are back after it."""
    return swapped(lambda pair: None)


def _still_aside(found: list[Pair]) -> bool:
    # One C call, inside the timed call's time: the top is what autograd would use, and none set aside is on it.
    top = _top()
    return top is None or all(top[0] is not pack for pack, _ in found)


_aside_calls = _timed_call.HeldContext(WHAT, set_aside, _still_aside)


def set_aside_calls() -> dict[str, Any]:
    """Run every later timed call with the saved-tensor hooks on before it set aside (counts start at zero; already
    so: kept); the state right after."""
    _aside_calls.start()
    return state()


def restore_calls() -> dict[str, Any]:
    """The timed calls run with the hooks as the code left them again; the state right after."""
    _aside_calls.stop()
    return state()


def enabled() -> bool:
    return _aside_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran with the hooks set aside and none of them was on top at its end."""
    return _aside_calls.all_held()


def state() -> dict[str, Any]:
    """``{"set_aside", "on", "calls", "held"}``: whether timed calls run with the hooks set aside, how many hooks are
    on the stack now, how many calls ran, how many held to their end."""
    return {"set_aside": enabled(), "on": len(stack()), **_aside_calls.counts()}
