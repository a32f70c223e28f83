"""The ``inference`` setting: each timed call of a user workload under ``torch.inference_mode()``."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control as inference

__all__ = ["InferenceMode", "INFERENCE", "SETTINGS"]


class InferenceMode(Setting):
    """``inference``: each timed call of a user workload under ``torch.inference_mode()``
    (:mod:`benchctl._causes.recording.control`)."""

    name = "inference"
    help = ("off | on: run each timed call of a callable or setup()/run(state) workload under "
            "torch.inference_mode()")
    order = 50
    needs_torch = True
    in_process = True  # the wrapper is switched on and off in a running process
    held_by_calls = True  # during() reads the calls since the switch
    unapplied = "off"

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "on"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def switch(self, value: str) -> Any:
        # on: timed calls wrapped from now (counted from zero); off: no longer wrapped. Switching to the value held
        # changes nothing (its counts go on). It holds from the next timed call on (benchctl._timed_call).
        if (value == "on") != inference.enabled():
            if value == "on":
                inference.enable()
            else:
                inference.disable()
        return inference.state()

    # No counter shows it: the cause reads what records a graph in the probe worker's call (its evidence).
    probe = "on"
    mechanism = ("autograd recording a graph for every op on tensors that require grad, for gradients the "
                 "call never uses")

    def facts(self, observed: dict) -> dict:
        return {"calls": observed.get("calls"), "held": observed.get("held")}

    def facts_phrase(self, facts: dict) -> str:
        calls = facts.get("calls")
        return f"{facts.get('held')} of {calls} timed calls read back under it" if calls else ""

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "off" once a call ran without the mode holding to its end
        # (the code turned it off, or nothing wrapped the call: a workload that times itself).
        if value == "off":
            return None
        return "on" if inference.held() else "off"

    def readback(self, value: str) -> dict:
        return inference.state()


INFERENCE = InferenceMode()
SETTINGS = (INFERENCE,)
