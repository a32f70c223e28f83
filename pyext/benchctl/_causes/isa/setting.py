"""The ``isa`` setting: which vector instructions torch's CPU kernels use (``ATEN_CPU_CAPABILITY`` at start)."""

from __future__ import annotations

import os
from typing import Any

from ..._setting import Setting

__all__ = ["CAPABILITY_ENV", "cpu_capability", "KernelCapability", "ISA", "SETTINGS"]


#: The variable torch reads once, at its first kernel dispatch, to choose its CPU kernels.
CAPABILITY_ENV = "ATEN_CPU_CAPABILITY"


def cpu_capability() -> str:
    """The kernels torch dispatches to in this process, lower-case ("avx512", "avx2", "default")."""
    import torch  # the setting reads torch's own choice; its caller runs torch code anyway

    return torch.backends.cpu.get_cpu_capability().lower()


class KernelCapability(Setting):
    """``isa``: which vector instructions torch's CPU kernels use (``ATEN_CPU_CAPABILITY`` at the worker's start).

    torch reads the variable at its first kernel dispatch and keeps its choice for the process,
    so the setting is environment only; the readback and the in-run check ask torch what it
    chose: a user file that assigns the variable before ``import torch`` replaces the probe, and
    the check after each timed iteration sees it."""

    name = "isa"
    help = (f"default | avx2 | avx512: torch's CPU kernels ({CAPABILITY_ENV} at start), read back from "
            "torch.backends.cpu.get_cpu_capability()")
    CAPABILITIES = ("default", "avx2", "avx512")
    in_process = False  # torch reads its variable once, at its first kernel dispatch

    def canonical(self, value: Any) -> str:
        return self._choice(value, self.CAPABILITIES)

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, CAPABILITY_ENV: value}

    def owns(self, value: str) -> tuple[str, ...]:
        return (CAPABILITY_ENV,)

    # No fixed probe: the ISA cause probes the best capability this CPU offers (benchctl._causes.isa.rule).
    mechanism = "torch's kernels dispatched to narrower vector instructions than this CPU has"

    def facts(self, observed: dict) -> dict:
        return {"capability": observed.get("capability")}

    def facts_phrase(self, facts: dict) -> str:
        return f"torch read back dispatching to {facts['capability']} kernels" if facts.get("capability") else ""

    def readback(self, value: str) -> dict:
        return {"capability": cpu_capability(), CAPABILITY_ENV: os.environ.get(CAPABILITY_ENV)}

    def during(self, value: str) -> str:
        return cpu_capability()


ISA = KernelCapability()
SETTINGS = (ISA,)
