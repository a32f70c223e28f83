"""The ``profiler`` setting: torch's autograd profiler as the code starts it, or kept off against its starts."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control

__all__ = ["Profiler", "PROFILER", "SETTINGS"]


class Profiler(Setting):
    """``profiler``: the autograd profiler as the workload's code starts it (``code``), or kept off against
    every start (``off``: ``torch.profiler.profile``, ``torch.autograd.profiler.profile``, ``emit_nvtx``)."""

    name = "profiler"
    help = ("code | off: torch's autograd profiler as the workload's code starts it, or kept off against its "
            "torch.profiler.profile / torch.autograd.profiler.profile / emit_nvtx contexts")
    order = 50  # after torch is imported and the thread settings applied; nothing else depends on it
    needs_torch = True
    in_process = True

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "off"))

    def apply(self, value: str) -> Any:
        return control.keep_off() if value == "off" else control.state()

    # No counter shows it: the cause reads the sessions the probe worker's code started (its evidence).
    probe = "off"
    mechanism = ("the autograd profiler recording every op (its event, inputs and timing) while the work ran: "
                 "a profiling session left around the work")

    def facts(self, observed: dict) -> dict:
        return {"enabled": observed.get("enabled"), "refused": observed.get("refused")}

    def facts_phrase(self, facts: dict) -> str:
        refused = facts.get("refused")
        if facts.get("enabled") is not False or refused is None:
            return ""
        if not refused:
            return "read back off after the run"
        return f"kept off against {refused} profiler start{'s' * (refused != 1)} of the code"

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "on" if a session is still recording (one started some way
        # around the guard, or before it).
        if value == "code":
            return None
        return "on" if control.is_on() else "off"

    def readback(self, value: str) -> dict:
        return control.state()


PROFILER = Profiler()
SETTINGS = (PROFILER,)
