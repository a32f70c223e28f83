"""Unpinned vs compact-pinned: one oneDNN conv workload, side by side in one run.

For each mode it prints the median time per iteration with its 95% CI,
IQR/median (spread), and CPU migrations per iteration of this process's
threads (the ``cpu_migrations`` perf software event, counted over every
thread; "n/a" with the reason where perf cannot count it). The modes alternate
in rounds (unpinned, pinned, unpinned, ...) so that drift on a shared machine
reaches both alike. Pinning uses ``benchctl.threads.pinned("compact")`` and
the placement it read back is printed with the table. Statistics come from
``benchctl.stats.Samples``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from benchctl import clock, threads
from benchctl.counters import CounterGroup
from benchctl._results.stats import Samples


def conv_workload(batch: int, channels: int, size: int):
    conv = torch.nn.Conv2d(channels, channels, 3, padding=1).eval()
    x = torch.randn(batch, channels, size, size)

    def step():
        with torch.no_grad():
            conv(x)

    return step


def run_block(step, iters: int, counters: CounterGroup):
    """Time ``iters`` calls; return their ns and the CPU migrations meanwhile (None if uncounted)."""
    before = counters.read()["cpu_migrations"]
    ticks = clock.time_calls(step, iters, warmup=1)
    after = counters.read()["cpu_migrations"]
    return clock.to_ns(ticks), None if before is None or after is None else after - before


def summarize(ns: np.ndarray, migrations: list, iters: int) -> dict:
    summary = Samples(ns).summary()
    counted = [m for m in migrations if m is not None]
    return {
        "n": summary["n"],
        "warmup": summary["warmup"],
        "median_ms": summary["median"] / 1e6,
        "ci95_ms": [v / 1e6 for v in summary["ci95"]],
        "iqr_over_median": summary["iqr_over_median"],
        "flags": summary["flags"],
        "migrations_per_iter": sum(counted) / (iters * len(counted)) if counted else None,
    }


def compare(batch, channels, size, iters, rounds, warmup, num_threads) -> dict:
    readback = threads.set_num_threads(num_threads)
    step = conv_workload(batch, channels, size)
    for _ in range(warmup):
        step()  # also starts the OpenMP team, so that the process-wide counters include it
    samples = {"unpinned": [], "compact": []}
    migrations = {"unpinned": [], "compact": []}
    placement = None
    with CounterGroup(scope="process", events=["cpu_migrations"]) as counters:
        source = counters.sources.get("cpu_migrations") or f"unavailable: {counters.unavailable['cpu_migrations']}"
        for _ in range(rounds):
            ns, m = run_block(step, iters, counters)
            samples["unpinned"].append(ns)
            migrations["unpinned"].append(m)
            with threads.pinned("compact") as census:
                ns, m = run_block(step, iters, counters)
            placement = [(r["omp_thread"], r["allowed_cpus"]) for r in census if r["omp_thread"] is not None]
            samples["compact"].append(ns)
            migrations["compact"].append(m)
    return {
        "workload": f"conv2d 3x3 {channels}->{channels}, input {batch}x{channels}x{size}x{size}, no_grad",
        "threads": readback,
        "migrations_source": source,
        "compact_placement": placement,
        "modes": {mode: summarize(np.concatenate(samples[mode]), migrations[mode], iters) for mode in samples},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--size", type=int, default=56, help="input height and width (default 56)")
    parser.add_argument("--iters", type=int, default=50, help="timed iterations per block (default 50)")
    parser.add_argument("--rounds", type=int, default=5, help="unpinned/pinned block pairs (default 5)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed iterations first (default 10)")
    parser.add_argument("--threads", type=int, default=None, help="team size (default: the allowed CPUs)")
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    args = parser.parse_args()
    from benchctl.topology import cpu_topology

    num_threads = args.threads or len(cpu_topology()["allowed_cpus"])
    result = compare(args.batch, args.channels, args.size, args.iters, args.rounds, args.warmup, num_threads)

    print(f"{result['workload']}; {num_threads} threads; oneDNN: {torch.backends.mkldnn.is_available()}")
    print(f"compact placement (omp thread, CPUs): {result['compact_placement']}")
    print(f"migrations: {result['migrations_source']}")
    if result["threads"]["mismatches"]:
        print(f"thread counts read back other than asked: {result['threads']['mismatches']}")
    print(f"{'mode':<10}{'n':>6}{'median ms':>12}{'95% CI ms':>20}{'IQR/median':>12}{'migrations/iter':>17}  flags")
    for mode, s in result["modes"].items():
        mig = f"{s['migrations_per_iter']:.3f}" if s["migrations_per_iter"] is not None else "n/a"
        ci = f"[{s['ci95_ms'][0]:.3f}, {s['ci95_ms'][1]:.3f}]"
        spread = f"{s['iqr_over_median']:.3f}" if s["iqr_over_median"] is not None else "n/a"
        print(f"{mode:<10}{s['n']:>6}{s['median_ms']:>12.3f}{ci:>20}{spread:>12}{mig:>17}  "
              f"{', '.join(s['flags']) or '-'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
