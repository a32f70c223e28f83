"""Export a results document as a pyperf benchmark suite (``python -m pyperf stats/compare_to`` read it).

The mapping follows pyperf's own model: one pyperf *benchmark* per (phase,
cell), named ``WORKLOAD.PHASE[cell]``, and one for the A/A control's second
arm, ``WORKLOAD.PHASE[cell][A/A arm B]`` (the report's label); one pyperf
*run* per worker process (a repetition), with the worker's warm-up
iterations as pyperf warmups and its steady iterations as values, in seconds.

Every run of a benchmark carries the same number of values, as pyperf's own
runs do: its t-test (``compare_to``) refuses samples of different sizes. That
number is the last half of a run's iterations, the part warm-up detection
takes the steady state from (:func:`benchctl._results.stats.detect_warmup`),
so two exports of the same design carry the same count; fewer where a run's
warm-up reached into that half. The steady iterations left out, and the
count, are in each run's metadata (``benchctl_values_per_run``,
``benchctl_steady_values_left_out``). pyperf accepts only values > 0: an
iteration measured as 0 ticks (shorter than the clock's read cost) cannot
be carried and is counted in ``benchctl_dropped_zero_values``. Each run also
carries the machine's metadata under pyperf's names (``cpu_model_name``,
``cpu_count``, ``hostname``, ``python_version``, ...) and benchctl's
(``benchctl_version``, ``torch_version``), from the document's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .. import settings as _settings
from .._validate import ArgumentError
from ..errors import MissingPackage
from . import queries, summary
from .document import CONTROL_ARM

__all__ = ["benchmark_name", "machine_metadata", "to_suite", "export"]


def benchmark_name(workload: str, phase: str, cell: dict, arm: Optional[str] = None) -> str:
    return f"{workload}.{phase}[{_settings.cell_label(cell)}]" + (summary.ARM_LABEL if arm == CONTROL_ARM else "")


def _section(system: dict, name: str) -> dict:
    value = system.get(name)
    return value if isinstance(value, dict) else {}


def machine_metadata(doc: dict) -> dict[str, Any]:
    """The machine and software a document was measured on, as pyperf metadata (pyperf's own key names where
    it has one); what the document did not record is left out."""
    meta = doc.get("metadata") or {}
    system = meta.get("system") if isinstance(meta.get("system"), dict) else {}
    packages = _section(system, "packages")
    load = system.get("load_average")
    out = {
        "hostname": meta.get("hostname") or system.get("hostname"),
        "cpu_model_name": _section(system, "cpu").get("model_name"),
        "cpu_count": _section(system, "topology").get("logical_cpus"),
        "platform": meta.get("platform"),
        "python_version": meta.get("python") or _section(system, "python").get("version"),
        "python_implementation": _section(system, "python").get("implementation"),
        "load_avg_1min": load[0] if isinstance(load, list) and load else None,
        "torch_version": packages.get("torch"),
        "benchctl_version": meta.get("benchctl_version") or packages.get("benchctl"),
    }
    return {k: v for k, v in out.items() if v is not None and v != ""}


@dataclass(frozen=True)
class _Series:
    """One worker's iterations of one phase, in seconds: its warm-up, and its steady ones that pyperf can take."""

    run: dict
    warmups: list[float]
    steady: list[float]
    zeros: int
    iterations: int

    @classmethod
    def of(cls, run: dict, data: dict) -> "_Series":
        seconds = [v / 1e9 for v in data["ns"]]
        start = queries.steady_start(data)
        warmups, steady = ([v for v in part if v > 0] for part in (seconds[:start], seconds[start:]))
        return cls(run, warmups, steady, len(seconds) - len(warmups) - len(steady), len(seconds))

    @property
    def half(self) -> int:
        """The last half of its iterations (at least one)."""
        return max(self.iterations // 2, 1)


def _benchmark(pyperf, doc: dict, phase: str, cell: dict, arm: Optional[str], machine: dict):
    """The pyperf benchmark of ``cell``'s processes (of arm ``arm``) in ``phase``, None when none has a value."""
    name = benchmark_name(doc["workload"], phase, cell, arm)
    series = [_Series.of(run, run["phases"][phase]) for run in queries.ok_runs(doc, cell, arm)
              if run["phases"].get(phase, {}).get("ns")]
    series = [s for s in series if s.steady]
    if not series:
        return None
    count = min(min(s.half, len(s.steady)) for s in series)
    runs = []
    for s in series:
        metadata = {**machine, "name": name, "unit": "second", "loops": 1,
                    "benchctl_repetition": s.run["repetition"], "benchctl_values_per_run": count,
                    "benchctl_steady_values_left_out": len(s.steady) - count}
        if s.zeros:
            metadata["benchctl_dropped_zero_values"] = s.zeros
        if s.run.get("started_at"):
            metadata["date"] = s.run["started_at"]
        # The last steady iterations: the steadiest, and those the warm-up was judged against.
        runs.append(pyperf.Run(s.steady[-count:], warmups=[(1, v) for v in s.warmups] or None, metadata=metadata,
                               collect_metadata=False))
    return pyperf.Benchmark(runs)


def to_suite(doc: dict):
    """A ``pyperf.BenchmarkSuite`` holding every successful run of ``doc``, the A/A control's arm B included."""
    try:
        import pyperf
    except ImportError:
        raise MissingPackage("exporting to pyperf needs pyperf: pip install pyperf") from None

    machine = machine_metadata(doc)
    found = (_benchmark(pyperf, doc, phase, cell, arm, machine) for phase in queries.phases(doc)
             for cell, arm in summary.slots(doc))
    benchmarks = [b for b in found if b is not None]
    if not benchmarks:
        raise ArgumentError("nothing to export: the document has no successful run with samples")
    return pyperf.BenchmarkSuite(benchmarks)


def export(doc: dict, path: str) -> None:
    """Write ``doc`` as a pyperf JSON file at ``path`` (replacing it)."""
    to_suite(doc).dump(path, replace=True)
