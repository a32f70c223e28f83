"""``python -m benchctl doctor``: what on this machine will distort timings, and how to fix it."""

from __future__ import annotations

import argparse

from ..errors import ExitCode
from . import preflight

__all__ = ["NAME", "HELP", "configure", "run"]

NAME = "doctor"
NEEDS_TORCH = True  # imported first, with Ctrl-C held (.interrupts)
HELP = "check the machine for what distorts timings (TSC, frequency, load, threads, FTZ, counters)"


def configure(parser: argparse.ArgumentParser) -> None:
    preflight.add_summary_json(parser, "the findings")


def run(args: argparse.Namespace) -> int:
    # A benchmark process has torch (and its OpenMP runtime) loaded: so must the one we inspect.
    import torch  # noqa: F401

    from .._system import doctor

    findings = doctor.run_checks()
    if args.json_path:
        preflight.write_json(args.json_path, doctor.as_data(findings))
    if not preflight.writes_stdout(args):
        width = max(len(f.name) for f in findings)
        for f in findings:
            print(f"{f.status:<5} {f.name:<{width}}  {f.summary}")
            if f.advice and f.status != doctor.OK:
                print(f"{'':<5} {'':<{width}}  -> {f.advice}")
    return ExitCode.FAILED if any(f.status == doctor.ERROR for f in findings) else ExitCode.OK
