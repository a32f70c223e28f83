"""Parametrized tensors: run each timed call of a user workload under ``torch.nn.utils.parametrize.cached()``.

``register_parametrization`` (and ``torch.nn.utils.parametrizations.weight_norm``, ``spectral_norm``,
``orthogonal``, built on it) replaces a module's tensor with a property that recomputes it from its
original on every access, through the tensor's ``ParametrizationList``: a weight read four times in a
call (a decoder's steps, a module applied in a loop, shared weights) is computed four times, an
orthogonal one through a matrix exponential or a QR each time. Inside ``parametrize.cached()`` each is
computed once and reused until the block ends.

:func:`cache_calls` runs every later timed call of a user workload inside ``cached()``
(:mod:`benchctl._timed_call`; a worker's ``parametrize=cached`` cell) and :func:`uncache_calls` takes it
out; :func:`held` says whether the cache was on to the end of every call so far. The probe worker's count of
the recomputes a call makes is :func:`benchctl._causes.parametrize.probe.census`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

from ... import _timed_call

__all__ = ["WHAT", "Calls", "cache_calls", "uncache_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "parametrize=cached"


@dataclass
class Calls:
    """The timed calls run under ``cached()`` so far: ``calls`` in all, ``held`` those the cache was still on
    at the end of."""

    calls: int = 0
    held: int = 0


_calls: Calls | None = None


@contextlib.contextmanager
def _timed_cached() -> Iterator[None]:
    from torch.nn.utils import parametrize

    counts = _calls
    with parametrize.cached():
        yield
        if counts is not None:
            counts.calls += 1
            counts.held += parametrize._cache_enabled > 0


def cache_calls() -> dict[str, Any]:
    """Run every later timed call under ``parametrize.cached()`` (counts start at zero; already so: kept); the
    state right after."""
    global _calls
    if _calls is None:
        _calls = Calls()
        _timed_call.put(WHAT, _timed_cached)
    return state()


def uncache_calls() -> dict[str, Any]:
    """The timed calls run as written again; the state right after."""
    global _calls
    _timed_call.take(WHAT)
    _calls = None
    return state()


def enabled() -> bool:
    return _calls is not None


def held() -> bool:
    """Whether at least one timed call ran under the cache and it was on to the end of every one of them."""
    return _calls is not None and _calls.calls > 0 and _calls.held == _calls.calls


def state() -> dict[str, Any]:
    """``{"cached", "calls", "held"}``: whether timed calls run cached, how many did, how many held to their end."""
    return {"cached": enabled(), "calls": _calls.calls if _calls else 0, "held": _calls.held if _calls else 0}
