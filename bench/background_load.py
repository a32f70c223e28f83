"""A reproducible neighbour: keeps CPUs busy in bursts, as a desktop or a shared CI runner does, so that
anyone can check a verdict under load (run it in another terminal, then the benchmark).

Each of ``--cpus`` processes spins for a burst drawn uniformly from ``--burst`` (default 0.5-3 s), then
sleeps so that its long-run share of one CPU is ``--duty`` (default 30%), until ``--seconds`` have
passed or it is stopped (Ctrl-C, SIGTERM). At the end it prints the CPU time it took, measured
(its processes' user+system time), beside what was asked.

    python bench/background_load.py [--duty 0.3] [--cpus 1] [--burst 0.5,3] [--seconds S] [--seed N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import sys
import time


def _share(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a share of one CPU, more than 0 and at most 1 (0.3 is 30%)")
    return value


def _burst(text: str) -> tuple[float, float]:
    low, sep, high = text.partition(",")
    try:
        lo, hi = float(low), float(high if sep else low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write LOW,HIGH seconds, e.g. 0.5,3") from None
    if not 0 < lo <= hi < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: 0 < LOW <= HIGH seconds")
    return lo, hi


def _positive(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds > 0")
    return value


def neighbour(duty: float, burst: tuple[float, float], until: float, seed: int) -> None:
    """One process's load: busy bursts and the idle time that makes ``duty`` of one CPU, until ``until``
    (a ``time.monotonic()`` value)."""
    rng = random.Random(seed)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it (Ctrl-C reaches the whole group)
    # The parent's terminate(): end quietly (the parent's SIGTERM handler, inherited, would print a traceback).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while time.monotonic() < until:
        busy = rng.uniform(*burst)
        end = min(until, time.monotonic() + busy)
        while time.monotonic() < end:  # spin: one CPU kept busy by pure computation
            pass
        time.sleep(max(0.0, min(until - time.monotonic(), busy * (1 - duty) / duty)))


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends it as Ctrl-C does: its processes stopped, its report printed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duty", type=_share, default=0.3, help="each process's share of one CPU (default 0.3)")
    parser.add_argument("--cpus", type=int, default=1, help="processes, each loading one CPU (default 1)")
    parser.add_argument("--burst", type=_burst, default=(0.5, 3.0), metavar="LOW,HIGH",
                        help="a busy burst's length in seconds, drawn uniformly (default 0.5,3)")
    parser.add_argument("--seconds", type=_positive, default=None, help="stop after this long (default: when stopped)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bursts' lengths (default 0)")
    opts = parser.parse_args(argv)
    if opts.cpus < 1 or opts.cpus > (os.cpu_count() or 1):
        parser.error(f"--cpus {opts.cpus}: between 1 and this machine's {os.cpu_count()} CPUs")
    started = time.monotonic()
    until = started + (opts.seconds if opts.seconds is not None else float("inf"))
    print(f"background load: {opts.cpus} process(es), each {opts.duty:.0%} of one CPU in bursts of "
          f"{opts.burst[0]:g}-{opts.burst[1]:g} s" + (f", for {opts.seconds:g} s" if opts.seconds else
                                                       ", until stopped (Ctrl-C)"), flush=True)
    procs = [multiprocessing.Process(target=neighbour, args=(opts.duty, opts.burst, until, opts.seed + i))
             for i in range(opts.cpus)]
    signal.signal(signal.SIGTERM, _stop)
    # A script's `background_load.py &` starts it with SIGINT ignored (a shell without job control does so):
    # Ctrl-C on that script, or `kill -INT`, would then leave it spinning.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for proc in procs:
        proc.start()
    try:
        for proc in procs:
            proc.join()
    except KeyboardInterrupt:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join()
    wall = time.monotonic() - started
    used = os.times()
    cpu = used.children_user + used.children_system
    print(f"took {cpu:.1f} CPU s in {wall:.1f} s: {cpu / wall:.2f} CPUs (asked: {opts.cpus * opts.duty:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
