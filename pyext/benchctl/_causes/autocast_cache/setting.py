"""The ``autocast_cache`` setting: autocast's cache of cast weights as the code's blocks leave it, or kept across
the timed calls."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as cache

__all__ = ["AutocastCache", "AUTOCAST_CACHE", "SETTINGS"]


class AutocastCache(AroundCalls):
    """``autocast_cache``: autocast's cache cleared as the code's outermost block exits (``code``), or kept from one
    timed call of a user workload to the next (``kept``: :func:`benchctl._causes.autocast_cache.control.kept`)."""

    name = "autocast_cache"
    help = ("code | kept: autocast's cache of cast weights cleared whenever the code's outermost autocast block "
            "exits, or kept from one timed call of a callable or setup()/run(state) workload to the next (as one "
            "autocast block around all the calls would; a timing probe where the code changes its weights between "
            "calls)")
    order = 50
    needs_torch = True
    probe = "kept"
    control = cache
    held_words = "with the cache kept"
    # No counter shows it: the cause reads the cache clears of the probe worker's call (its evidence).
    mechanism = ("every call casting the weights to the lower precision anew, as its autocast block clears the cast "
                 "weights it cached when it exits")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call keeps the cache (kept) or clears it as its block exits (code).
        return cache.keep_calls() if value == "kept" else cache.restore_calls()


AUTOCAST_CACHE = AutocastCache()
SETTINGS = (AUTOCAST_CACHE,)
