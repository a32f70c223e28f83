"""The ``parametrize`` setting: each timed call as written, or under ``torch.nn.utils.parametrize.cached()``."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control as parametrize

__all__ = ["Parametrize", "PARAMETRIZE", "SETTINGS"]


class Parametrize(Setting):
    """``parametrize``: parametrized tensors recomputed as the workload's code reads them (``code``), or each
    timed call of a user workload under ``torch.nn.utils.parametrize.cached()`` (``cached``)."""

    name = "parametrize"
    help = ("code | cached: parametrized tensors (weight_norm, spectral_norm, orthogonal, register_parametrization) "
            "recomputed on every access as the workload's code reads them, or each timed call of a callable or "
            "setup()/run(state) workload under torch.nn.utils.parametrize.cached()")
    order = 50
    needs_torch = True
    in_process = True  # the cache is put around the timed calls and taken out in a running process
    held_by_calls = True  # during() reads the calls since the switch
    unapplied = "code"
    probe = "cached"
    # No counter shows it: the cause reads the recomputes of the probe worker's call (its evidence).
    mechanism = ("parametrized tensors recomputed from their originals on every access, several times within "
                 "one call")

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "cached"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs under the cache (cached) or as written (code).
        return parametrize.cache_calls() if value == "cached" else parametrize.uncache_calls()

    def facts(self, observed: dict) -> dict:
        # Whether every timed call held, not how many ran: a time target runs a different count in each process.
        calls = observed.get("calls")
        return {"held": bool(calls) and observed.get("held") == calls}

    def facts_phrase(self, facts: dict) -> str:
        return "every timed call read back under the cache" if facts.get("held") else ""

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "code" once a call ended with the cache off (nothing wrapped the
        # call: a workload that times itself).
        if value == "code":
            return None
        return "cached" if parametrize.held() else "code"

    def readback(self, value: str) -> dict:
        return parametrize.state()


PARAMETRIZE = Parametrize()
SETTINGS = (PARAMETRIZE,)
