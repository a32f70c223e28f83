"""The ``cuda_init`` setting: the CUDA context created before the workload runs, or left lazy."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from ..async_clock import control as cuda_state

__all__ = ["CudaInit", "CUDA_INIT", "SETTINGS"]


class CudaInit(Setting):
    """``cuda_init``: create the CUDA context and library handles before the workload runs, or leave it lazy."""

    name = "cuda_init"
    help = "lazy | eager: create the CUDA context and cuBLAS handle (one small matmul) before the workload runs"
    order = 60
    needs_torch = True
    in_process = False  # a CUDA context once created stays for the life of the process

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("lazy", "eager"))

    def apply(self, value: str) -> Any:
        if value == "eager":
            return cuda_state.init_eagerly()
        return {"initialized": cuda_state.initialized(), "reason": None}

    probe = "eager"
    mechanism = ("the first CUDA call of a process creating the context and the library handles, and loading "
                 "its kernels, inside the first timed iteration")

    def facts(self, observed: dict) -> dict:
        return {"initialized": observed.get("initialized"), "eager": observed.get("eager")}

    def facts_phrase(self, facts: dict) -> str:
        return "the CUDA context created before the workload ran" if facts.get("eager") and facts.get(
            "initialized") else ""

    def readback(self, value: str) -> dict:
        return {"initialized": cuda_state.initialized(), "eager": value == "eager"}


CUDA_INIT = CudaInit()
SETTINGS = (CUDA_INIT,)
