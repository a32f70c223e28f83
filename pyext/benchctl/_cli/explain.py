"""``python -m benchctl explain TARGET``: why your own code takes the time it takes."""

from __future__ import annotations

import argparse
import textwrap

from ..errors import ExitCode
from .._run import slurm
from .._workloads import TARGET_FORMS
from . import preflight
from .options import add_answer_argument, add_paired_argument, duration

__all__ = ["NAME", "HELP", "configure", "run"]

NAME = "explain"
NEEDS_TORCH = True  # imported first, with Ctrl-C held (.interrupts)
HELP = "run your code under every setting that could explain its time, and say which does, with evidence"

_EPILOG = """\
TARGET is path/to/file.py:name or package.module:name, one of:
  a function decorated @benchctl.workload(params={...}), called fn(rec, **params), that times its own
    regions with `with rec.iteration("phase"):` (and may skip a phase when not rec.runs("phase"));
  an object with setup() and run(state): setup once, untimed; each run(state) is one iteration;
  a callable taking no arguments: each call is one iteration.
{causes}
A cause that cheap evidence rules out (a probe worker, the penalty profile) is said so and not run.
example: python -m benchctl explain my_model.py:inference --budget 180 --json explain.json
"""
_WIDTH = 100


def causes_text() -> str:
    """Every cause explain judges, in the answer's order, each with its probe (or "evidence only"), from the
    registry: the built-in causes and those of installed packages."""
    from .._cause import probe_text
    from .._studies.causes import CAUSES

    items = [f"{cause.name} ({'; '.join(map(probe_text, probes)) or cause.probe_words or 'evidence only'})"
             for cause in CAUSES for probes in [cause.probes(None)]]
    return textwrap.fill(f"causes judged, each with its probe (what each one is: docs/causes.md): {', '.join(items)}.",
                         width=_WIDTH)


def configure(parser: argparse.ArgumentParser) -> None:
    from .._studies.explain import DEFAULT_BUDGET_S

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG.replace("{causes}", causes_text())
    parser.add_argument("target", metavar="TARGET", help=TARGET_FORMS)
    parser.add_argument("--phase", metavar="P", help="explain this phase only (default: every phase)")
    parser.add_argument("--budget", type=duration, default=DEFAULT_BUDGET_S, metavar="DURATION",
                        help=f"how long the whole explanation may take: seconds, or 30s, 5min, ... (default "
                             f"{DEFAULT_BUDGET_S:.0f} s)")
    preflight.add_results_file(parser, "also write the results document")
    parser.add_argument("--arg", dest="args", action="append", default=[], metavar="NAME=VALUE",
                        help="a workload parameter (repeatable), e.g. iterations=50")
    parser.add_argument("--no-control", dest="control", action="store_false",
                        help="no A/A control (only the 5%% floor then guards the verdict)")
    add_paired_argument(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_answer_argument(parser)
    slurm.add_executor_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from .._studies import explain, pipeline
    from .render import render
    from .run import assignments

    fixed = assignments(args.args, multi=False)
    # The target's own import errors are the user's (benchctl._workloads.TargetImportError), raised there.
    if slurm.use_slurm(args):
        explain.check_target(args.target, fixed)  # a broken target fails here, not on every host
        return slurm.run_with_executor(args, argv=args.argv)
    doc = explain.explain(args.target, fixed, phase=args.phase, budget_s=args.budget, json_path=args.json_path,
                          progress=not args.no_progress, control=args.control, paired=args.paired,
                          say=lambda line: print(line, flush=True))
    print(render(doc, args.target, closing=pipeline.took_text(doc, args.json_path), verbose=args.verbose))
    return ExitCode.OK
