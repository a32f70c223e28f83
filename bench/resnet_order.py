#!/usr/bin/env python3
"""Seed 1: why is ResNet-50's eval forward pass slower when the process did not train first?

Runs the user's experiment (../shared/seeds/eval_slower_than_train.txt) in
both orders, each in a fresh process, under every setting that can explain
the gap (default: order × ftz {off, process} × alloc {default, retain}), plus
the baseline cell again as an A/A control, and prints the report and the
answer. FTZ is ruled out before any cell runs when this CPU's penalty
profile and the model's values say it cannot matter (its cells are then
skipped; --set ftz=off,process runs them anyway). Three processes per cell,
then more only where a comparison is unresolved, within a 280 s budget (the
whole command under five minutes on a 2-core machine). At the default sizes each loop's
batches are read before it (the loader's worker then takes no CPU from the timed forward
passes); ``--batch-size 128 --num-data 1024`` is exactly the seed's experiment, batches
streamed while they are timed.
"""

from __future__ import annotations

import argparse

# Light imports: torch is imported after the arguments are parsed.
from benchctl._cli import seed
from benchctl.errors import UserError
from benchctl._workloads.resnet_order import PARAMS

# Seconds of the study, penalty profile and pre-checks included: under five minutes for the whole command,
# whose interpreter start, last worker (the budget lets one finish past it) and report come on top.
BUDGET_S = 280.0
DEFAULT_MATRIX = {"order": ["eval_only", "train_then_eval"], "ftz": ["off", "process"],
                  "alloc": ["default", "retain"]}
# The workload's own defaults, sized for five minutes on 2 cores (benchctl._workloads.resnet_order).
DEFAULT_BATCH_SIZE = PARAMS["batch_size"]
DEFAULT_NUM_DATA = PARAMS["num_data"]
DEFAULT_TRAIN_BATCHES = PARAMS["train_batches"]


def size_chosen(batch_size: int | None, num_data: int | None) -> bool:
    """Whether the user chose a size: the run then follows the seed's own loops."""
    return batch_size is not None or num_data is not None


def sizes(batch_size: int | None, num_data: int | None, train_batches: int | None) -> tuple[int, int, int | None]:
    """The run's sizes: the defaults above, or the seed's loop structure (train on every
    batch) as soon as the user chooses a size, unless --train-batches says otherwise."""
    if train_batches is None and not size_chosen(batch_size, num_data):
        train_batches = DEFAULT_TRAIN_BATCHES
    if train_batches == 0:
        train_batches = None
    return (DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
            DEFAULT_NUM_DATA if num_data is None else num_data, train_batches)


def load_first(batch_size: int | None, num_data: int | None) -> bool:
    """Whether each loop reads its batches before its timed iterations: at the default sizes, where on a
    2-core machine the loader's worker making the next batches slows the forward passes it overlaps
    (~1.5x, with 2-4x the context switches) by a different amount in each process; streamed as
    in the seed once the user chooses a size (``--set load_first=...`` decides either way)."""
    return not size_chosen(batch_size, num_data)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=None,
                   help=f"images per batch (default {DEFAULT_BATCH_SIZE}; seed: 128)")
    p.add_argument("--num-data", type=int, default=None,
                   help=f"FakeData images per loader (default {DEFAULT_NUM_DATA}; seed: 1024)")
    p.add_argument("--train-batches", type=int, default=None,
                   help=f"stop training after N batches, 0 = all (default: {DEFAULT_TRAIN_BATCHES} with the default "
                        "sizes; all, as the seed, once --batch-size or --num-data is given)")
    p.add_argument("--weights", default="auto",
                   help="auto | imagenet | random | subnormal:F | PATH (default auto: imagenet if cached, else random)")
    p.add_argument("--device", default="cpu", help="cpu | cuda")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and init")
    p.add_argument("--arch", default="resnet50", help="torchvision model (default resnet50, the seed's)")
    p.add_argument("--image-size", type=int, default=224, help="FakeData image side (seed: 224)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V1,V2",
                   help="replace or add a matrix axis: a setting (ftz, alloc, threads, pin, env) "
                        "or a parameter (order, load_first: read each loop's batches before it; default "
                        "true at the default sizes, false once a size is given, as the seed)")
    seed.add_output_arguments(p, "resnet_order", budget_s=BUDGET_S)
    opts = seed.parse_seed_arguments(p, argv)
    on_hosts = seed.on_slurm(p, opts, __file__)
    if on_hosts is not None:
        return on_hosts

    from benchctl._workloads import resnet_order, weights

    batch_size, num_data, train_batches = sizes(opts.batch_size, opts.num_data, opts.train_batches)
    args = {"batch_size": batch_size, "num_data": num_data, "train_batches": train_batches,
            "load_first": load_first(opts.batch_size, opts.num_data),
            "weights": opts.weights, "device": opts.device, "seed": opts.seed, "arch": opts.arch,
            "image_size": opts.image_size}
    try:
        resnet_order.check_args({**resnet_order.PARAMS, **args})
        weights.prefetch(opts.arch, opts.weights)
        matrix = seed.apply_sets(DEFAULT_MATRIX, opts.sets)
    except (UserError, ValueError) as exc:  # WeightsUnavailable (offline, not cached) ends as unavailable, 3
        p.error(str(exc))
    print(f"sizes: batch {batch_size}, {num_data} images per loader, training on "
          + (f"the first {train_batches} batches" if train_batches else "every batch (as the seed)")
          + ("; each loop's batches read before it" if args["load_first"] else "; batches streamed (as the seed)"))

    # The model's values, counted here: FTZ cannot matter when they and the CPU's penalty profile say so.
    seed.run_seed(opts, "resnet_order", args, matrix, focus="order",
                  census=lambda matrix: resnet_order.value_census(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(seed.script_exit(main, __file__))
