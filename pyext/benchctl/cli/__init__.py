"""``python -m benchctl``: one subcommand per module of this package.

Each command module defines ``NAME``, ``HELP``, ``configure(parser)`` and
``run(args) -> int``, and imports heavy dependencies (torch) inside ``run``
so that ``--help`` stays fast. The top layer: it may import every other one.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["COMMAND_MODULES", "main"]

# Listed explicitly (no plugin discovery): the order is the order in --help.
COMMAND_MODULES = (
    "benchctl.cli.clock_info",
    "benchctl.cli.doctor",
    "benchctl.cli.penalty",
    "benchctl.cli.run",
    "benchctl.cli.explain",
    "benchctl.cli.report",
    "benchctl.cli.compare",
)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchctl",
        description="benchctl: make PyTorch timings true and explained.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        # argparse %-formats help strings: a literal '%' (as in "95% CI") must be doubled.
        p = sub.add_parser(module.NAME, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.configure(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        # Building the parser imports every command (torch among them): a
        # Ctrl-C there is an interruption like any other, not a traceback.
        args = _build_parser().parse_args(argv)
        args.argv = argv  # the command line as given: --executor slurm runs it again on each host
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
