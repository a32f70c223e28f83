"""Evidence of the probe worker: which vector instructions torch's CPU kernels use, and which this CPU has.

torch chooses its kernels once per process (its own CPU check, or ``ATEN_CPU_CAPABILITY``);
a left-over ``ATEN_CPU_CAPABILITY=default`` makes every vectorised op run its scalar
fallback. The ISA cause (:mod:`benchctl.studies.causes.isa`) compares the choice with the
best one this CPU's flags allow.
"""

from __future__ import annotations

import os

from .. import _procfs
from ..settings import CAPABILITY_ENV, cpu_capability

__all__ = ["CAPABILITY_FLAGS", "cpu_flags", "best_capability", "isa_evidence"]

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
    return {"cpu_capability": cpu_capability(), "capability_env": os.environ.get(CAPABILITY_ENV),
            "best_capability": best_capability(flags), "vector_flags": vector}
