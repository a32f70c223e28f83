"""The ``clamp`` setting: torch's thread count held at the usable CPUs, the code's own calls clamped (``usable``:
cut to them; ``all``: set to them, also where the code asks fewer)."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control

__all__ = ["ClampThreads", "CLAMP", "SETTINGS"]


class ClampThreads(Setting):
    """``clamp``: torch's thread count held at the usable CPUs, the code's own calls clamped
    (:mod:`.control`)."""

    name = "clamp"
    help = ("off | usable | all: hold torch's thread count at the CPUs it may use (its CPU mask, the cgroup quota), "
            "also when the workload's code calls torch.set_num_threads (usable: no more than them; all: as many, also "
            "where the code asks fewer); what the code asked for is read back")
    order = 12  # after threads: it cuts whatever count was set
    needs_torch = True
    in_process = True
    unapplied = "off"
    # all raises one thread to every usable CPU: other load then falls on the arms unlike (the contention gate).
    changes_cpus_used = True

    def __init__(self) -> None:
        self._clamp: control.ThreadClamp | None = None
        self._before = 0  # torch's thread count as the clamp went in

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "usable", "all"))

    def apply(self, value: str) -> Any:
        return self.switch(value) if value != "off" else None  # off: a fresh process has nothing to undo

    def switch(self, value: str) -> Any:
        # usable or all: a fresh clamp of that kind installed (its calls counted from zero; one of the other kind
        # taken out first), torch's count from before it remembered;
        # off: torch's own set_num_threads back, and the count an unclamped process would run now: the last the
        # code asked for while clamped, else the one from before the clamp. Switching to the value held changes
        # nothing. What the clamp reads after it (usable, all: its state; off: {"ran"}).
        import torch  # imported by the worker before any setting that needs it

        fill = value == "all"
        if value != "off" and self._clamp is not None and self._clamp.installed and self._clamp.fill != fill:
            self.switch("off")  # the other kind of clamp: the code's count back before this one goes in
        if value != "off":
            if self._clamp is None or not self._clamp.installed:
                clamp = control.ThreadClamp(fill)
                self._before = torch.get_num_threads()
                clamp.install()  # puts the count back itself if it fails
                self._clamp = clamp
            return self._clamp.state()
        if self._clamp is not None and self._clamp.installed:
            asked = [n for n in self._clamp.asked if isinstance(n, int) and not isinstance(n, bool) and n > 0]
            self._clamp.remove()
            torch.set_num_threads(asked[-1] if asked else self._before)
        return {"ran": torch.get_num_threads()}

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
        if value == "off" or self._clamp is None:
            return None
        if self._clamp.holds():
            return value
        state = self._clamp.state()
        return f"{state['ran']} threads on {state['usable']} CPUs"

    def readback(self, value: str) -> dict:
        return self._clamp.state() if value != "off" and self._clamp is not None else {}


CLAMP = ClampThreads()
SETTINGS = (CLAMP,)
