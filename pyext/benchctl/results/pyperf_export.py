"""Export a results document as a pyperf benchmark suite (``python -m pyperf stats/compare_to`` read it).

The mapping follows pyperf's own model: one pyperf *benchmark* per (phase,
cell), named ``WORKLOAD.PHASE[cell]``; one pyperf *run* per worker process
(a repetition), with the worker's warm-up iterations as pyperf warmups and
its steady iterations as values, in seconds. pyperf accepts only values > 0:
an iteration measured as 0 ticks (shorter than the clock's read cost) cannot
be carried over and is counted in the run's ``benchctl_dropped_zero_values``.
"""

from __future__ import annotations

from .. import settings as _settings
from .._validate import ArgumentError
from ..errors import MissingPackage
from . import queries

__all__ = ["to_suite", "export"]


def _benchmark_name(workload: str, phase: str, cell: dict) -> str:
    return f"{workload}.{phase}[{_settings.cell_label(cell)}]"


def to_suite(doc: dict):
    """A ``pyperf.BenchmarkSuite`` holding every successful run of ``doc``."""
    try:
        import pyperf
    except ImportError:
        raise MissingPackage("exporting to pyperf needs pyperf: pip install pyperf") from None

    benchmarks = []
    for phase in queries.phases(doc):
        for cell in queries.cells(doc):
            name = _benchmark_name(doc["workload"], phase, cell)
            runs = []
            for run in queries.ok_runs(doc, cell):
                data = run["phases"].get(phase)
                if not data or not data["ns"]:
                    continue
                start = data.get("warmup") or 0
                seconds = [v / 1e9 for v in data["ns"]]
                values = [v for v in seconds[start:] if v > 0]
                warmups = [(1, v) for v in seconds[:start] if v > 0]
                if not values and not warmups:
                    continue
                metadata = {"name": name, "unit": "second", "loops": 1,
                            "benchctl_repetition": run["repetition"]}
                dropped = len(seconds) - len(values) - len(warmups)
                if dropped:
                    metadata["benchctl_dropped_zero_values"] = dropped
                runs.append(pyperf.Run(values, warmups=warmups or None, metadata=metadata,
                                       collect_metadata=False))
            if runs:
                benchmarks.append(pyperf.Benchmark(runs))
    if not benchmarks:
        raise ArgumentError("nothing to export: the document has no successful run with samples")
    return pyperf.BenchmarkSuite(benchmarks)


def export(doc: dict, path: str) -> None:
    """Write ``doc`` as a pyperf JSON file at ``path`` (replacing it)."""
    to_suite(doc).dump(path, replace=True)
