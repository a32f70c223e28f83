"""``python -m benchctl``: one subcommand per module of this package.

Each command module defines ``NAME``, ``HELP``, ``configure(parser)`` and
``run(args) -> int``, and imports heavy dependencies (torch) inside ``run``
so that ``--help`` stays fast; one that needs torch says ``NEEDS_TORCH = True``,
and :func:`main` imports it first with Ctrl-C held (:mod:`.interrupts`). The top layer: it may import every other one.

Commands do not catch errors to choose an exit status: :func:`main` maps what
escapes a command through :func:`exit_status`, in one place (the statuses are
:class:`benchctl.errors.ExitCode`, listed at the end of every command's help),
and :func:`document_status` is the status of a command that ran or read a
results document. Before a command runs, :func:`benchctl._cli.preflight.check`
holds the files it names to their rules (nothing measured replaced unasked).
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import os
import sys
import traceback

from .._version import __version__
from ..errors import ExitCode, exit_code_of

__all__ = ["COMMAND_MODULES", "exit_status", "document_status", "main", "entry_point"]

# Listed explicitly (no plugin discovery): the order is the order in --help.
COMMAND_MODULES = (
    "benchctl._cli.clock_info",
    "benchctl._cli.doctor",
    "benchctl._cli.penalty",
    "benchctl._cli.run",
    "benchctl._cli.explain",
    "benchctl._cli.report",
    "benchctl._cli.compare",
)


def _build_parser() -> argparse.ArgumentParser:
    from .options import add_exit_statuses

    parser = argparse.ArgumentParser(
        prog="python -m benchctl",
        description="benchctl: make PyTorch timings true and explained.",
    )
    parser.add_argument("--version", action="version", version=f"benchctl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        # argparse %-formats help strings: a literal '%' (as in "95% CI") must be doubled.
        p = sub.add_parser(module.NAME, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.configure(p)
        add_exit_statuses(p)
        p.set_defaults(_run=module.run, _needs_torch=getattr(module, "NEEDS_TORCH", False))
    add_exit_statuses(parser)
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


def document_status(doc: dict) -> ExitCode:
    """The exit status of a command that ran or read the results document ``doc``: FAILED when a worker
    failed (so scripts notice; the file still holds everything), else OK."""
    from .._results import queries

    return ExitCode.FAILED if queries.failed_runs(doc) else ExitCode.OK


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
        from . import interrupts, preflight

        if args._needs_torch:
            interrupts.import_torch()
        preflight.check(args)
        return int(args._run(args) or ExitCode.OK)
    except BrokenPipeError:
        # Whoever read stdout stopped (| head): not the command's failure; nothing more can be said there.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OK)
    except (Exception, KeyboardInterrupt) as error:
        return int(exit_status(args.command, error))


def entry_point() -> None:
    """The command line's entry (``python -m benchctl``, the ``benchctl`` script): :func:`main`, then exit with its
    status. A command that imported the user's code (explain, run) ends without the interpreter's teardown: the
    code's own finalisers, no part of what was measured, run there, and one can crash (torch's profiler started
    at import and never stopped ends in SIGSEGV at exit), which would turn an answer given into a crash."""
    from .._workloads import user

    # A native crash (a user's file crashing at import, a library's bug) then prints where it happened, the user's
    # file and line among the frames, before the process dies of its signal; without it, nothing at all.
    try:
        faulthandler.enable()
    except (RuntimeError, ValueError, OSError):  # no usable stderr: nothing could be said there anyway
        pass
    code = main()
    if user.imported_code():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed pipe: nothing more can be said there
                pass
        os._exit(code)
    sys.exit(code)
