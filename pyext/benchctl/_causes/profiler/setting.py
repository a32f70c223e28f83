"""The ``profiler`` setting: torch's autograd profiler as the code starts it, or kept off against its starts."""

from __future__ import annotations

from ..._setting import KeptOff
from . import control as profiler

__all__ = ["Profiler", "PROFILER", "SETTINGS"]


class Profiler(KeptOff):
    """``profiler``: the autograd profiler as the workload's code starts it (``code``), or kept off against
    every start (``off``: ``torch.profiler.profile``, ``torch.autograd.profiler.profile``, ``emit_nvtx``)."""

    name = "profiler"
    help = ("code | off: torch's autograd profiler as the workload's code starts it, or kept off against its "
            "torch.profiler.profile / torch.autograd.profiler.profile / emit_nvtx contexts")
    control = profiler
    refused_call = ("profiler start", "of the code")
    # A session the code started at its import is stopped as ``off`` is applied, and no switch back can start
    # it again: timed in fresh processes, never paired.
    carries_over = True
    # No counter shows it: the cause reads the sessions the probe worker's code started (its evidence).
    mechanism = ("the autograd profiler recording every op (its event, inputs and timing) while the work ran: "
                 "a profiling session left around the work")

    def facts(self, observed: dict) -> dict:
        return {**super().facts(observed), "stopped": observed.get("stopped")}

    def facts_phrase(self, facts: dict) -> str:
        said = super().facts_phrase(facts)
        if facts.get("enabled") is not False or not facts.get("stopped"):
            return said
        stopped = "its session recording from before the timed calls (started at its import) stopped"
        return f"{stopped}; {said}" if facts.get("refused") else f"{stopped}, read back off after the run"


PROFILER = Profiler()
SETTINGS = (PROFILER,)
