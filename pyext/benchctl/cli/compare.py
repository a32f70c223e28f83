"""``python -m benchctl compare A.json B.json``: the same cells in two results files (e.g. two machines)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["NAME", "HELP", "configure", "run"]

NAME = "compare"
HELP = "compare two results files cell by cell: medians and ratio B/A with its 95% CI"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A.json", help="reference results file")
    parser.add_argument("b", metavar="B.json", help="results file compared against A")


def run(args: argparse.Namespace) -> int:
    from ..results import document, report

    try:
        a, b = document.load(args.a), document.load(args.b)
        print(report.format_comparison(a, b, a_name=args.a, b_name=args.b))
    except (document.ResultsError, ValueError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    return 0
