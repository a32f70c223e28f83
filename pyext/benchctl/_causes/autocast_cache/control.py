"""Autocast's cache of cast weights: kept across the timed calls, or cleared as the code's blocks leave it.

Under ``torch.autocast`` an op that runs in lower precision casts its float32 inputs first; the casts of leaf tensors
that require grad (a module's parameters) are cached, but only until the outermost autocast block exits
(``autocast.__exit__`` calls ``torch.clear_autocast_cache()`` when its nesting count falls to zero). A call that
enters its own autocast block (``with torch.autocast(...): model(x)``) therefore casts every weight again each time.
:func:`kept` holds torch's nesting count one above the code's for a block, so the code's blocks never leave the
outermost level and the cache lives from one call to the next; the count goes back after the block, also on an
exception, and the cache is cleared when the setting is switched back. Where the code changes its weights in place
between two calls the cached casts are stale: the setting is a timing probe, for calls that compute no gradient.

:func:`keep_calls` runs every later timed call of a user workload inside :func:`kept` (:mod:`benchctl._timed_call`;
a worker's ``autocast_cache=kept`` cell), entered as the first such call starts and left by :func:`restore_calls`
rather than around each call; :func:`held` says whether every call so far ran to its end without the cache being
cleared.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

from ... import _timed_call

__all__ = ["WHAT", "Clears", "counting_clears", "kept", "keep_calls", "restore_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "autocast_cache=kept"


@dataclass
class Clears:
    """How often autocast's cache was cleared inside a block."""

    count: int = 0


@contextlib.contextmanager
def counting_clears() -> Iterator[Clears]:
    """Count the calls of ``torch.clear_autocast_cache`` inside the block (autocast's exit from its outermost level
    makes one); torch's own function back after it, also on an exception."""
    import torch

    clears, own = Clears(), torch.clear_autocast_cache

    def counted() -> None:
        clears.count += 1
        own()

    torch.clear_autocast_cache = counted
    try:
        yield clears
    finally:
        torch.clear_autocast_cache = own


@contextlib.contextmanager
def kept() -> Iterator[Clears]:
    """Autocast's nesting count one higher inside the block (the code's blocks do not clear the cache as they exit),
    back after it without clearing it, also on an exception. Yields the count of clears the block made anyway (the
    code's own ``torch.clear_autocast_cache()`` calls)."""
    import torch

    torch.autocast_increment_nesting()
    try:
        with counting_clears() as clears:
            yield clears
    finally:
        torch.autocast_decrement_nesting()


@contextlib.contextmanager
def _kept_then_cleared() -> Iterator[Clears]:
    """:func:`kept`, and what the cache holds cleared after it (the casts kept for the calls, freed)."""
    import torch

    try:
        with kept() as clears:
            yield clears
    finally:
        torch.clear_autocast_cache()


# The cache kept from the first timed call to the switch back, not around each call; a call held where nothing
# cleared the cache in it.
_kept_calls = _timed_call.SpanContext(WHAT, _kept_then_cleared, lambda clears: clears.count)


def keep_calls() -> dict[str, Any]:
    """Run every later timed call with autocast's cache kept from one to the next (counts start at zero; already so:
    kept); the state right after."""
    _kept_calls.start()
    return state()


def restore_calls() -> dict[str, Any]:
    """The timed calls' autocast blocks clear the cache as they exit again (what it holds now is cleared); the state
    right after."""
    _kept_calls.stop()
    return state()


def enabled() -> bool:
    return _kept_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran with the cache kept and none cleared it."""
    return _kept_calls.all_held()


def state() -> dict[str, Any]:
    """``{"keeping", "calls", "held"}``: whether timed calls keep the cache, how many did, how many held."""
    return {"keeping": enabled(), **_kept_calls.counts()}
