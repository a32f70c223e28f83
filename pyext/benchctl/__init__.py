"""benchctl: true, explained PyTorch timings.

The package is layered; each layer imports only the ones above it in this list:

* the native core and its controls and probes, here at the root:
  :mod:`.clock` (ticks and timing loops), :mod:`.fpenv` (FTZ/DAZ on every
  thread), :mod:`.omp` (OpenMP runtimes and torch's team), :mod:`.topology`,
  :mod:`.placement` and :mod:`.threads` (CPU layout, thread counts, pinning),
  :mod:`.counters` (per-iteration event counters), :mod:`.alloc` (malloc
  choices), :mod:`.cuda` (GPU event timing), :mod:`.denormals` (subnormal
  census), :mod:`.errors` (the error kinds and exit codes), and :mod:`.settings`
  (the settings a matrix cell can have, each applied with those controls and read back);
* :mod:`.system`: the machine behind a result (metadata) and what distorts it (doctor);
* :mod:`.results` and :mod:`.workloads`: the results document and everything
  read from it; the workloads a run can measure;
* :mod:`.run`: a settings matrix, each cell in a fresh worker process;
* :mod:`.studies`: penalty profile, flush scopes, the seed questions;
* :mod:`.cli`: ``python -m benchctl``; :mod:`.pytest_plugin`: the pytest plugin (entry point
  ``pytest11``), beside the CLI on the top layer.

What most users need is re-exported here, imported on first use (PEP 562): importing
benchctl, as the pytest plugin's entry point does in every session, costs almost
nothing and selects no clock; torch is imported only when a call needs it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._validate import ArgumentError
from ._version import __version__

# name -> (module, attribute in it; None: the module itself)
_EXPORTS: dict[str, tuple[str, str | None]] = {
    **{name: (f".{name}", None) for name in ("alloc", "clock", "counters", "cuda", "denormals", "errors", "fpenv",
                                             "omp", "threads", "topology")},
    "Error": (".errors", "Error"), "UserError": (".errors", "UserError"),
    "UnavailableError": (".errors", "UnavailableError"), "ExitCode": (".errors", "ExitCode"),
    "stats": (".results.stats", None),
    "Stopwatch": (".clock", "Stopwatch"), "time_calls": (".clock", "time_calls"), "to_ns": (".clock", "to_ns"),
    "CounterGroup": (".counters", "CounterGroup"),
    "flush_denormals": (".fpenv", "flush_denormals"), "set_flush_denormal": (".fpenv", "set_flush_denormal"),
    "load_results": (".results", "load"),
    "Samples": (".results.stats", "Samples"), "compare": (".results.stats", "compare"),
    "run_matrix": (".run", "run_matrix"),
    "pin": (".threads", "pin"), "pinned": (".threads", "pinned"), "unpin": (".threads", "unpin"),
    "set_num_threads": (".threads", "set_num_threads"),
    "workload": (".workloads.user", "workload"),
}

__all__ = ["__version__", "ArgumentError", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'benchctl' has no attribute {name!r}")
    module_name, attribute = _EXPORTS[name]
    module = importlib.import_module(module_name, __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
