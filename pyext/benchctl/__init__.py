"""benchctl: true, explained PyTorch timings.

The public surface is the root's modules and what this package re-exports; the implementation lives
in private subpackages. Each layer imports only the ones above it in this list:

* the native core's controls and probes: :mod:`.clock` (ticks and timing loops), :mod:`.fpenv`
  (FTZ/DAZ on every thread), :mod:`.omp` (OpenMP runtimes and torch's team), :mod:`.topology`,
  :mod:`.placement` and :mod:`.threads` (CPU layout, thread counts, pinning), :mod:`.counters`
  (per-iteration event counters), :mod:`.alloc` (malloc choices), :mod:`.cuda` (GPU event timing),
  :mod:`.denormals` (subnormal census), :mod:`.errors` (the error kinds and exit codes);
* :mod:`.settings`: every setting a matrix cell can have (each applied and read back), gathered
  from the causes' packages (``_causes/<name>/setting.py``) and other installed packages;
* ``_system``: the machine behind a result (metadata) and what distorts it (doctor);
* :mod:`.probes`: what the probe worker records for each cause (``_causes/<name>/probe.py``);
* ``_results`` and ``_workloads``: the results document and everything read from it; the
  workloads a run can measure;
* ``_run``: a settings matrix, each cell in a fresh worker process;
* ``_studies``: explain, the penalty profile, the seed questions, and the causes' rules
  (``_causes/<name>/rule.py``); :mod:`.rules`: what a cause's rule is made of, for a package
  that adds its own (the ``benchctl.causes`` entry points);
* ``_cli``: ``python -m benchctl``; :mod:`.pytest_plugin`: the pytest plugin (entry point
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
    "stats": ("._results.stats", None),
    "Stopwatch": (".clock", "Stopwatch"), "time_calls": (".clock", "time_calls"), "to_ns": (".clock", "to_ns"),
    "CounterGroup": (".counters", "CounterGroup"),
    "flush_denormals": (".fpenv", "flush_denormals"), "set_flush_denormal": (".fpenv", "set_flush_denormal"),
    "load_results": ("._results", "load"),
    "Samples": ("._results.stats", "Samples"), "compare": ("._results.stats", "compare"),
    "run_matrix": ("._run", "run_matrix"),
    "pin": (".threads", "pin"), "pinned": (".threads", "pinned"), "unpin": (".threads", "unpin"),
    "set_num_threads": (".threads", "set_num_threads"),
    "workload": ("._workloads.user", "workload"),
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
    # The public names only: not the helpers this file imports (importlib, Any) nor the private modules loaded.
    return sorted(__all__)
