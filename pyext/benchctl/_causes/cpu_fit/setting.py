"""The ``clamp`` setting: torch's thread count held at the usable CPUs, the code's own calls clamped."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control

__all__ = ["ClampThreads", "CLAMP", "SETTINGS"]


class ClampThreads(Setting):
    """``clamp``: torch's thread count held at the usable CPUs, the code's own calls clamped
    (:mod:`.control`)."""

    name = "clamp"
    help = ("off | usable: hold torch's thread count at the CPUs it may use (its CPU mask, the cgroup quota), also "
            "when the workload's code calls torch.set_num_threads; what the code asked for is read back")
    order = 12  # after threads: it cuts whatever count was set
    needs_torch = True
    in_process = True

    def __init__(self) -> None:
        self._clamp: control.ThreadClamp | None = None

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "usable"))

    def apply(self, value: str) -> Any:
        if value != "usable":
            return None
        self._clamp = control.ThreadClamp()
        return self._clamp.install()

    probe = "usable"
    evidence_counter = "context_switches_per_iter"
    mechanism = "more threads than the CPU mask or the cgroup quota lets it run at once"

    def facts(self, observed: dict) -> dict:
        return {k: observed.get(k) for k in ("usable", "ran", "asked")}

    def facts_phrase(self, facts: dict) -> str:
        if not facts.get("usable"):
            return ""
        asked = facts.get("asked") or []
        code = f"its code asked for {', '.join(map(str, asked))} thread(s) (torch.set_num_threads); " if asked else ""
        return f"{code}torch ran {facts.get('ran')} on the {facts['usable']} CPU(s) it may use"

    def during(self, value: str) -> str | None:
        if value != "usable" or self._clamp is None:
            return None
        if self._clamp.holds():
            return value
        state = self._clamp.state()
        return f"{state['ran']} threads on {state['usable']} CPUs"

    def readback(self, value: str) -> dict:
        return self._clamp.state() if value == "usable" and self._clamp is not None else {}


CLAMP = ClampThreads()
SETTINGS = (CLAMP,)
