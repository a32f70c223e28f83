"""What a timing costs: benchctl's clock against the usual Python timers.

Prints one table, measured in this run:
  * the native back-to-back serialized read (ticks and ns);
  * one Python-visible read: ``benchctl.clock.cycles()`` vs ``time.perf_counter_ns()``;
  * per-iteration cost of timing a no-op with ``benchctl.clock.time_calls``
    vs a Python loop around ``perf_counter_ns`` vs ``timeit`` vs
    ``torch.utils.benchmark.Timer("pass")``, each against a bare Python call
    of the no-op.
Each figure is the minimum over repeats (the least disturbed run).
Targets: cycles() ≤ 1.0× perf_counter_ns(); time_calls ≤ 1.5× a bare call.
"""

from __future__ import annotations

import argparse
import time
import timeit

import numpy as np

from benchctl import clock


def noop():
    return None


def per_call_ns(stmt, n, repeats, globals_):
    return min(timeit.repeat(stmt, number=n, repeat=repeats, globals=globals_)) / n * 1e9


def python_loop_per_iter_ns(n):
    out = np.empty(n, dtype=np.int64)
    pc = time.perf_counter_ns
    f = noop
    t0 = time.perf_counter_ns()
    for i in range(n):
        a = pc()
        f()
        out[i] = pc() - a
    return (time.perf_counter_ns() - t0) / n, float(np.median(out))


def time_calls_per_iter_ns(n):
    t0 = time.perf_counter_ns()
    samples = clock.time_calls(noop, n, warmup=0)
    return (time.perf_counter_ns() - t0) / n, float(np.median(clock.to_ns(samples)))


def torch_timer_per_iter_ns(n):
    from torch.utils import benchmark

    m = benchmark.Timer("pass").timeit(n)
    return m.mean * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=200_000, help="calls per measurement (default 200000)")
    parser.add_argument("--repeats", type=int, default=7, help="repeats; the minimum is kept (default 7)")
    args = parser.parse_args()
    n, r = args.n, args.repeats
    info = clock.info()
    g = {"cycles": clock.cycles, "perf_counter_ns": time.perf_counter_ns, "noop": noop}

    read_ticks = info["read_overhead_cycles"]
    cycles_ns = per_call_ns("cycles()", n, r, g)
    perf_ns = per_call_ns("perf_counter_ns()", n, r, g)
    bare_ns = per_call_ns("noop()", n, r, g)
    tc = min((time_calls_per_iter_ns(n) for _ in range(r)), key=lambda x: x[0])
    loop = min((python_loop_per_iter_ns(n) for _ in range(r)), key=lambda x: x[0])
    ti = min(timeit.repeat(noop, number=n, repeat=r)) / n * 1e9
    tt = min(torch_timer_per_iter_ns(n) for _ in range(r))

    print(f"clock: {info['source']} at {info['frequency_hz'] / 1e6:.3f} MHz ({info['frequency_source']})")
    print(f"{'measurement':<48}{'ns/iter':>10}{'ratio':>8}  note")
    rows = [
        ("native serialized read pair", clock.to_ns(read_ticks), None, f"{read_ticks} ticks"),
        ("benchctl.clock.cycles() call", cycles_ns, cycles_ns / perf_ns, "vs perf_counter_ns (target <= 1.0)"),
        ("time.perf_counter_ns() call", perf_ns, 1.0, ""),
        ("bare Python call of noop()", bare_ns, 1.0, "reference for the rows below"),
        ("benchctl.clock.time_calls(noop)", tc[0], tc[0] / bare_ns, f"target <= 1.5; reports {tc[1]:.0f} ns/call"),
        ("Python loop with perf_counter_ns", loop[0], loop[0] / bare_ns, f"reports {loop[1]:.0f} ns/call"),
        ("timeit.Timer(noop)", ti, ti / bare_ns, ""),
        ('torch.utils.benchmark.Timer("pass")', tt, tt / bare_ns, ""),
    ]
    for name, ns, ratio, note in rows:
        rs = f"{ratio:.2f}x" if ratio is not None else ""
        print(f"{name:<48}{ns:>10.1f}{rs:>8}  {note}")


if __name__ == "__main__":
    main()
