"""The ``parametrize`` setting: each timed call as written, or under ``torch.nn.utils.parametrize.cached()``."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as parametrize

__all__ = ["Parametrize", "PARAMETRIZE", "SETTINGS"]


class Parametrize(AroundCalls):
    """``parametrize``: parametrized tensors recomputed as the workload's code reads them (``code``), or each
    timed call of a user workload under ``torch.nn.utils.parametrize.cached()`` (``cached``)."""

    name = "parametrize"
    help = ("code | cached: parametrized tensors (weight_norm, spectral_norm, orthogonal, register_parametrization) "
            "recomputed on every access as the workload's code reads them, or each timed call of a callable or "
            "setup()/run(state) workload under torch.nn.utils.parametrize.cached()")
    order = 50
    needs_torch = True
    probe = "cached"
    control = parametrize
    held_words = "under the cache"
    # No counter shows it: the cause reads the recomputes of the probe worker's call (its evidence).
    mechanism = ("parametrized tensors recomputed from their originals on every access, several times within "
                 "one call")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs under the cache (cached) or as written (code).
        return parametrize.cache_calls() if value == "cached" else parametrize.uncache_calls()


PARAMETRIZE = Parametrize()
SETTINGS = (PARAMETRIZE,)
