"""The ``modes`` setting: torch's modes as the code left them on, or off for each timed call."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control as modes

__all__ = ["Modes", "MODES", "SETTINGS"]


class Modes(Setting):
    """``modes``: torch function and dispatch modes as the workload's code left them on (``code``), or taken off
    for each timed call of a user workload (``off``: :func:`benchctl._causes.modes.control.suspended`)."""

    name = "modes"
    help = ("code | off: torch function and dispatch modes as the workload's code left them on, or each one on as a "
            "timed call of a callable or setup()/run(state) workload starts taken off for that call "
            "(torch.set_default_device's for the CPU included; one that makes tensors on another device stays)")
    order = 50
    needs_torch = True
    in_process = True  # the suspending context is put around the timed calls and taken out in a running process
    held_by_calls = True  # during() reads the calls since the switch
    unapplied = "code"
    probe = "off"
    # No counter shows it: the cause reads the modes on around the probe worker's call (its evidence).
    mechanism = ("a mode left on running its Python handler on every torch call (a function mode) or every aten "
                 "op (a dispatch mode), on top of the op itself")

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "off"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with the modes off (off) or as the code left them (code).
        return modes.suspend_calls() if value == "off" else modes.restore_calls()

    def facts(self, observed: dict) -> dict:
        # Whether every timed call held, not how many ran: a time target runs a different count in each process.
        calls = observed.get("calls")
        return {"held": bool(calls) and observed.get("held") == calls}

    def facts_phrase(self, facts: dict) -> str:
        return "every timed call read back with them off" if facts.get("held") else ""

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "code" once a call ended with a mode taken off on again.
        if value == "code":
            return None
        return "off" if modes.held() else "code"

    def readback(self, value: str) -> dict:
        return modes.state()


MODES = Modes()
SETTINGS = (MODES,)
