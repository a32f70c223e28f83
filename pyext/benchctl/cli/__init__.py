"""``python -m benchctl``: one subcommand per module of this package.

Each command module defines ``NAME``, ``HELP``, ``configure(parser)`` and
``run(args) -> int``, and imports heavy dependencies (torch) inside ``run``
so that ``--help`` stays fast. The top layer: it may import every other one.

Commands do not catch errors to choose an exit status: :func:`main` maps what
escapes a command through :func:`exit_status`, in one place (the statuses are
:class:`benchctl.errors.ExitCode`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from ..errors import ExitCode, exit_code_of

__all__ = ["COMMAND_MODULES", "exit_status", "main"]

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


def exit_status(command: str, error: BaseException) -> ExitCode:
    """Say ``error`` on stderr as the command ``command`` ends, and return its exit status.

    A benchctl user or environment error is its message (status 2 or 3); Ctrl-C
    is 130; anything else is a bug: its traceback, and a status that a Slurm
    controller retries (a bug's ValueError must not read as "refused").
    """
    code = exit_code_of(error)
    if code is ExitCode.INTERRUPTED:
        print("interrupted", file=sys.stderr)
    elif code is ExitCode.INTERNAL_ERROR:
        traceback.print_exception(error)
        print(f"{command}: internal error (exit status {int(code)}): the traceback above is a bug in benchctl "
              "or in what it called", file=sys.stderr)
    else:
        print(f"{command}: {error}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        # Building the parser imports every command (torch among them): a
        # Ctrl-C there is an interruption like any other, not a traceback.
        parser = _build_parser()
    except KeyboardInterrupt as error:
        return int(exit_status("benchctl", error))
    args = parser.parse_args(argv)
    args.argv = argv  # the command line as given: --executor slurm runs it again on each host
    try:
        return int(args._run(args) or ExitCode.OK)
    except (Exception, KeyboardInterrupt) as error:
        return int(exit_status(args.command, error))
