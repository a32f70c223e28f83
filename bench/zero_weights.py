#!/usr/bin/env python3
"""Seed 2: are all-zero conv weights faster than uniform ones (fast on GPU, not on CPU)?

Runs the user's net (../shared/seeds/zero_weights_gpu_vs_cpu.txt) with
uniform and zero weights, each cell in a fresh process, under ftz
{off, process} and threads {1, all} (and on CUDA when a GPU is present),
times forward and a forward+backward that really calls backward, shows the
seed's own naive timing beside it, and prints the report and the answer.
``--naive-trials 1000`` is the seed's trial count; the defaults are sized to
finish in about two minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os

# Light imports: torch is imported after the arguments are parsed.
from benchctl.studies import seed_runs
from benchctl.studies.seed_rules import PENALTY_OPS

BUDGET_S = 120.0


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
    p.add_argument("--repeat", type=int, default=None,
                   help="fresh processes per cell (default: what fits in 2 minutes, at least 2)")
    seed_runs.add_output_arguments(p, "zero_weights")
    opts = seed_runs.parse_seed_arguments(p, argv)

    import torch

    from benchctl.studies import seed_rules
    from benchctl.workloads import zero_weights

    devices = opts.device.split(",") if opts.device else ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    args = {"iterations": opts.iterations, "naive_trials": opts.naive_trials, "seed": opts.seed}
    try:
        zero_weights.check_args({**zero_weights.PARAMS, **args})
        matrix = seed_runs.apply_sets(default_matrix(devices), opts.sets)
    except ValueError as exc:
        p.error(str(exc))
    forward_s, forward_backward_s = zero_weights.probe_call_seconds()
    cell_s = zero_weights.estimate_cell_seconds({**zero_weights.PARAMS, **args}, forward_s, forward_backward_s,
                                                seed_runs.measure_interpreter_seconds())
    cells = seed_runs.count_cells(matrix)
    penalty_ops = PENALTY_OPS["zero_weights"]
    penalty_s = 0.0 if opts.skip_penalty else seed_runs.PENALTY_SECONDS_PER_OP * len(penalty_ops)
    # Two processes per cell at least: this net's medians move by up to ~20% between
    # fresh processes here, and only repetitions let the CI carry that.
    repeat = opts.repeat or seed_runs.choose_repeat(cell_s, cells, BUDGET_S - penalty_s)
    seed_runs.run_and_explain("zero_weights", args, matrix, repeat=repeat, json_path=opts.json_path,
                              plot_path=opts.plot, focus="init", seed_rules=seed_rules.zero_weights_findings,
                              penalty_ops=penalty_ops,
                              cell_seconds=cell_s, measure_penalty=not opts.skip_penalty, resume=opts.resume)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
