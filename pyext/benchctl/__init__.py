"""benchctl: true, explained PyTorch timings.

The package is layered; each layer imports only the ones above it in this list:

* the native core and its controls and probes, here at the root:
  :mod:`.clock` (ticks and timing loops), :mod:`.fpenv` (FTZ/DAZ on every
  thread), :mod:`.omp` (OpenMP runtimes and torch's team), :mod:`.topology`,
  :mod:`.placement` and :mod:`.threads` (CPU layout, thread counts, pinning),
  :mod:`.counters` (per-iteration event counters), :mod:`.alloc` (malloc
  choices), :mod:`.cuda` (GPU event timing), :mod:`.denormals` (subnormal
  census), and :mod:`.settings` (the settings a matrix cell can have, each
  applied with those controls and read back);
* :mod:`.system`: the machine behind a result (metadata) and what distorts it (doctor);
* :mod:`.results` and :mod:`.workloads`: the results document and everything
  read from it; the workloads a run can measure;
* :mod:`.run`: a settings matrix, each cell in a fresh worker process;
* :mod:`.studies`: penalty profile, flush scopes, the seed questions;
* :mod:`.cli`: ``python -m benchctl``; :mod:`.pytest_plugin`: the pytest plugin (entry point
  ``pytest11``), beside the CLI on the top layer.

What most users need is re-exported here; torch is imported only when a call needs it.
"""

from . import alloc, clock, counters, cuda, denormals, fpenv, omp, threads, topology
from ._validate import ArgumentError
from ._version import __version__
from .clock import Stopwatch, time_calls, to_ns
from .counters import CounterGroup
from .fpenv import flush_denormals, set_flush_denormal
from .results import load as load_results
from .results import stats
from .results.stats import Samples, compare
from .run import run_matrix
from .threads import pin, pinned, set_num_threads, unpin
from .workloads.user import workload

__all__ = [
    "__version__", "ArgumentError",
    "alloc", "clock", "counters", "cuda", "denormals", "fpenv", "omp", "stats", "threads", "topology",
    "Stopwatch", "time_calls", "to_ns", "CounterGroup", "flush_denormals", "set_flush_denormal",
    "pin", "pinned", "unpin", "set_num_threads", "Samples", "compare", "load_results", "run_matrix", "workload",
]
