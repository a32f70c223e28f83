"""What both seed scripts (``bench/resnet_order.py``, ``bench/zero_weights.py``) share: their options,
the Slurm hand-off, and running their study with the report and the answer printed.

The scripts own their question (the default matrix, the sizes, the census of the model's values);
the study itself is :mod:`benchctl._studies.pipeline`'s, with the seed's rules
(:mod:`benchctl._studies.seed_rules`).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
from typing import Callable

from .. import settings
from ..errors import UnavailableError
from .._run import rounds, slurm
from . import preflight
from .options import (add_answer_argument, add_exit_statuses, add_fork_argument, add_matrix_arguments, warn_matrix,
                      warn_missing_phases)

__all__ = ["RESULTS_DIR", "apply_sets", "add_output_arguments", "parse_seed_arguments", "on_slurm", "run_seed",
           "script_exit"]

RESULTS_DIR = "results"


def apply_sets(matrix: dict[str, list], sets: list[str]) -> dict[str, list]:
    """``--set NAME=V1,V2`` items over a default matrix: a new NAME adds an axis,
    an existing one is replaced (so ``--set alloc=retain`` narrows it)."""
    out = {k: list(v) for k, v in matrix.items()}
    seen = set()
    for item in sets:
        key, values = settings.parse_assignment(item)
        if key in seen:
            raise settings.SettingError(f"--set {key}=... given twice; list all its values in one --set")
        seen.add(key)
        out[key] = values
    return out


def add_output_arguments(parser: argparse.ArgumentParser, workload: str, budget_s: float) -> None:
    """The options both seed scripts share: processes, budget and control, where results go,
    resuming or replacing them, the progress bar, the penalty profile."""
    add_matrix_arguments(parser, repeat=rounds.AUTO, budget_s=budget_s)
    add_fork_argument(parser)
    add_answer_argument(parser)
    slurm.add_executor_arguments(parser)
    preflight.add_results_file(parser, f"results file (default {RESULTS_DIR}/{workload}-<time>.json)",
                               resume_help="continue the interrupted --json FILE (same arguments)")
    preflight.add_plot(parser, "write per-iteration times and box plots per cell")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--skip-penalty", action="store_true",
                        help="do not measure the CPU's penalty profile (faster; the answer then lacks that evidence)")


def parse_seed_arguments(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse, with the exit statuses in the help, and check the files named as every ``python -m benchctl``
    command does (:func:`benchctl._cli.preflight.check`: nothing measured replaced unasked)."""
    add_exit_statuses(parser)
    opts = parser.parse_args(argv)
    opts.argv = list(sys.argv[1:] if argv is None else argv)
    preflight.check(opts)
    return opts


def on_slurm(parser: argparse.ArgumentParser, opts: argparse.Namespace, script: str) -> int | None:
    """With ``--executor slurm``, run this script on every host and return its exit status; else None."""
    try:
        if not slurm.use_slurm(opts):
            return None
        return slurm.run_with_executor(opts, argv=opts.argv, program=[sys.executable, "-u", os.path.abspath(script)])
    except slurm.ExecutorError as e:
        if isinstance(e, UnavailableError):  # no submitit or no sbatch here: not a usage error
            raise
        parser.error(str(e))


def _default_json_path(workload: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join(RESULTS_DIR, f"{workload}-{stamp}.json")


def run_seed(opts: argparse.Namespace, workload: str, args: dict, matrix: dict[str, list], focus: str,
             census: Callable[[dict[str, list]], dict]) -> dict:
    """Run the seed's study (``census(matrix)`` takes the values' census in this process) and print the
    report and the answer; returns the results document."""
    from .._run import runner
    from .._studies import catalog, pipeline
    from .._studies.seed_rules import PENALTY_OPS
    from .render import render

    warn_matrix(runner.plan_matrix(workload, args, matrix).matrix)
    json_path = opts.json_path or _default_json_path(workload)
    study = pipeline.Study(
        workload, workload, args, catalog.rules_of(workload), matrix=matrix, focus=focus,
        census=lambda: census(matrix), penalty_ops=PENALTY_OPS[workload], measure_penalty=not opts.skip_penalty,
        fixed_keys=tuple(item.partition("=")[0].strip() for item in opts.sets), repeat=opts.repeat,
        budget_s=opts.budget, control=opts.control, json_path=json_path, resume=opts.resume, fork=opts.fork,
        paired=opts.paired,
        progress=not opts.no_progress)
    doc = pipeline.run_study(study, say=lambda line: print(line, flush=True))
    warn_missing_phases(doc)
    if opts.plot:
        from .._results import plot

        plot.plot(doc, opts.plot)
        print(f"plot: {opts.plot}")
    print(render(doc, closing=pipeline.took_text(doc, json_path), verbose=opts.verbose), flush=True)
    return doc


def script_exit(main: Callable[[], int], script: str) -> int:
    """``main()``'s exit status, with what escapes it ended as every ``python -m benchctl`` command ends
    (:func:`benchctl._cli.exit_status`: a user error 2, an unavailable machine or package 3, a bug 70)."""
    from . import exit_status, interrupts

    try:
        interrupts.import_torch()
        return int(main())
    except (Exception, KeyboardInterrupt) as error:
        return int(exit_status(os.path.basename(script), error))
