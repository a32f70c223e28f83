"""``python -m benchctl compare``: results files side by side.

Two files: the same cells in both (e.g. two machines), medians and the ratio
B/A with its CI, as ever. Several files or a folder (a Slurm run's, with its
hosts manifest), or ``--machines``: the cross-machine view of
:mod:`benchctl._results.machines`.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from ..errors import ExitCode, UserError
from .._results.findings import Finding
from .._results.queries import CellPair
from . import preflight

__all__ = ["NAME", "HELP", "SUMMARY_SCHEMA", "CellsSummary", "MachineSummary", "MachinesSummary", "configure", "run"]

#: The ``schema`` of what ``compare --json`` writes.
SUMMARY_SCHEMA = "benchctl.compare"

NAME = "compare"
HELP = ("compare results files: two cell by cell (ratio B/A with its 95% CI); several, or a folder of "
        "per-host files, machine by machine (which machines show each finding, and what differs between them)")

_EPILOG = """\
examples:
  python -m benchctl compare A.json B.json            each cell's medians and B/A [95% CI]
  python -m benchctl compare results/slurm-run/       every host of a Slurm run (missing hosts listed)
  python -m benchctl compare amd.json intel.json arm.json
  python -m benchctl compare --machines A.json B.json the machine view for two files
"""


@dataclass(frozen=True)
class CellsSummary:
    """What ``compare --json`` writes for two files: each (phase, cell) both measured, B against A."""

    a: str
    b: str
    pairs: list[CellPair]

    def to_json(self) -> dict:
        return {"schema": SUMMARY_SCHEMA, "view": "cells", "a": self.a, "b": self.b,
                "pairs": [p.to_json() for p in self.pairs]}


@dataclass(frozen=True)
class MachineSummary:
    """One machine of the machine view: where its results are, whether they are complete, what differs on it
    (:func:`benchctl._results.machines.facts`) and its findings."""

    label: str
    path: str | None
    complete: bool
    problem: str | None
    facts: dict[str, str]
    findings: list[Finding]

    def to_json(self) -> dict:
        return {"label": self.label, "path": self.path, "complete": self.complete, "problem": self.problem,
                "facts": self.facts, "findings": [f.to_json() for f in self.findings]}


@dataclass(frozen=True)
class MachinesSummary:
    """What ``compare --json`` writes for the machine view: every machine."""

    machines: list[MachineSummary]

    def to_json(self) -> dict:
        return {"schema": SUMMARY_SCHEMA, "view": "machines", "machines": [m.to_json() for m in self.machines]}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="results files (A.json B.json ...) or folders of them")
    preflight.add_file_option(parser, preflight.FileOption("paths", "PATH", preflight.Role.INPUT))
    parser.add_argument("--machines", action="store_true",
                        help="the machine view even for two files (it is the view for a folder or 3+ files)")
    preflight.add_summary_json(parser, "each compared cell (two files) or each machine (the machine view)")


def run(args: argparse.Namespace) -> int:
    from .._results import document, machines, queries, report

    say = (lambda _: None) if preflight.writes_stdout(args) else print  # stdout is the JSON
    paths = args.paths
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:  # said first: a missing file is not "one file with nothing to compare with"
        raise UserError(f"no such file or folder: {', '.join(missing)}")
    by_machine = args.machines or len(paths) != 2 or any(os.path.isdir(p) for p in paths)
    if by_machine and len(paths) == 1 and not os.path.isdir(paths[0]):
        print(f"compare: one file ({paths[0]}) has nothing to compare with: give two or more files or a folder",
              file=sys.stderr)
        return ExitCode.USER_ERROR
    if not by_machine:
        a, b = document.load(paths[0]), document.load(paths[1])
        pairs = queries.cell_pairs(a, b)
        # Two files that each measured cells, none of them the other's: the wrong files (a file with no
        # successful cell, as a test session that timed nothing leaves, is compared as it is: with nothing).
        if not pairs and a["summary"] and b["summary"]:
            raise UserError(f"{paths[0]} and {paths[1]} have no (phase, cell) in common, so nothing to compare: "
                            f"{_measured(paths[0], a)}; {_measured(paths[1], b)}")
        say(report.format_comparison(a, b, a_name=paths[0], b_name=paths[1]))
        if args.json_path:
            preflight.write_json(args.json_path, CellsSummary(paths[0], paths[1], pairs).to_json())
        return ExitCode.OK
    found = machines.load(paths)
    say(machines.format_machines(found))
    if args.json_path:
        preflight.write_json(args.json_path, MachinesSummary([
            MachineSummary(m.label, m.path, m.complete, m.problem, machines.facts(m.doc) if m.doc else {},
                           [Finding.from_json(f) for f in (m.doc or {}).get("verdict") or []])
            for m in found]).to_json())
    return ExitCode.OK if all(m.complete for m in found) else ExitCode.FAILED


def _measured(path: str, doc: dict) -> str:
    """``"A.json measured workload sleep, phase sleep: ms=1, ms=2"``: what a file's summary holds."""
    from ..settings import cell_label

    by_phase: dict[str, list[str]] = {}
    for entry in doc["summary"]:
        if entry.get("arm") is None:
            by_phase.setdefault(entry["phase"], []).append(cell_label(entry["cell"]) or "(no setting)")
    held = "; ".join(f"phase {phase}: {', '.join(cells)}" for phase, cells in by_phase.items())
    return f"{path} measured workload {doc['workload']}" + (f", {held}" if held else ", no successful cell")
