"""The command-line options every command that runs a matrix shares: how many processes, how long, the control."""

from __future__ import annotations

import argparse

from .. import _validate
from ..run import rounds

__all__ = ["repeat_type", "add_matrix_arguments", "add_fork_argument"]


def repeat_type(text: str) -> int | str:
    """argparse type of ``--repeat``: a positive count or ``auto``."""
    try:
        return rounds.check_repeat(text if text.strip().lower() == rounds.AUTO else int(text))
    except (ValueError, _validate.ArgumentError):
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}") from None


def _seconds(text: str) -> float:
    try:
        return _validate.seconds("--budget", float(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_matrix_arguments(parser: argparse.ArgumentParser, repeat: int | str, budget_s: float | None) -> None:
    """``--repeat``, ``--budget`` and ``--no-control``, with this command's defaults."""
    parser.add_argument(
        "--repeat", type=repeat_type, default=repeat, metavar="R|auto",
        help=f"fresh processes per cell, interleaved in rounds; 'auto': {rounds.AUTO_START} per cell, then more "
             f"rounds for the cells whose comparisons are still unresolved, until each is resolved, a cell has "
             f"{rounds.AUTO_MAX_PROCESSES} or the budget runs out (default {repeat})")
    parser.add_argument(
        "--budget", type=_seconds, default=budget_s, metavar="SECONDS",
        help="start no worker that is not expected to finish within this many seconds of the start"
             + (f" (default {budget_s:.0f})" if budget_s else " (default: no limit)"))
    parser.add_argument(
        "--no-control", dest="control", action="store_false",
        help="do not run the baseline cell a second time as an A/A control (the control measures how far "
             "identical processes differ in this run; without it only the 5%% floor guards the verdict)")


def add_fork_argument(parser: argparse.ArgumentParser) -> None:
    """``--no-fork``: start every worker's interpreter afresh (commands that run built-in torch workloads)."""
    parser.add_argument(
        "--no-fork", dest="fork", action="store_false",
        help="start every worker's interpreter afresh; by default the workers of a workload that imports torch "
             "(the built-in and seed workloads) are forked from an interpreter that has imported it, one per "
             "worker environment, which saves each worker the import (2-4 s) and nothing else: every setting, "
             "allocator and environment still takes effect as in a fresh interpreter")
