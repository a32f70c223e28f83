"""``python -m benchctl clock``: which tick source is used, at what frequency, and why."""

from __future__ import annotations

import argparse

from . import preflight

__all__ = ["NAME", "HELP", "configure", "run"]

NAME = "clock"
HELP = "describe the tick source (counter, frequency and how it was found, read overhead)"


def configure(parser: argparse.ArgumentParser) -> None:
    preflight.add_summary_json(parser, "the description")


def run(args: argparse.Namespace) -> int:
    from .. import clock

    info = clock.info()
    if args.json_path:
        preflight.write_json(args.json_path, info)
    if preflight.writes_stdout(args):
        return 0
    print(f"source      {info['source']}  ({info['reason']})")
    print(f"frequency   {info['frequency_hz'] / 1e6:.4f} MHz ± {info['frequency_uncertainty_ppm']:.2f} ppm"
          f"  [{info['frequency_source']}]")
    overhead_ns = clock.to_ns(info["read_overhead_cycles"])
    print(f"read cost   {info['read_overhead_cycles']} ticks = {overhead_ns:.1f} ns (serialized begin/end pair)")
    return 0
