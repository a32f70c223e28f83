"""``python -m benchctl compare``: results files side by side.

Two files: the same cells in both (e.g. two machines), medians and the ratio
B/A with its CI, as ever. Several files or a folder (a Slurm run's, with its
hosts manifest), or ``--machines``: the cross-machine view of
:mod:`benchctl.results.machines`.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import ExitCode

__all__ = ["NAME", "HELP", "configure", "run"]

NAME = "compare"
HELP = ("compare results files: two cell by cell (ratio B/A with its 95% CI); several, or a folder of "
        "per-host files, machine by machine (which machines show each finding, and what differs between them)")

_EPILOG = """\
examples:
  python -m benchctl compare A.json B.json            each cell's medians and B/A [95% CI]
  python -m benchctl compare results/slurm-run/       every host of a Slurm run (missing hosts listed)
  python -m benchctl compare amd.json intel.json arm.json
  python -m benchctl compare --machines A.json B.json the machine view for two files
exit status: 0; 1 when the machine view lists a host without complete results; 2 on unreadable input
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="results files (A.json B.json ...) or folders of them")
    parser.add_argument("--machines", action="store_true",
                        help="the machine view even for two files (it is the view for a folder or 3+ files)")


def run(args: argparse.Namespace) -> int:
    from ..results import document, machines, report

    paths = args.paths
    by_machine = args.machines or len(paths) != 2 or any(os.path.isdir(p) for p in paths)
    if by_machine and len(paths) == 1 and not os.path.isdir(paths[0]):
        print(f"compare: one file ({paths[0]}) has nothing to compare with: give two or more files or a folder",
              file=sys.stderr)
        return ExitCode.USER_ERROR
    if not by_machine:
        a, b = document.load(paths[0]), document.load(paths[1])
        print(report.format_comparison(a, b, a_name=paths[0], b_name=paths[1]))
        return ExitCode.OK
    found = machines.load(paths)
    print(machines.format_machines(found))
    return ExitCode.OK if all(m.complete for m in found) else ExitCode.FAILED
