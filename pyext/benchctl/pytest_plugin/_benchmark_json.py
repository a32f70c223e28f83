"""``--benchmark-json FILE`` under ``--benchctl-as-benchmark``: pytest-benchmark's JSON report, with benchctl's
figures, so that what reads that file (``pytest-benchmark compare``, dashboards, CI actions) keeps working.

The layout is pytest-benchmark's: ``machine_info``, ``commit_info``,
``benchmarks`` (``group``, ``name``, ``fullname``, ``params``, ``param``,
``extra_info``, ``options``, ``stats``), ``datetime`` and ``version``. The
statistics are benchctl's (:mod:`._benchmark_stats`: per call, in seconds, over
the steady rounds). What pytest-benchmark has no field for is under keys of
benchctl's own: each benchmark's ``benchctl`` (the median's 95% interval, the
warm-up rounds set apart, calls per round, flags and advice, the processes of
an isolated test, the settings read back) and the report's ``benchctl``
(version, clock, options, and the results file of ``--benchctl-json``).
As in pytest-benchmark, a benchmark whose timed function raised is left out.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import subprocess
from typing import Any, Optional

from ._benchmark_fixture import BenchmarkEntry
from ._benchmark_stats import BenchmarkStats
from ._session import Session, TestRecord

__all__ = ["SCHEMA_VERSION", "build", "write"]

#: The pytest-benchmark release whose report layout this follows (and whose reader the tests load it with).
SCHEMA_VERSION = "5.3.1"


def _machine_info() -> dict:
    from .._system import metadata

    return {"node": platform.node(), "processor": platform.processor(), "machine": platform.machine(),
            "python_compiler": platform.python_compiler(),
            "python_implementation": platform.python_implementation(),
            "python_implementation_version": platform.python_version(), "python_version": platform.python_version(),
            "python_build": list(platform.python_build()), "release": platform.release(),
            "system": platform.system(), "cpu": metadata.cpu()}


def _git(directory: str, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", directory, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _commit_info(rootdir: str) -> dict:
    """The revision of the tested project (the pytest rootdir's checkout), as pytest-benchmark describes it."""
    commit = _git(rootdir, "rev-parse", "HEAD")
    out = {"id": commit or "unversioned", "time": None, "author_time": None, "dirty": False,
           "project": os.path.basename(os.path.abspath(rootdir)), "branch": None}
    if commit:
        out.update(time=_git(rootdir, "show", "-s", "--format=%cI"),
                   author_time=_git(rootdir, "show", "-s", "--format=%aI"),
                   dirty=bool(_git(rootdir, "status", "--porcelain", "--untracked-files=no")),
                   branch=_git(rootdir, "rev-parse", "--abbrev-ref", "HEAD"))
    return out


def _benchctl_figures(record: TestRecord) -> dict:
    s = record.stats
    return {"median_ci95": list(s.ci95), "warmup_rounds": s.warmup, "calls_per_round": s.iterations,
            "flags": list(s.flags), "advice": list(s.advice), "isolated": record.isolated,
            "process_medians": [p.median for p in s.processes] or None,
            "readback": [r.get("readback") or {} for r in record.runs], "outcome": _notes(record).get("outcome")}


def _notes(record: TestRecord) -> dict:
    return (record.runs[0].get("notes") or {}) if record.runs else {}


def _benchmark(entry: BenchmarkEntry, record: TestRecord) -> dict:
    return {"group": entry.group, "name": entry.name, "fullname": entry.fullname, "params": entry.params,
            "param": entry.param, "extra_info": _notes(record).get("extra_info") or {}, "options": entry.options,
            "stats": BenchmarkStats.of_record(record).as_dict(include_data=True),
            "benchctl": _benchctl_figures(record)}


def build(session: Session, entries: dict[str, BenchmarkEntry], rootdir: str) -> dict:
    """The report of the tests that measured through ``benchmark``, in the order they ran."""
    from .. import clock
    from .._version import __version__

    benchmarks = [_benchmark(entries[nodeid], record) for nodeid, record in session.records.items()
                  if nodeid in entries and record.stats is not None and not entries[nodeid].has_error]
    return {"machine_info": _machine_info(), "commit_info": _commit_info(rootdir), "benchmarks": benchmarks,
            "datetime": _dt.datetime.now(_dt.timezone.utc).isoformat(), "version": SCHEMA_VERSION,
            "benchctl": {"version": __version__, "clock": clock.info(), "options": dataclasses.asdict(session.options),
                         "results_file": session.options.json_path}}


def _jsonable(value: Any) -> Any:
    """Test parameters that are not JSON values are written as their repr (as pytest-benchmark does)."""
    return repr(value)


def write(report: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=4, default=_jsonable)
        f.write("\n")
