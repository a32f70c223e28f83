"""``python -m benchctl report FILE``: tables, verdict, figure and pyperf export of a results file."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from ..errors import UserError, require_package
from .._results.findings import Finding
from . import document_status, preflight
from .options import add_answer_argument, check_focus

__all__ = ["NAME", "HELP", "SUMMARY_SCHEMA", "ReportSummary", "configure", "run"]

NAME = "report"
HELP = "print a results file's tables and verdict; --plot a figure; --export pyperf"

EXPORT_FORMATS = ("pyperf",)
#: The ``schema`` of what ``report --json`` writes.
SUMMARY_SCHEMA = "benchctl.report"
_OUTPUT = preflight.FileOption("output", "-o", preflight.Role.OUTPUT)


@dataclass(frozen=True)
class ReportSummary:
    """What ``report --json`` writes: the file's cells (its summary entries: medians and intervals over
    processes), the findings of its answer, and how many of its workers failed."""

    file: str
    workload: str
    matrix: dict
    cells: list[dict]
    findings: list[Finding]
    failed_workers: int

    @classmethod
    def of(cls, path: str, doc: dict) -> "ReportSummary":
        from .._results import queries

        return cls(path, doc["workload"], doc["matrix"], doc["summary"],
                   [Finding.from_json(f) for f in doc.get("verdict") or []], len(queries.failed_runs(doc)))

    def to_json(self) -> dict:
        return {"schema": SUMMARY_SCHEMA, "file": self.file, "workload": self.workload, "matrix": self.matrix,
                "cells": self.cells, "findings": [f.to_json() for f in self.findings],
                "failed_workers": self.failed_workers}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="results JSON written by `benchctl run --json`")
    preflight.add_file_option(parser, preflight.FileOption("file", "FILE", preflight.Role.INPUT))
    parser.add_argument("--baseline", metavar="NAME=V,...", help="cell the ratios are against (default: first values)")
    parser.add_argument("--focus", metavar="NAME",
                        help="judge the file again by the generic rules, for this matrix key's contrast")
    preflight.add_plot(parser, "write per-iteration times and box plots per cell")
    parser.add_argument("--export", choices=EXPORT_FORMATS, help="also write the results in another format")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where --export writes (default: FILE with .pyperf.json)")
    preflight.add_file_option(parser, _OUTPUT)
    preflight.add_summary_json(parser, "the cells, the findings and the failed workers")
    add_answer_argument(parser)


def run(args: argparse.Namespace) -> int:
    from .._results import analysis, document, plot, pyperf_export
    from .._studies import catalog, pipeline
    from .render import render

    out = _export_path(args)
    doc = document.load(args.file)
    check_focus(args.focus, doc["matrix"], of=f" of {args.file}")
    say = (lambda _: None) if preflight.writes_stdout(args) else print  # stdout is the JSON
    if args.focus:
        analysis.analyse(doc, focus=args.focus)
    elif doc["version"] < document.VERSION:
        say(f"{args.file}: results version {doc['version']}, answered again by this version's rules "
            "(the process as the unit, one rule engine)")
        if doc["version"] < 2:
            analysis.analyse(doc, focus=analysis.stored_focus(doc))
        else:
            analysis.analyse(doc, judge=lambda d: pipeline.reanswer(d, catalog.rules_of))
    say(render(doc, (doc.get("evidence") or {}).get("target"), baseline=args.baseline, verbose=args.verbose))
    if args.plot:
        plot.plot(doc, args.plot)
        say(f"plot written to {args.plot}")
    if out is not None:
        pyperf_export.export(doc, out)
        say(f"pyperf file written to {out} (python -m pyperf stats {out})")
    if args.json_path:
        preflight.write_json(args.json_path, ReportSummary.of(args.file, doc).to_json())
    return document_status(doc)


def _export_path(args: argparse.Namespace) -> str | None:
    """Where ``--export`` writes, checked before anything is read (pyperf installed, -o a file to write)."""
    if args.export is None:
        if args.output is not None:
            raise UserError(f"-o {args.output}: says where --export writes; give --export {'|'.join(EXPORT_FORMATS)}")
        return None
    require_package("pyperf", "pyperf", f"--export {args.export}", load=False)
    if args.output is not None:  # checked with the other files (benchctl._cli.preflight)
        return args.output
    out = os.path.splitext(args.file)[0] + ".pyperf.json"
    preflight.check_output(_OUTPUT, out)
    return out
