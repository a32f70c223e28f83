#!/usr/bin/env python3
"""Seed 2: are all-zero conv weights faster than uniform ones (fast on GPU, not on CPU)?

Runs the user's net (../shared/seeds/zero_weights_gpu_vs_cpu.txt) with
uniform and zero weights, each cell in a fresh process, under ftz
{off, process} and threads {1, all} (and on CUDA when a GPU is present),
plus the baseline cell again as an A/A control; times forward and a
forward+backward that really calls backward, shows the seed's own naive
timing beside it, and prints the report and the answer. FTZ is ruled out
before any cell runs when this CPU's penalty profile and the net's values say
it cannot matter (--set ftz=off,process runs its cells anyway). Three
processes per cell, then more only where a comparison is unresolved, within a
two-minute budget on a 2-core machine. ``--naive-trials 1000`` is the seed's
trial count.
"""

from __future__ import annotations

import argparse
import os

# Light imports: torch is imported after the arguments are parsed.
from benchctl._cli import seed
from benchctl.errors import UserError

# Seconds of the study, penalty profile and pre-checks included: under two minutes for the whole command,
# whose interpreter start, last worker (the budget lets one finish past it) and report come on top.
BUDGET_S = 105.0


def default_matrix(devices: list[str]) -> dict[str, list]:
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    matrix = {"init": ["uniform", "zero"], "device": devices, "ftz": ["off", "process"]}
    matrix["threads"] = [1, threads] if threads > 1 else [1]
    return matrix


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None,
                   help="cpu | cuda | cpu,cuda (default: cpu, plus cuda when torch sees a GPU)")
    p.add_argument("--iterations", type=int, default=40, help="timed iterations per phase (default 40)")
    p.add_argument("--naive-trials", type=int, default=50,
                   help="calls in the seed's naive loops (default 50; seed: 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed for init and input")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V1,V2",
                   help="replace or add a matrix axis: a setting (ftz, threads, alloc, pin, env) "
                        "or a parameter (init, device)")
    seed.add_output_arguments(p, "zero_weights", budget_s=BUDGET_S)
    opts = seed.parse_seed_arguments(p, argv)
    on_hosts = seed.on_slurm(p, opts, __file__)
    if on_hosts is not None:
        return on_hosts

    import torch

    from benchctl._workloads import zero_weights

    devices = opts.device.split(",") if opts.device else ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    args = {"iterations": opts.iterations, "naive_trials": opts.naive_trials, "seed": opts.seed}
    try:
        zero_weights.check_args({**zero_weights.PARAMS, **args})
        matrix = seed.apply_sets(default_matrix(devices), opts.sets)
    except (UserError, ValueError) as exc:
        p.error(str(exc))

    # The net's values, counted here: FTZ cannot matter when they and the CPU's penalty profile say so.
    seed.run_seed(opts, "zero_weights", args, matrix, focus="init",
                  census=lambda matrix: zero_weights.value_census(tuple(matrix.get("init", ["uniform"])), opts.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(seed.script_exit(main, __file__))
