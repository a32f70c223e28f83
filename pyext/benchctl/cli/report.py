"""``python -m benchctl report FILE``: tables, verdict, figure and pyperf export of a results file."""

from __future__ import annotations

import argparse
import os

__all__ = ["NAME", "HELP", "configure", "run"]

NAME = "report"
HELP = "print a results file's tables and verdict; --plot a figure; --export pyperf"

EXPORT_FORMATS = ("pyperf",)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="results JSON written by `benchctl run --json`")
    parser.add_argument("--baseline", metavar="NAME=V,...", help="cell the ratios are against (default: first values)")
    parser.add_argument("--focus", metavar="NAME",
                        help="judge the file again by the generic rules, for this matrix key's contrast")
    parser.add_argument("--plot", metavar="PNG", help="write per-iteration times and box plots per cell")
    parser.add_argument("--export", choices=EXPORT_FORMATS, help="also write the results in another format")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where --export writes (default: FILE with .pyperf.json)")


def run(args: argparse.Namespace) -> int:
    from ..results import analysis, document, plot, pyperf_export
    from ..studies import catalog, pipeline
    from .render import render

    doc = document.load(args.file)
    if args.focus:
        analysis.analyse(doc, focus=args.focus)
    elif doc["version"] < document.VERSION:
        print(f"{args.file}: results version {doc['version']}, answered again by this version's rules "
              "(the process as the unit, one rule engine)")
        if doc["version"] < 2:
            analysis.analyse(doc, focus=analysis.stored_focus(doc))
        else:
            analysis.analyse(doc, judge=lambda d: pipeline.reanswer(d, catalog.rules_of))
    print(render(doc, (doc.get("evidence") or {}).get("target"), baseline=args.baseline))
    if args.plot:
        plot.plot(doc, args.plot)
        print(f"plot written to {args.plot}")
    if args.export == "pyperf":
        out = args.output or os.path.splitext(args.file)[0] + ".pyperf.json"
        pyperf_export.export(doc, out)
        print(f"pyperf file written to {out} (python -m pyperf stats {out})")
    return 0
