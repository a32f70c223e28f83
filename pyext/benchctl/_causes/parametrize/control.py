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

from typing import Any

from ... import _timed_call

__all__ = ["WHAT", "cache_calls", "uncache_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "parametrize=cached"


def _cached():
    from torch.nn.utils import parametrize

    return parametrize.cached()


def _still_cached(_: Any) -> bool:
    from torch.nn.utils import parametrize

    return parametrize._cache_enabled > 0


_cached_calls = _timed_call.HeldContext(WHAT, _cached, _still_cached)


def cache_calls() -> dict[str, Any]:
    """Run every later timed call under ``parametrize.cached()`` (counts start at zero; already so: kept); the
    state right after."""
    _cached_calls.start()
    return state()


def uncache_calls() -> dict[str, Any]:
    """The timed calls run as written again; the state right after."""
    _cached_calls.stop()
    return state()


def enabled() -> bool:
    return _cached_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran under the cache and it was on to the end of every one of them."""
    return _cached_calls.all_held()


def state() -> dict[str, Any]:
    """``{"cached", "calls", "held"}``: whether timed calls run cached, how many did, how many held to their end."""
    return {"cached": enabled(), **_cached_calls.counts()}
