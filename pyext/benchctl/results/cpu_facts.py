"""What the probe worker learnt of this CPU's kernels and of how torch's OpenMP team waits: the
evidence of the ISA-dispatch and OpenMP-wait causes (:mod:`benchctl.workloads.probe_isa`,
:mod:`benchctl.workloads.probe_omp_wait`), read through :class:`~.facts.Facts`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..settings import PASSIVE_WAIT, RUNTIME_WAIT_VARIABLES

__all__ = ["Dispatch", "TeamWait"]


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
        """From the probe note's keys (:mod:`benchctl.workloads.probe_isa`); None where they are missing."""
        if not probe.get("cpu_capability"):
            return None
        return cls(probe["cpu_capability"], probe.get("capability_env"), probe.get("best_capability"),
                   tuple(probe.get("vector_flags", ())))

    @property
    def below_best(self) -> bool:
        """Whether torch dispatches to narrower kernels than this CPU offers."""
        return self.best is not None and self.used != self.best

    def text(self) -> str:
        """``"avx512 kernels (ATEN_CPU_CAPABILITY=avx512)"``: what torch dispatched to, and why."""
        why = "torch's own choice" if self.forced is None else f"ATEN_CPU_CAPABILITY={self.forced}"
        return f"{self.used} kernels ({why})"


@dataclass(frozen=True)
class TeamWait:
    """How torch's OpenMP team waits between parallel regions, in the probe worker: its ``runtime``
    ("libgomp", "libiomp5", "libomp"; None: no runtime loaded), its ``team`` size, the wait ``variables``
    it started with, and the CPUs the workload's other threads and child processes kept busy over the
    probe's timed iterations (``beside_cpus``) and the CPU milliseconds that was (``beside_ms``; None: not
    measured)."""

    runtime: str | None
    team: int
    variables: dict[str, str] = field(default_factory=dict)
    beside_cpus: float | None = None
    beside_ms: float | None = None

    @classmethod
    def from_probe(cls, probe: dict) -> "TeamWait | None":
        """From the probe note's keys (:mod:`benchctl.workloads.probe_omp_wait`); None where they are missing."""
        if "omp_team" not in probe:
            return None
        return cls(probe.get("omp_runtime"), probe["omp_team"], dict(probe.get("omp_wait_env") or {}),
                   probe.get("cpus_beside_team"), probe.get("cpu_ms_beside_team"))

    @property
    def passive(self) -> str | None:
        """The variable that already makes this runtime's threads sleep at once (``"GOMP_SPINCOUNT=0"``), or None."""
        for name in RUNTIME_WAIT_VARIABLES.get(self.runtime, ()):
            if self.variables.get(name, "").strip().lower() == PASSIVE_WAIT[name].lower():
                return f"{name}={self.variables[name]}"
        return None
