"""``python -m benchctl run WORKLOAD``: a settings matrix, each cell in a fresh process."""

from __future__ import annotations

import argparse
import sys
import textwrap

from ..errors import ExitCode, UserError
from .._run import rounds, slurm
from .._workloads import TARGET_FORMS
from . import document_status, preflight
from .options import (add_answer_argument, add_fork_argument, add_matrix_arguments, check_focus, duration, warn_matrix,
                      warn_missing_phases)

__all__ = ["NAME", "HELP", "settings_listing", "configure", "run", "assignments"]

NAME = "run"
NEEDS_TORCH = True  # imported first, with Ctrl-C held (.interrupts)
HELP = "run a workload over a settings matrix, each cell and repetition in a fresh worker process"

_EPILOG_WIDTH = 100

_EPILOG = """\
settings (--set NAME=V1,V2,...; brackets group a list value):
{settings}
any other NAME is a workload parameter: --set init=normal,zero
every run also repeats the baseline cell (the first value of each --set) as the
second arm of an A/A control, unless --no-control: how far two identical arms
differ is this run's own process-to-process noise, and no difference smaller
than that (or than 5%) is called.
example: python -m benchctl run matmul --set alloc=default,retain --set n=64,128 --repeat auto --json out.json
"""


def settings_listing() -> str:
    """Every setting with its values and what it does, from its own ``help`` (the one place it is said)."""
    from ..settings import SETTINGS

    indent = 2 + max(map(len, SETTINGS)) + 2
    return "\n".join(textwrap.fill(setting.help, width=_EPILOG_WIDTH, initial_indent=f"  {name:<{indent - 2}}",
                                    subsequent_indent=" " * indent, break_on_hyphens=False)
                      for name, setting in SETTINGS.items())


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG.format(settings=settings_listing())
    parser.add_argument("workload", nargs="?", metavar="WORKLOAD",
                        help=f"a registered workload's name (--list shows them), or your own code: {TARGET_FORMS}")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V1,V2",
                        help="a matrix axis: a setting or a workload parameter and its values (repeatable)")
    parser.add_argument("--arg", dest="args", action="append", default=[], metavar="NAME=VALUE",
                        help="a fixed workload parameter (repeatable)")
    add_matrix_arguments(parser, repeat=1, budget_s=None)
    parser.add_argument(
        "--first-rounds", type=int, default=None, metavar="N",
        help=f"with --repeat auto: the rounds of every cell before the first judgement (default "
             f"{rounds.AUTO_START}; a resumed file keeps its own). Where every cell is timed paired and the workers "
             f"are sized (--arg) so that these rounds fill --budget, {rounds.PAIRED_AUTO_START} give a narrower "
             f"interval in the same time than {rounds.AUTO_START} longer workers, as explain chooses: a paired "
             f"ratio moves between processes more than with a worker's length")
    add_fork_argument(parser)
    slurm.add_executor_arguments(parser)
    parser.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                        help="shuffle the cell order within each round with this seed")
    preflight.add_results_file(
        parser, "results file, rewritten atomically after every worker",
        resume_help="continue an interrupted --json FILE (its repetitions and shuffle seed are kept; a larger --repeat "
                    "adds rounds)")
    parser.add_argument("--timeout", type=duration, default=None, metavar="DURATION",
                        help="kill a worker after this long (seconds, or 30s, 2min, ...)")
    parser.add_argument("--focus", metavar="NAME", help="matrix key whose contrast the verdict explains")
    parser.add_argument("--baseline", metavar="NAME=V,...", help="cell the report's ratios are against")
    preflight.add_plot(parser, "also write a figure of per-iteration times and box plots per cell")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_answer_argument(parser)
    parser.add_argument("--list", action="store_true", help="list the registered workloads and exit")


def assignments(items: list[str], multi: bool) -> dict:
    from ..settings import SettingError, parse_assignment

    out: dict = {}
    for item in items:
        key, values = parse_assignment(item)
        if key in out:
            raise SettingError(f"{key!r} given twice")
        if not multi:
            if len(values) != 1:
                raise SettingError(f"--arg {item!r}: one value only (use --set for several)")
            out[key] = values[0]
        else:
            out[key] = values
    return out


def run(args: argparse.Namespace) -> int:
    from .. import _workloads as workloads
    from .._results import plot
    from .render import render
    from .._run import runner

    if args.list:
        for name in workloads.names():
            wl = workloads.get(name)
            print(f"{name:16s} {wl.help}\n{'':16s} params: {wl.params}")
        return 0
    if not args.workload:
        print("run: name a workload (python -m benchctl run --list)", file=sys.stderr)
        return ExitCode.USER_ERROR
    matrix = assignments(args.sets, multi=True)
    fixed = assignments(args.args, multi=False)
    both = [key for key in matrix if key in fixed]
    if both:
        raise UserError(f"{', '.join(both)}: both a matrix axis (--set) and a fixed parameter (--arg): give each "
                        f"once, in one of them")
    if args.first_rounds is not None and args.repeat != rounds.AUTO:
        raise UserError(f"--first-rounds {args.first_rounds}: only with --repeat auto (its rounds before the "
                        f"first judgement); --repeat {args.repeat} runs that many rounds")
    if args.first_rounds is not None:
        rounds.check_first_rounds(args.first_rounds, "--first-rounds")  # a bad count fails here, not on every host
    # A bad target or matrix fails here, before any worker (and not on every host).
    plan = runner.plan_matrix(args.workload, fixed, matrix, paired=args.paired)
    check_focus(args.focus, plan.matrix)
    warn_matrix(plan.matrix)
    if slurm.use_slurm(args):
        return slurm.run_with_executor(args, argv=args.argv)
    if args.json_path is None:
        print("note: results are not saved (no --json FILE)", file=sys.stderr)
    try:
        doc = runner.run_matrix(args.workload, fixed, matrix, repeat=args.repeat, json_path=args.json_path,
                                resume=args.resume, shuffle_seed=args.shuffle,
                                progress=not args.no_progress, worker_timeout_s=args.timeout,
                                focus=args.focus, control=args.control, budget_s=args.budget, fork=args.fork,
                                paired=args.paired, first_rounds=args.first_rounds)
    except KeyboardInterrupt:
        if args.json_path:
            print(f"interrupted: finished cells are in {args.json_path}; continue with --resume",
                  file=sys.stderr)
        raise
    warn_missing_phases(doc)
    print(render(doc, baseline=args.baseline, verbose=args.verbose))
    if args.plot:
        plot.plot(doc, args.plot)
        print(f"plot written to {args.plot}")
    return document_status(doc)
