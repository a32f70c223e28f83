"""Evidence of the probe worker: which vector instructions torch's CPU kernels use, and which this CPU has,
read back as :class:`Dispatch`.

torch chooses its kernels once per process (its own CPU check, or ``ATEN_CPU_CAPABILITY``);
a left-over ``ATEN_CPU_CAPABILITY=default`` makes every vectorised op run its scalar
fallback. The ISA cause (:mod:`.rule`) compares the choice with the
best one this CPU's flags allow.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ... import _procfs
from ..._probe import Probe, ProbedCall
from .setting import CAPABILITY_ENV, cpu_capability

__all__ = ["CAPABILITY_FLAGS", "cpu_flags", "best_capability", "isa_evidence", "Dispatch", "IsaProbe", "PROBE",
           "PROBES"]

# The probe note's keys, written and read here only.
_USED, _FORCED, _BEST, _FLAGS = "cpu_capability", "capability_env", "best_capability", "vector_flags"

#: Each x86 capability torch dispatches to, best first, and the CPU flags its kernels need (as torch checks them).
CAPABILITY_FLAGS = (
    ("avx512", frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma"})),
    ("avx2", frozenset({"avx2", "fma"})),
)


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str] | None:
    """The first CPU's ``flags`` in /proc/cpuinfo (x86), or None where there is no such line."""
    text = _procfs.read_text("/proc/cpuinfo") if cpuinfo is None else cpuinfo
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return None


def best_capability(flags: frozenset[str] | None) -> str | None:
    """The best capability ``flags`` allow ("default" when none of the vector ones), None when unknown."""
    if flags is None:
        return None
    return next((name for name, needs in CAPABILITY_FLAGS if needs <= flags), "default")


def isa_evidence() -> dict:
    """The probe note's keys: the capability torch dispatches to, the variable that forced it (None: unset),
    the best one this CPU offers (None: not an x86 flags line) and the vector flags it has."""
    flags = cpu_flags()
    vector = sorted(f for f in flags or () if f.startswith(("avx", "amx", "fma")))
    return {_USED: cpu_capability(), _FORCED: os.environ.get(CAPABILITY_ENV),
            _BEST: best_capability(flags), _FLAGS: vector}


@dataclass(frozen=True)
class Dispatch:
    """Which vector instructions torch's CPU kernels use in the probe worker (``used``: "avx512", "avx2",
    "default"), the ``ATEN_CPU_CAPABILITY`` it saw (``forced``; None: unset), the best one this CPU's
    flags allow (``best``; None: unknown, not an x86 CPU) and its vector ``flags``."""

    used: str
    forced: str | None = None
    best: str | None = None
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "flags", tuple(self.flags))  # a results file gives a list

    @classmethod
    def from_probe(cls, probe: dict) -> "Dispatch | None":
        """From the probe note's keys (:func:`isa_evidence`); None where they are missing."""
        if not probe.get(_USED):
            return None
        return cls(probe[_USED], probe.get(_FORCED), probe.get(_BEST), tuple(probe.get(_FLAGS, ())))

    @property
    def below_best(self) -> bool:
        """Whether torch dispatches to narrower kernels than this CPU offers."""
        return self.best is not None and self.used != self.best

    def text(self) -> str:
        """``"avx512 kernels (ATEN_CPU_CAPABILITY=avx512)"``: what torch dispatched to, and why."""
        why = "torch's own choice" if self.forced is None else f"ATEN_CPU_CAPABILITY={self.forced}"
        return f"{self.used} kernels ({why})"


class IsaProbe(Probe):
    key = "isa"
    fact = Dispatch

    def record(self, probed: ProbedCall) -> dict:
        return isa_evidence()

    def read(self, note: dict) -> Dispatch | None:
        return Dispatch.from_probe(note)


PROBE = IsaProbe()
PROBES = (PROBE,)
