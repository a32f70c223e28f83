"""The benchctl pytest fixture against pytest-benchmark's, and an unchanged suite compared with itself.

1. Per-call overhead: both fixtures time the same trivial functions in the
   same pytest sessions (one test each, order alternating between sessions);
   what each reports per call for a function that does nothing is what the
   fixture adds to every call (plus the call itself, the same for both). The
   same ``benchmark`` tests also run in a session of their own under
   ``--benchctl-as-benchmark`` (benchctl serving pytest-benchmark's fixture; the
   figure read from the ``--benchmark-json`` it writes), next to each pair. The
   ratios benchctl / pytest-benchmark and as-benchmark / pytest-benchmark are
   printed per round and as medians over rounds (target: at most 1.0).
2. Unchanged suite: a small suite is saved with --benchctl-json, run again
   unchanged, and judged as --benchctl-compare would; an unchanged suite
   should never be called slower or faster. Each pair is two separate pytest
   sessions; in-process first (one process a side: the judgement is "one
   process", and the raw ratios show why no difference is called), then
   with every test isolated in fresh processes (``--isolated-pairs``), judged
   against the band the session reference sets (how far the machine itself
   moved between the two sessions; see benchctl.pytest_plugin._reference),
   and, for comparison, against the 5% floor alone.

Needs pytest-benchmark (``pip install '.[test]'``). Every figure printed is measured here and now.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchctl.pytest_plugin import _compare as compare, _reference as reference
from benchctl._results import document

TRIVIAL = '''
def noop():
    return None

def identity(x):
    return x

def test_noop_benchctl(benchctl):
    benchctl(noop)

def test_noop_benchmark(benchmark):
    benchmark(noop)

def test_identity_benchctl(benchctl):
    benchctl(identity, 1)

def test_identity_benchmark(benchmark):
    benchmark(identity, 1)
'''

SUITE = '''
import json
import os

import pytest

if os.environ.get("AA_ISOLATE"):
    pytestmark = pytest.mark.benchctl(isolate=True, repeat=int(os.environ["AA_ISOLATE"]))

DATA = list(range(2000))[::-1]
DOC = {"k%d" % i: [i, str(i), {"x": i}] for i in range(50)}

def test_sum(benchctl):
    benchctl(sum, DATA)

def test_sorted(benchctl):
    benchctl(sorted, DATA)

def test_json(benchctl):
    benchctl(json.dumps, DOC)

def test_join(benchctl):
    benchctl("-".join, [str(i) for i in range(200)])

def test_comprehension(benchctl):
    benchctl(lambda: [i * i for i in range(500)])
'''


def _pytest(directory: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=directory, capture_output=True, text=True, env={**os.environ, **(env or {})})


def _benchctl_medians(path: str) -> dict[str, float]:
    doc = document.load(path)
    return {e["cell"]["test"].split("::")[-1]: e["median_ms"] * 1e6 for e in doc["summary"]}


def _benchmark_medians(path: str) -> dict[str, float]:
    with open(path) as f:
        data = json.load(f)
    return {b["name"]: b["stats"]["median"] * 1e9 for b in data["benchmarks"]}


def _trivial_session(tmp: str, tests: list[str], max_time: float) -> tuple[dict, dict]:
    """One session of benchctl's fixture and pytest-benchmark's: (benchctl's medians, pytest-benchmark's), ns."""
    done = _pytest(tmp, *tests, f"--benchctl-max-time={max_time}", f"--benchmark-max-time={max_time}",
                   "--benchctl-json=ours.json", "--benchmark-json=theirs.json")
    if done.returncode != 0:
        sys.exit(f"pytest failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return _benchctl_medians(os.path.join(tmp, "ours.json")), _benchmark_medians(os.path.join(tmp, "theirs.json"))


def _as_benchmark_session(tmp: str, max_time: float) -> dict:
    """One session with --benchctl-as-benchmark: the ``benchmark`` tests served by benchctl, read from the
    pytest-benchmark JSON it writes (medians in ns)."""
    done = _pytest(tmp, *[f"test_trivial.py::test_{fn}_benchmark" for fn in FUNCTIONS], "--benchctl-as-benchmark",
                   f"--benchctl-max-time={max_time}", "--benchmark-json=served.json")
    if done.returncode != 0:
        sys.exit(f"pytest failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return _benchmark_medians(os.path.join(tmp, "served.json"))


FUNCTIONS = ("noop", "identity")


def overhead(sessions: int, max_time: float) -> None:
    print(f"1. per-call time reported for trivial functions, {sessions} rounds of two pytest sessions "
          f"(--benchctl-max-time {max_time:g}, --benchmark-max-time {max_time:g}, other options at their defaults):\n"
          f"   one with benchctl's fixture and pytest-benchmark's (benchctl, pytest-benchmark), one with the same "
          f"benchmark tests under --benchctl-as-benchmark (as-benchmark); the two sessions' order alternates")
    ratios = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="benchctl-overhead-") as tmp:
        with open(os.path.join(tmp, "test_trivial.py"), "w") as f:
            f.write(TRIVIAL)
        print(f"  {'round':>5}  {'function':<9}  {'benchctl ns':>11}  {'as-benchmark ns':>15}  "
              f"{'pytest-benchmark ns':>19}  {'benchctl/pb':>11}  {'as-benchmark/pb':>15}")
        for s in range(sessions):
            # Alternate which fixture's tests run first (pytest runs node ids in the order given), so
            # neither always meets a colder process; and which of the two sessions runs first.
            tests = ([f"test_trivial.py::test_{fn}_{tool}" for fn in FUNCTIONS
                      for tool in (("benchctl", "benchmark") if s % 2 == 0 else ("benchmark", "benchctl"))])
            if s % 2 == 0:
                ours, theirs = _trivial_session(tmp, tests, max_time)
                served = _as_benchmark_session(tmp, max_time)
            else:
                served = _as_benchmark_session(tmp, max_time)
                ours, theirs = _trivial_session(tmp, tests, max_time)
            for fn in FUNCTIONS:
                a, c, b = ours[f"test_{fn}_benchctl"], served[f"test_{fn}_benchmark"], theirs[f"test_{fn}_benchmark"]
                ratios[(fn, "benchctl")].append(a / b)
                ratios[(fn, "as-benchmark")].append(c / b)
                print(f"  {s + 1:>5}  {fn:<9}  {a:>11.1f}  {c:>15.1f}  {b:>19.1f}  {a / b:>11.3f}  {c / b:>15.3f}")
    for (fn, mode), values in ratios.items():
        print(f"  {fn}, {mode}: / pytest-benchmark median ratio {np.median(values):.3f} "
              f"(range {min(values):.3f}-{max(values):.3f} over {len(values)} rounds; target <= 1.0)")


def unchanged(pairs: int, max_time: float, repeat: int = 0) -> None:
    how = f"each test isolated in {repeat} fresh processes" if repeat else "in-process"
    print(f"\nan unchanged suite (5 tests, {how}) saved, then run again and compared; {pairs} pairs of pytest "
          f"sessions (--benchctl-max-time {max_time:g})")
    totals: collections.Counter = collections.Counter()
    floor_total = 0
    spread = [1.0]
    env = {"AA_ISOLATE": str(repeat)} if repeat else {}
    with tempfile.TemporaryDirectory(prefix="benchctl-aa-") as tmp:
        with open(os.path.join(tmp, "test_suite.py"), "w") as f:
            f.write(SUITE)
        for p in range(pairs):
            for name in ("saved.json", "current.json"):
                done = _pytest(tmp, f"--benchctl-max-time={max_time}", f"--benchctl-json={name}", env=env)
                if done.returncode != 0:
                    sys.exit(f"pytest failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            current = document.load(os.path.join(tmp, "current.json"))
            saved = compare.load_saved(os.path.join(tmp, "saved.json"))
            drift = reference.drift(current, saved)
            judged = compare.judge(current, saved, drift.band)
            counts = collections.Counter(j.category for j in judged)
            totals.update(counts)
            spread += [max(j.comparison["ratio"], 1 / j.comparison["ratio"]) for j in judged if j.comparison]
            print(f"  pair {p + 1}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
            if repeat:
                print(f"    {drift.text}")
                # What the same intervals would have called against the 5% floor alone (no reference).
                floor_calls = [j for j in compare.judge(current, saved) if j.category in ("slower", "faster")]
                floor_total += len(floor_calls)
                print(f"    against the 5% floor alone: {len(floor_calls)} called"
                      + "".join(f"; {j.nodeid.split('::')[-1]} {j.category}" for j in floor_calls))
            for j in judged:
                print(f"    {j.nodeid.split('::')[-1]:<20} {j.category:<12} {j.text}")
    called = totals["slower"] + totals["faster"]
    print(f"  in all: {sum(totals.values())} judgements, {called} called a difference "
          f"({', '.join(f'{k} {v}' for k, v in sorted(totals.items()))}); the largest ratio between the two "
          f"sessions of one unchanged test: {max(spread):.2f}x")
    if repeat:
        print(f"  against the 5% floor alone (no session reference) the same intervals would have called {floor_total}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6,
                        help="rounds of the overhead, two pytest sessions each (default 6)")
    parser.add_argument("--pairs", type=int, default=3, help="saved/current pairs of the unchanged suite (default 3)")
    parser.add_argument("--isolated-pairs", type=int, default=3,
                        help="pairs of the unchanged suite with every test isolated (default 3; 0 skips them)")
    parser.add_argument("--repeat", type=int, default=3, help="processes per isolated test (default 3)")
    parser.add_argument("--max-time", type=float, default=0.5, help="each tool's time budget per test (default 0.5 s)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    overhead(args.sessions, args.max_time)
    print("\n2. saved against current, nothing changed")
    unchanged(args.pairs, args.max_time)
    if args.isolated_pairs:
        unchanged(args.isolated_pairs, args.max_time, args.repeat)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
