"""What the probe worker learns of torch's inter-op pool: its size as the code left it
(``torch.get_num_interop_threads()``, read after the profiled call: the code may have set it) and the CPUs
the worker may run on (its own affinity, which the code may have narrowed)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..._probe import Probe, ProbedCall

__all__ = ["InteropFacts", "InteropProbe", "PROBE", "PROBES"]

# The probe note's keys, written and read here only.
_THREADS, _CPUS = "interop_threads", "interop_cpus"


@dataclass(frozen=True)
class InteropFacts:
    """torch's inter-op pool size in the probe worker (``threads``) and the CPUs it may run on (``cpus``)."""

    threads: int
    cpus: int

    @property
    def beyond_cpus(self) -> bool:
        return self.threads > self.cpus

    def text(self) -> str:
        """``"torch's inter-op pool has 8 threads on 2 CPUs"``."""
        return f"torch's inter-op pool has {self.threads} thread{'s' * (self.threads != 1)} on {self.cpus} CPUs"


class InteropProbe(Probe):
    key = "interop"
    fact = InteropFacts

    def record(self, probed: ProbedCall) -> dict:
        import torch

        return {_THREADS: torch.get_num_interop_threads(), _CPUS: len(os.sched_getaffinity(0))}

    def read(self, note: dict) -> InteropFacts | None:
        if _THREADS not in note or _CPUS not in note:
            return None
        return InteropFacts(int(note[_THREADS]), int(note[_CPUS]))


PROBE = InteropProbe()
PROBES = (PROBE,)
