"""The command-line options every command that runs a matrix shares: how many processes, how long, the control;
and what every command's help ends with: its exit statuses."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap

from .. import _validate
from ..errors import ExitCode, UserError
from .._run import rounds

__all__ = ["DURATION_UNITS", "repeat_type", "duration", "exit_statuses", "add_exit_statuses", "add_matrix_arguments",
           "add_paired_argument", "add_fork_argument", "add_answer_argument", "check_focus", "warn_matrix",
           "warn_missing_phases"]

#: The units a duration (``--budget``, ``--timeout``) may be written in, and their seconds; none: seconds.
DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"\s*(\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)\s*([a-z]*)\s*", re.IGNORECASE)
_HELP_WIDTH = 100


def repeat_type(text: str) -> int | str:
    """argparse type of ``--repeat``: a positive count or ``auto``."""
    try:
        return rounds.check_repeat(text if text.strip().lower() == rounds.AUTO else int(text))
    except (ValueError, _validate.ArgumentError):
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}") from None


def duration(text: str) -> float:
    """argparse type of a duration: seconds > 0, as a number (``30``) or with a unit (``30s``, ``2min``, ``1.5h``,
    ``500ms``)."""
    match = _DURATION.fullmatch(text)
    unit = match.group(2).lower() if match else None
    if unit is not None and (unit or "s") in DURATION_UNITS:
        try:
            return _validate.seconds(repr(text), float(match.group(1)) * DURATION_UNITS[unit or "s"])
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    raise argparse.ArgumentTypeError(f"{text!r} is not a duration: write seconds (30) or a number with a unit, one of "
                                     f"{', '.join(DURATION_UNITS)} (30s, 2min, 1.5h, 500ms)")


def exit_statuses() -> str:
    """The exit statuses of every command, each with what it means (:class:`benchctl.errors.ExitCode`)."""
    return "exit status:\n" + "\n".join(
        textwrap.fill(code.meaning, width=_HELP_WIDTH, initial_indent=f"  {int(code):<5}", subsequent_indent=" " * 7)
        for code in ExitCode)


def add_exit_statuses(parser: argparse.ArgumentParser) -> None:
    """End ``parser``'s help with :func:`exit_statuses` (after its own epilog, whose lines are kept as written)."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "\n\n".join(part for part in (parser.epilog, exit_statuses()) if part)


def add_matrix_arguments(parser: argparse.ArgumentParser, repeat: int | str, budget_s: float | None) -> None:
    """``--repeat``, ``--budget``, ``--no-control`` and ``--unpaired``, with this command's defaults."""
    parser.add_argument(
        "--repeat", type=repeat_type, default=repeat, metavar="R|auto",
        help=f"fresh processes per cell, interleaved in rounds; 'auto': {rounds.AUTO_START} per cell, then more "
             f"rounds for the cells whose comparisons are still unresolved, until each is resolved, a cell has "
             f"{rounds.AUTO_MAX_PROCESSES} or the budget runs out (default {repeat})")
    parser.add_argument(
        "--budget", type=duration, default=budget_s, metavar="DURATION",
        help="start no worker that is not expected to finish within this long of the start: seconds, or with a "
             f"unit ({', '.join(DURATION_UNITS)}: 30s, 2min, 1.5h)"
             + (f" (default {budget_s:.0f})" if budget_s else " (default: no limit)"))
    parser.add_argument(
        "--no-control", dest="control", action="store_false",
        help="do not run the baseline cell a second time as an A/A control (the control measures how far "
             "identical processes differ in this run; without it only the 5%% floor guards the verdict)")
    add_paired_argument(parser)


def add_paired_argument(parser: argparse.ArgumentParser) -> None:
    """``--unpaired``: no cell timed paired with the baseline (:mod:`benchctl._run.paired`)."""
    parser.add_argument(
        "--unpaired", dest="paired", action="store_false",
        help="time every cell in fresh processes of its own; by default a cell that differs from the baseline "
             "only in settings a running process can switch (ftz, threads, pin, inference, ...) is timed in "
             "the baseline's processes, switched between blocks of iterations, and compared by the ratio "
             "taken inside each process, which the machine's state (a neighbour, a VM's speed) cancels; one "
             "such process a round also times the paired A/A control, as a third arm")


def add_fork_argument(parser: argparse.ArgumentParser) -> None:
    """``--no-fork``: start every worker's interpreter afresh (commands that run built-in torch workloads)."""
    parser.add_argument(
        "--no-fork", dest="fork", action="store_false",
        help="start every worker's interpreter afresh; by default the workers of a workload that imports torch "
             "(the built-in and seed workloads) are forked from an interpreter that has imported it, one per "
             "worker environment, which saves each worker the import (2-4 s) and nothing else: every setting, "
             "allocator and environment still takes effect as in a fresh interpreter")


def add_answer_argument(parser: argparse.ArgumentParser) -> None:
    """``--verbose``: the answer's ruled-out causes each with its reason (commands that print an answer)."""
    from .._results.answer import VERBOSE_FLAG

    parser.add_argument(
        VERBOSE_FLAG, dest="verbose", action="store_true",
        help="say why each cause was ruled out or is not the cause, a line each (by default they are named on one "
             "line; the results file keeps every reason either way)")


def check_focus(focus: str | None, matrix: dict, of: str = "") -> None:
    """``--focus`` names a key of ``matrix`` (the matrix ``of`` a file, when said); else UserError listing them."""
    if focus is not None and focus not in matrix:
        raise UserError(f"--focus {focus}: not a matrix key{of}; "
                        + (f"the keys: {', '.join(matrix)}" if matrix else "the matrix is empty (no --set)"))


def warn_matrix(matrix: dict[str, list]) -> None:
    """Say on stderr what a (canonical) matrix asks that is legal but rarely meant: more threads than this
    process can run at once (measured as asked: oversubscription is a cause benchctl looks for)."""
    from .._causes.cpu_fit.control import quota_cpus, usable_cpus

    cpus = usable_cpus(quota_cpus())
    over = [n for n in matrix.get("threads", []) if isinstance(n, int) and n > cpus]
    if over:
        print(f"warning: threads={','.join(map(str, over))}: more threads than the {cpus} CPUs this process can use "
              f"at once; they will take turns (measured as asked)", file=sys.stderr)


def warn_missing_phases(doc: dict) -> None:
    """After a run: say on stderr each ``only=PHASE`` that names no phase a worker timed (checked before the run
    only for a workload that says its phases)."""
    from .._results import queries

    timed = queries.phases(doc)
    missing = [phase for phase in doc["matrix"].get("only", []) if phase != "all" and phase not in timed]
    if missing and timed:
        print(f"warning: only={','.join(missing)}: no worker timed a phase of that name; the phases timed: "
              f"{', '.join(timed)}", file=sys.stderr)
