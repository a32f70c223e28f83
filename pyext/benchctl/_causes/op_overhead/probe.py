"""What the probe worker measures for the per-op overhead cause: this machine's cost of one torch op that does
almost nothing, read back as :class:`OpCost`.

Every torch op called from Python pays a fixed cost whatever its work: the Python binding parses its
arguments, the dispatcher finds its kernel, the kernel sets up its loop and a result is wrapped. The probe
worker times many calls of an in-place add on a 1-element tensor (no allocation, one element of work) after
its profiled call, on its own thread as the workload left it: the median per call over several batches is
what one op costs here, under this machine's load. Each batch lasts milliseconds, as a timed iteration does, so
that it meets the load the iterations met (the cause weighs it against their median): on this shared 2-CPU
machine, batches of a fraction of a scheduler slice ran between a neighbour's bursts and measured half of what
the loaded iterations paid per op. (On a GPU an op costs at least this much more: its launch.)
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from ..._probe import Probe, ProbedCall

__all__ = ["TRIVIAL_OP", "op_cost_us", "OpCost", "OpCostProbe", "PROBE", "PROBES"]

# The probe note's key, written and read here only.
_OP_US = "op_cost_us"
#: The op timed, in words (what one op's cost is the cost of).
TRIVIAL_OP = "an in-place add on a 1-element tensor"
# Batches of calls: ~5 ms each at half a microsecond a call (the docstring says why that long); ~35 ms in all.
_BATCHES, _CALLS = 7, 10_000


def op_cost_us(batches: int = _BATCHES, calls: int = _CALLS) -> float:
    """The median time of one call of :data:`TRIVIAL_OP` from Python, in µs (per-call means of ``batches``
    batches of ``calls`` calls)."""
    import torch

    t = torch.zeros(1, dtype=torch.float32, device="cpu")  # whatever default device or dtype the code set
    per_call = []
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(calls):
            t.add_(t)
        per_call.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(per_call)


@dataclass(frozen=True)
class OpCost:
    """What one torch op that does almost nothing costs on this machine (``us``: :data:`TRIVIAL_OP` called from
    Python, median), as the probe worker measured it."""

    us: float

    @property
    def text(self) -> str:
        """``"the 0.53 µs one op costs here (an in-place add on a 1-element tensor)"``."""
        return f"the {self.us:.2g} µs one op costs here ({TRIVIAL_OP})"


class OpCostProbe(Probe):
    key = "op_cost"
    fact = OpCost

    def record(self, probed: ProbedCall) -> dict:
        if probed.call is None:  # a workload that times itself: no profiled call to weigh it against
            return {}
        return {_OP_US: op_cost_us()}

    def read(self, note: dict) -> OpCost | None:
        us = note.get(_OP_US)
        return OpCost(float(us)) if us is not None and math.isfinite(us) and us > 0 else None


PROBE = OpCostProbe()
PROBES = (PROBE,)
