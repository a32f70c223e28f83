"""What was learnt of a workload before its matrix ran: the facts every rule's pre-check reads.

``benchctl explain`` measures them in one probe worker (the workload unchanged, in a fresh
process: :meth:`Facts.from_probe`); the seed scripts take the census of the model's values in
their own process (:meth:`Facts.from_census`) and know nothing else before running.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from ..settings import PASSIVE_WAIT, RUNTIME_WAIT_VARIABLES
from . import queries
from .summary import COUNTER_FIELDS

__all__ = ["Dispatch", "TeamWait", "Facts"]


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
    it started with, and the CPUs the workload's other threads and child processes kept busy during the
    profiled call (``beside_cpus``) and the CPU milliseconds that was (``beside_ms``; None: not measured)."""

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


@dataclass(frozen=True)
class Facts:
    """``phases``: in the order they first ran; ``median_ms`` and ``counters`` per phase
    (per-iteration medians of faults, context switches, migrations); ``ops``: the torch ops one
    call ran (the profiler's names; empty when unknown); ``census``: subnormal counts in what it
    computes (``outputs``, ``activations``, ``weights``; None when unknown); ``pools``: the
    thread pools threadpoolctl saw; ``cpus``: CPUs this process may use; ``isa``: torch's kernel
    capability and this CPU's (:class:`Dispatch`; None when unknown); ``omp_wait``: how torch's
    OpenMP team waits and what else of the workload's ran beside it (:class:`TeamWait`; None when unknown)."""

    phases: list[str] = field(default_factory=list)
    median_ms: dict[str, float] = field(default_factory=dict)
    counters: dict[str, dict[str, float | None]] = field(default_factory=dict)
    ops: list[str] = field(default_factory=list)
    census: dict | None = None
    pools: list[dict] = field(default_factory=list)
    cpus: int = field(default_factory=lambda: len(os.sched_getaffinity(0)))
    isa: Dispatch | None = None
    omp_wait: TeamWait | None = None

    def __post_init__(self) -> None:
        if isinstance(self.isa, dict):  # read back from a results file
            object.__setattr__(self, "isa", Dispatch(**self.isa))
        if isinstance(self.omp_wait, dict):
            object.__setattr__(self, "omp_wait", TeamWait(**self.omp_wait))

    @classmethod
    def from_probe(cls, doc: dict) -> "Facts":
        """The facts in a results document whose one run is the probe worker."""
        cell = queries.cells(doc)[0]
        phases = queries.phases(doc)
        summaries = {p: queries.summary_entry(doc, p, cell) or {} for p in phases}
        notes = (queries.ok_runs(doc, cell) or [{}])[0].get("notes", {})
        probe = notes.get("probe") or {}
        census = {k: probe[k] for k in ("outputs", "activations", "weights") if k in probe} or None
        return cls(phases=phases,
                   median_ms={p: s.get("median_ms") for p, s in summaries.items()},
                   counters={p: {f: s.get(f) for f in COUNTER_FIELDS.values()} for p, s in summaries.items()},
                   ops=list(probe.get("ops", [])), census=census, pools=list(notes.get("pools", [])),
                   isa=Dispatch.from_probe(probe), omp_wait=TeamWait.from_probe(probe))

    @classmethod
    def from_census(cls, census: dict | None) -> "Facts":
        """Facts that are only a census of the values (``{"weights": ..., "activations": ...}``)."""
        return cls(census=census)

    @classmethod
    def from_json(cls, data: dict | None) -> "Facts | None":
        return None if data is None else cls(**data)

    def to_json(self) -> dict:
        return asdict(self)

    def subnormals(self) -> int | None:
        """Subnormal values seen in what the workload computes, or None when no value was counted (it
        returns no tensor and exposes no module: then the census cannot rule denormals out)."""
        if not self.census or not sum(part.get("values", 0) for part in self.census.values()):
            return None
        return sum(part.get("subnormal", 0) for part in self.census.values())

    def census_text(self) -> str:
        """``"weights 0 subnormal of 25,557,032, activations 0 subnormal of 12,845,056"``."""
        return ", ".join(f"{part} {v['subnormal']:,} subnormal of {v['values']:,}"
                         for part, v in (self.census or {}).items() if v.get("values"))
