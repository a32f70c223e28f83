"""Unpinned vs compact-pinned: one oneDNN conv workload, side by side in one run.

For each mode it prints the median time per iteration, IQR/median (spread),
and CPU migrations per iteration of this process's threads. Migrations come
from the ``cpu-migrations`` perf software event (``benchctl.counters``) when
that module is present, else from the kernel's per-thread scheduler
statistics (``se.nr_migrations`` in ``/proc/self/task/*/sched``); the table
says which. The modes alternate in rounds (unpinned, pinned, unpinned, ...)
so that drift on a shared machine reaches both alike. Pinning uses
``benchctl.threads.pinned("compact")`` and the placement it read back is
printed with the table.
"""

from __future__ import annotations

import argparse
import glob
import json

import numpy as np
import torch

from benchctl import clock, threads


def _sched_migrations() -> int:
    total = 0
    for path in glob.glob("/proc/self/task/*/sched"):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("se.nr_migrations"):
                        total += int(line.split(":")[1])
                        break
        except OSError:
            pass  # the thread exited meanwhile
    return total


def migration_reader():
    """``(read() -> cumulative migrations of this process, source)``."""
    try:
        from benchctl.counters import CounterGroup
    except ImportError:
        CounterGroup = None
    if CounterGroup is not None:
        group = CounterGroup(scope="process", events=["cpu_migrations"])
        if group.available.get("cpu_migrations"):
            return (lambda: group.read()["cpu_migrations"]), "perf cpu-migrations (benchctl.counters)"
    if not glob.glob("/proc/self/task/*/sched"):
        return (lambda: None), "unavailable (no perf counters module, no /proc/self/task/*/sched)"
    return _sched_migrations, "se.nr_migrations from /proc/self/task/*/sched"


def conv_workload(batch: int, channels: int, size: int):
    conv = torch.nn.Conv2d(channels, channels, 3, padding=1).eval()
    x = torch.randn(batch, channels, size, size)

    def step():
        with torch.no_grad():
            conv(x)

    return step


def run_block(step, iters: int, read_migrations):
    before = read_migrations()
    ticks = clock.time_calls(step, iters, warmup=1)
    after = read_migrations()
    migrations = None if before is None or after is None else after - before
    return clock.to_ns(ticks), migrations


def summarize(ns: np.ndarray, migrations: list, iters: int) -> dict:
    q1, median, q3 = np.percentile(ns, [25, 50, 75])
    counted = [m for m in migrations if m is not None]
    return {
        "n": int(ns.size),
        "median_ms": median / 1e6,
        "iqr_over_median": (q3 - q1) / median,
        "migrations_per_iter": sum(counted) / (iters * len(counted)) if counted else None,
    }


def compare(batch, channels, size, iters, rounds, warmup, num_threads) -> dict:
    readback = threads.set_num_threads(num_threads)
    step = conv_workload(batch, channels, size)
    for _ in range(warmup):
        step()
    read_migrations, source = migration_reader()
    samples = {"unpinned": [], "compact": []}
    migrations = {"unpinned": [], "compact": []}
    placement = None
    for _ in range(rounds):
        ns, m = run_block(step, iters, read_migrations)
        samples["unpinned"].append(ns)
        migrations["unpinned"].append(m)
        with threads.pinned("compact") as census:
            ns, m = run_block(step, iters, read_migrations)
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
    print(f"{'mode':<10}{'n':>6}{'median ms':>12}{'IQR/median':>12}{'migrations/iter':>17}")
    for mode, s in result["modes"].items():
        mig = f"{s['migrations_per_iter']:.3f}" if s["migrations_per_iter"] is not None else "n/a"
        print(f"{mode:<10}{s['n']:>6}{s['median_ms']:>12.3f}{s['iqr_over_median']:>12.3f}{mig:>17}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
