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
    # No counter shows it: the cause reads the sessions the probe worker's code started (its evidence).
    mechanism = ("the autograd profiler recording every op (its event, inputs and timing) while the work ran: "
                 "a profiling session left around the work")


PROFILER = Profiler()
SETTINGS = (PROFILER,)
