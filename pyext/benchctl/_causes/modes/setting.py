"""The ``modes`` setting: torch's modes as the code left them on, or off for each timed call."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as modes

__all__ = ["Modes", "MODES", "SETTINGS"]


class Modes(AroundCalls):
    """``modes``: torch function and dispatch modes as the workload's code left them on (``code``), or taken off
    for each timed call of a user workload (``off``: :func:`benchctl._causes.modes.control.suspended`)."""

    name = "modes"
    help = ("code | off: torch function and dispatch modes as the workload's code left them on, or each one on as a "
            "timed call of a callable or setup()/run(state) workload starts taken off for that call "
            "(torch.set_default_device's for the CPU included; one that makes tensors on another device stays)")
    order = 50
    needs_torch = True
    probe = "off"
    control = modes
    held_words = "with them off"
    # No counter shows it: the cause reads the modes on around the probe worker's call (its evidence).
    mechanism = ("a mode left on running its Python handler on every torch call (a function mode) or every aten "
                 "op (a dispatch mode), on top of the op itself")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with the modes off (off) or as the code left them (code).
        return modes.suspend_calls() if value == "off" else modes.restore_calls()


MODES = Modes()
SETTINGS = (MODES,)
