"""The ``hooks`` setting: the module hooks as the code registers them, or detached for each timed call."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control as hooks

__all__ = ["Hooks", "HOOKS", "SETTINGS"]


class Hooks(Setting):
    """``hooks``: the module hooks as the workload's code registers them (``code``), or detached for each timed
    call of a user workload (``off``: :func:`benchctl._causes.hooks.control.detached`)."""

    name = "hooks"
    help = ("code | off: module hooks as the workload's code registers them, or detached for each timed call of a "
            "callable or setup()/run(state) workload (no forward, backward or pre-hook runs, per module or global)")
    order = 50
    needs_torch = True
    in_process = True  # the detaching context is put around the timed calls and taken out in a running process
    held_by_calls = True  # during() reads the calls since the switch
    unapplied = "code"
    probe = "off"
    # No counter shows it: the cause reads the hooks the probe worker's call ran (its evidence).
    mechanism = ("every hooked module taking torch.nn.Module's slow path on each call to run its hooks in Python, "
                 "with the ops and syncs they do (a statistic logged per module: a reduction and an .item() each)")

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "off"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with the hooks detached (off) or as written (code).
        return hooks.detach_calls() if value == "off" else hooks.attach_calls()

    def facts(self, observed: dict) -> dict:
        # Whether every timed call held, not how many ran: a time target runs a different count in each process.
        calls = observed.get("calls")
        return {"held": bool(calls) and observed.get("held") == calls}

    def facts_phrase(self, facts: dict) -> str:
        return "every timed call read back with them detached" if facts.get("held") else ""

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "code" once a call ran with torch's call path as the code had it
        # (it put its own back, or nothing wrapped the call: a workload that times itself).
        if value == "code":
            return None
        return "off" if hooks.held() else "code"

    def readback(self, value: str) -> dict:
        return hooks.state()


HOOKS = Hooks()
SETTINGS = (HOOKS,)
