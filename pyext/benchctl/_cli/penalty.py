"""``python -m benchctl penalty``: what subnormal numbers cost on this CPU, op by op."""

from __future__ import annotations

import argparse

from . import preflight

__all__ = ["NAME", "HELP", "configure", "run"]

NAME = "penalty"
NEEDS_TORCH = True  # imported first, with Ctrl-C held (.interrupts)
HELP = ("measure the cost of subnormal inputs per op (normal/zero/subnormal, FTZ/DAZ off/on, "
        "1 and all threads) and classify each op")


def _positive_int(text: str) -> int:
    from .._validate import count

    try:
        return count("the value", int(text), 1)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=_positive_int, default=None,
                        help="thread count of the 'all threads' runs (default: torch's current count)")
    preflight.add_results_file(parser, "also write the full result as JSON to FILE")
    parser.add_argument("--numel", type=_positive_int, default=None,
                        help="elements per elementwise op (default 1048576)")
    parser.add_argument("--ops", default=None,
                        help="comma-separated subset of add,mul,addcmul,div,sqrt,rsqrt,exp,matmul,conv2d")


def run(args: argparse.Namespace) -> int:
    from .._studies import penalty

    options = {}
    if args.numel is not None:
        options["numel"] = args.numel
    if args.ops:
        options["ops"] = [name.strip() for name in args.ops.split(",") if name.strip()]
    result = penalty.profile(args.threads, **options)
    print(penalty.format_table(result))
    if args.json_path:
        preflight.write_json(args.json_path, result)
    return 0
