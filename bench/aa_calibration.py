#!/usr/bin/env python3
"""A/A calibration: does the verdict call differences between identical cells, and do its intervals cover?

    python bench/aa_calibration.py [--runs 20] [--repeat auto] [--budget 60] [--json-dir DIR]

Each run is a fresh matrix of the built-in conv workload (a few ms per
iteration) with two cells identical but for an unused environment variable,
plus the A/A control every run has, measured like any other run (--repeat
auto by default). Any difference called between the two cells is a false
one. Printed: per run, the ratio between the two cells with its interval and
outcome, and the band the control supported; then how many runs called a
difference (target: at most 1 of 20) and the coverage: how often a run's
per-cell value lies inside the previous run's 95% interval of that cell
(target: at least 90%).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from benchctl.results import queries
from benchctl.run import runner
from benchctl.run.options import repeat_type

CELLS = {"env": ["BENCHCTL_AA_ARM=1", "BENCHCTL_AA_ARM=2"]}
# About 3 ms per iteration on the 2-core development machine.
CONV = {"channels": 64, "size": 64, "iterations": 30}
PHASE = "forward"


def one_run(index: int, repeat, budget_s: float, json_dir: str) -> dict:
    """One A/A matrix; returns the figures this calibration reads from it."""
    path = os.path.join(json_dir, f"aa-{index:02d}.json")
    doc = runner.run_matrix("conv", CONV, CELLS, repeat=repeat, budget_s=budget_s, json_path=path,
                            progress=False)
    return {"path": path, **figures(doc)}


def figures(doc: dict) -> dict:
    """What the calibration reads from one A/A run's document."""
    a, b = ({"env": queries.baseline(doc)["env"]}, {"env": doc["matrix"]["env"][1]})
    cmp = queries.Comparisons(doc).compare(PHASE, b, a)
    control = queries.control(doc, PHASE)
    cells = {}
    for cell in (a, b):
        entry = queries.summary_entry(doc, PHASE, cell)
        cells[json.dumps(cell["env"], sort_keys=True)] = (entry["median_ms"], entry["ci95_ms"])
    called = [f for f in doc["verdict"] if f["significant"]]
    return {"cmp": cmp, "band": control["band"] if control else None, "cells": cells,
            "called": called, "processes": len(doc["runs"]), "stopped": doc.get("stopped")}


def _coverage(results: list[dict]) -> tuple[int, int]:
    """(hits, trials): a cell's value in run i inside run i-1's interval of that cell."""
    hits = trials = 0
    for before, after in zip(results, results[1:]):
        for env, (value, _) in after["cells"].items():
            lo, hi = before["cells"][env][1]
            if lo is None or hi is None:
                continue
            trials += 1
            hits += lo <= value <= hi
    return hits, trials


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="A/A matrices to run (default 20)")
    p.add_argument("--repeat", type=repeat_type, default="auto", help="processes per cell, or auto (default)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds per run (default 60)")
    p.add_argument("--json-dir", default=None, help="keep each run's results file here (default: a temp dir)")
    opts = p.parse_args(argv)
    if opts.runs < 2:
        p.error("--runs must be at least 2 (coverage compares consecutive runs)")
    json_dir = opts.json_dir or tempfile.mkdtemp(prefix="benchctl-aa-")
    os.makedirs(json_dir, exist_ok=True)
    print(f"{opts.runs} A/A runs of conv {CONV}, cells {CELLS['env']}, repeat {opts.repeat}, "
          f"budget {opts.budget:.0f} s each; results in {json_dir}")
    started = time.perf_counter()
    results = []
    for i in range(opts.runs):
        r = one_run(i, opts.repeat, opts.budget, json_dir)
        results.append(r)
        cmp = r["cmp"]
        ci = "no interval" if cmp["ci95"] is None else f"[{cmp['ci95'][0]:.3f}, {cmp['ci95'][1]:.3f}]"
        band = "n/a" if r["band"] is None else f"±{r['band']:.0%}"
        print(f"run {i + 1:2d}: {r['processes']:2d} workers; arm 2/arm 1 = {cmp['ratio']:.3f} {ci} "
              f"{cmp['outcome']:11s} band {band}; findings called: {len(r['called'])}; stopped: {r['stopped']}",
              flush=True)
    false_calls = sum(1 for r in results if r["called"])
    hits, trials = _coverage(results)
    print(f"runs that called a difference between identical cells: {false_calls} of {len(results)} (target <= 1)")
    print(f"coverage of the previous run's 95% interval: {hits} of {trials} = {hits / max(trials, 1):.0%} "
          f"(target >= 90%)")
    print(f"took {(time.perf_counter() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
