"""Each planted workload against its reported fix, timed outside benchctl, in fresh processes.

The A/B figure of every plant in tests/planted/: the plant as written, then the fix its
public report established (``PLANT["fixed"]``, see tests/planted/plants.py), each in its own
fresh ``python`` process that times its calls with ``time.perf_counter`` and nothing of benchctl;
the two alternate, ``--pairs`` times. Prints per plant the median over processes of each side's
per-process statistic (the median call; the mean call when the fix is a warm-up, whose effect
is in the first calls), their ratio and the range of the per-pair ratios.

    python bench/plant_toggles.py [--pairs N] [--calls N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PLANTED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "planted")
sys.path.insert(0, PLANTED_DIR)
from plants import declarations, devices_here  # noqa: E402 - each plant's PLANT, with its "fixed"

# Run in a fresh interpreter: import the plant, set it up, apply the fix, time the calls.
_CHILD = r"""
import importlib.util, json, sys, time
path, target, after_setup, warmup, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
spec = importlib.util.spec_from_file_location("plant", path)
module = importlib.util.module_from_spec(spec)
sys.path.insert(0, __import__("os").path.dirname(path))
spec.loader.exec_module(module)
obj = getattr(module, target)
if hasattr(obj, "setup") and hasattr(obj, "run"):
    state = obj.setup()
    call = lambda: obj.run(state)
else:
    call = obj
if after_setup:
    import torch
    exec(after_setup, {"torch": torch, "state": locals().get("state")})
for _ in range(warmup):
    call()
times = []
for _ in range(calls):
    started = time.perf_counter()
    call()
    times.append(time.perf_counter() - started)
print(json.dumps(times))
"""


def _one(path: str, target: str, fixed: dict | None, calls: int) -> list[float]:
    """The call times of one fresh process: the plant as written (``fixed`` None) or with its fix."""
    fixed = fixed or {}
    env = {**os.environ, **fixed.get("env", {})}
    argv = [sys.executable, "-c", _CHILD, path, fixed.get("target", target), fixed.get("after_setup", ""),
            str(fixed.get("warmup", 0)), str(calls)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{os.path.basename(path)} ({'fixed' if fixed else 'as written'}) failed:\n"
                           f"{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3, help="fresh processes per side, alternating (default 3)")
    parser.add_argument("--calls", type=int, default=20, help="timed calls per process (default 20)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="only this planted workload (file name without .py; repeatable)")
    opts = parser.parse_args(argv)
    if opts.pairs < 1 or opts.calls < 1:
        parser.error("--pairs and --calls take a positive count")
    chosen = [(n, p) for n, p in declarations() if p.get("fixed") and (not opts.only or n[:-3] in opts.only)]
    if not chosen:
        parser.error("no planted workload with a declared fix matches --only")
    rows = []
    for name, plant in chosen:
        if plant.get("device") == "cuda" and "cuda" not in devices_here():
            print(f"== {name}: skipped (a GPU plant, and torch sees no CUDA device here)", flush=True)
            continue
        path, fixed = os.path.join(PLANTED_DIR, name), plant["fixed"]
        stat = statistics.fmean if fixed.get("warmup") else statistics.median
        print(f"== {name} ({plant['cause']}): fixed by {json.dumps(fixed)}", flush=True)
        sides: dict[str, list[float]] = {"as written": [], "fixed": []}
        for _ in range(opts.pairs):
            sides["as written"].append(stat(_one(path, plant["target"], None, opts.calls)))
            sides["fixed"].append(stat(_one(path, plant["target"], fixed, opts.calls)))
        ratios = [a / b for a, b in zip(sides["as written"], sides["fixed"])]
        rows.append((name, plant["cause"], "mean" if fixed.get("warmup") else "median",
                     statistics.median(sides["as written"]), statistics.median(sides["fixed"]),
                     statistics.median(ratios), min(ratios), max(ratios)))
    print(f"\n{'plant':<24} {'cause':<12} {'stat':<6} {'as written':>11} {'fixed':>10} {'ratio':>7}  pairs")
    for name, cause, stat_name, a, b, ratio, low, high in rows:
        print(f"{name:<24} {cause:<12} {stat_name:<6} {a * 1e3:>9.2f}ms {b * 1e3:>8.2f}ms {ratio:>6.2f}x  "
              f"{low:.2f}-{high:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
