"""Which threads each denormal-flushing method reaches, and the toggle cost.

    python bench/ftz_scope.py [--numel N] [--threads N] [--idle-threads 64] [--json FILE]

(a) no flushing, (b) torch.set_flush_denormal(True), (c) benchctl scope
"openmp", (d) scope "process", on x / 3 over subnormal inputs on all threads;
then the time of a process-wide toggle with idle threads alive.

The default is 1M inputs: the op must be bound by the subnormal arithmetic,
not by memory. At 4M (32 MB moved per call) it is memory-bound on the
development machine (Zen 4) and the time column shows no penalty at all,
flushed or not; the thread and output columns do not depend on the size.
"""

import argparse
import json

from benchctl._studies import flush_scopes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--numel", type=int, default=1 << 20,
                        help="subnormal inputs (default 1M: large sizes become memory-bound and hide the penalty)")
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads (default: torch's, >= 2)")
    parser.add_argument("--repeats", type=int, default=9, help="timed calls per measurement")
    parser.add_argument("--idle-threads", type=int, default=64, help="extra idle threads during the toggle timing")
    parser.add_argument("--toggles", type=int, default=40, help="process-wide toggles timed")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args()

    scopes = flush_scopes.compare(args.numel, args.threads, args.repeats)
    toggle = flush_scopes.toggle_cost(args.idle_threads, args.toggles)

    print(f"{scopes['op']}, {scopes['numel']} subnormal inputs, {scopes['threads']} intra-op threads")
    print(f"{'method':8} {'threads flushed':>16} {'team flushed':>13} {'outputs flushed':>16} {'time / normal':>14}")
    for m in scopes["methods"]:
        print(f"{m['method']:8} {m['threads_flushed']:>15.0%} {m['team_flushed']:>12.0%} "
              f"{m['outputs_flushed']:>15.1%} {m['time_vs_normal']:>13.2f}x")
    print(f"process-wide toggle, {toggle['threads']} threads ({toggle['idle_threads']} idle): "
          f"min {toggle['ms_min']:.3f} ms, median {toggle['ms_median']:.3f} ms "
          f"(change + readback of every thread; all reached: {toggle['all_reached']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"scopes": scopes, "toggle": toggle}, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
