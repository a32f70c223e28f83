#!/usr/bin/env python3
"""A/A calibration: does the verdict call differences between identical cells, and do its intervals cover?

    python bench/aa_calibration.py [--runs 20] [--repeat auto] [--budget 60] [--no-fork] [--paired] [--first-rounds N]
                                   [--json-dir DIR]
    python bench/aa_calibration.py --from-dir DIR

Each run is a fresh matrix of the built-in conv workload (a few ms per
iteration) with two cells identical but for an unused environment variable,
plus the A/A control every run has, measured like any other run (--repeat
auto by default). Any difference called between the two cells is a false
one. Printed: per run, the ratio between the two cells with its interval and
outcome, and the band the control supported; then how many runs called a
difference (target: at most 1 of 20) and the coverage: how often a run's
per-cell value lies inside the previous run's 95% interval of that cell.
That coverage is judged against what exactly calibrated 95% intervals would
give, printed beside it (the next run's value has its own noise, so with
equal widths that is about 83%, not 95%; with these runs' widths it is
computed); a fixed target above it would fail perfect intervals. And how often a
run's interval holds the median of all runs' values of that cell (the best
estimate of the true value here; calibrated intervals hold it about 95% of
the time). ``--paired``: the second cell is ``with=[ftz=off]`` instead, the value a fresh process
already holds, so the runner times it paired with the first in the first's processes (switching
FTZ/DAZ off on every thread between blocks, which changes nothing): the paired rule's own A/A.
``--from-dir`` judges an earlier call's saved runs again, by this
version's rules, and prints their figures.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import statistics
import tempfile
import time

from benchctl._results import analysis, document, queries
from benchctl._results.findings import Finding
from benchctl._run import runner
from benchctl._cli.options import repeat_type

CELLS = {"env": ["BENCHCTL_AA_ARM=1", "BENCHCTL_AA_ARM=2"]}
# Identical too, but timed paired: ftz=off is what a fresh process holds (the setting's unapplied value).
PAIRED_CELLS = {"with": [{}, {"ftz": "off"}]}
# About 3 ms per iteration on the 2-core development machine.
CONV = {"channels": 64, "size": 64, "iterations": 30}
PHASE = "forward"


def one_run(index: int, repeat, budget_s: float, json_dir: str, fork: bool, paired: bool = False,
            first_rounds: int | None = None) -> dict:
    """One A/A matrix; returns the figures this calibration reads from it."""
    path = os.path.join(json_dir, f"aa-{index:02d}.json")
    doc = runner.run_matrix("conv", CONV, PAIRED_CELLS if paired else CELLS, repeat=repeat, budget_s=budget_s,
                            json_path=path, progress=False, fork=fork, paired=paired, first_rounds=first_rounds)
    return {"path": path, **figures(doc)}


def figures(doc: dict) -> dict:
    """What the calibration reads from one A/A run's document."""
    key = next(iter(doc["matrix"]))
    a, b = ({key: doc["matrix"][key][0]}, {key: doc["matrix"][key][1]})
    cmp = queries.Comparisons(doc).compare(PHASE, b, a)
    control = queries.control(doc, PHASE)
    cells = {}
    for cell in (a, b):
        entry = queries.summary_entry(doc, PHASE, cell)
        cells[json.dumps(cell[key], sort_keys=True)] = (entry["median_ms"], entry["ci95_ms"])
    called = [f for f in map(Finding.from_json, doc["verdict"]) if f.comparison and f.comparison.beyond_band]
    if queries.is_paired(doc, b):
        control = queries.paired_control(doc, PHASE)
    return {"cmp": cmp, "band": control.band if control else None, "cells": cells,
            "called": called, "processes": len(doc["runs"]), "stopped": doc.get("stopped")}


def _consecutive(results: list[dict]):
    """(previous run's interval, this run's value, this run's interval) of each cell, where both have one."""
    for before, after in zip(results, results[1:]):
        for env, (value, interval) in after["cells"].items():
            previous = before["cells"][env][1]
            if None not in previous and None not in interval:
                yield previous, value, interval


def _coverage(results: list[dict]) -> tuple[int, int]:
    """(hits, trials): a cell's value in run i inside run i-1's interval of that cell."""
    pairs = list(_consecutive(results))
    return sum(lo <= value <= hi for (lo, hi), value, _ in pairs), len(pairs)


def _sigma(interval) -> float:
    """The standard error on the log scale that a 95% interval of this width implies (normal approximation)."""
    lo, hi = interval
    return math.log(hi / lo) / (2 * 1.96)


def _calibrated_coverage(results: list[dict]) -> float:
    """Hits :func:`_coverage` would expect if every interval were an exact 95% interval: the next run's value
    differs from the previous one by both runs' noise, so P = 2 Phi(1.96 s1 / sqrt(s1^2 + s2^2)) - 1."""
    expected = 0.0
    for previous, _, interval in _consecutive(results):
        s1, s2 = _sigma(previous), _sigma(interval)
        expected += math.erf(1.96 * s1 / math.hypot(s1, s2) / math.sqrt(2))
    return expected


def _coverage_of_all_runs(results: list[dict]) -> tuple[int, int]:
    """(hits, trials): a run's interval of a cell holds the median of every run's value of that cell."""
    hits = trials = 0
    for env in results[0]["cells"]:
        center = statistics.median(r["cells"][env][0] for r in results)
        for r in results:
            lo, hi = r["cells"][env][1]
            if lo is not None and hi is not None:
                trials += 1
                hits += lo <= center <= hi
    return hits, trials


def _print_run(i: int, r: dict) -> None:
    cmp = r["cmp"]
    ci = "no interval" if cmp.ci95 is None else f"[{cmp.ci95[0]:.3f}, {cmp.ci95[1]:.3f}]"
    band = "n/a" if r["band"] is None else f"±{r['band']:.0%}"
    print(f"run {i + 1:2d}: {r['processes']:2d} workers; arm 2/arm 1 = {cmp.ratio:.3f} {ci} "
          f"{cmp.outcome.value:11s} band {band}; findings called: {len(r['called'])}; stopped: {r['stopped']}",
          flush=True)


def _print_totals(results: list[dict]) -> None:
    false_calls = sum(1 for r in results if r["called"])
    hits, trials = _coverage(results)
    print(f"runs that called a difference between identical cells: {false_calls} of {len(results)} (target <= 1)")
    print(f"coverage of the previous run's 95% interval: {hits} of {trials} = {hits / max(trials, 1):.0%} "
          f"(exactly calibrated 95% intervals would give about {_calibrated_coverage(results):.1f} of {trials})")
    hits, trials = _coverage_of_all_runs(results)
    print(f"coverage of the median of all runs: {hits} of {trials} = {hits / max(trials, 1):.0%} of the runs' "
          "95% intervals hold it (calibrated: about 95%)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="A/A matrices to run (default 20)")
    p.add_argument("--repeat", type=repeat_type, default="auto", help="processes per cell, or auto (default)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds per run (default 60)")
    p.add_argument("--no-fork", dest="fork", action="store_false",
                   help="start every worker's interpreter afresh (default: forked from one server per cell "
                        "environment, so the two cells' workers come from two servers)")
    p.add_argument("--paired", action="store_true",
                   help="the second cell with=[ftz=off], timed paired with the first in its processes (the paired "
                        "rule's A/A; default: two cells differing in an unused variable, each in its own processes)")
    p.add_argument("--first-rounds", type=int, default=None, metavar="N",
                   help="under --repeat auto, the rounds before the first judgement (default 3; explain runs 5 "
                        "where every probe is paired and its budget sizes the workers)")
    p.add_argument("--json-dir", default=None, help="keep each run's results file here (default: a temp dir)")
    p.add_argument("--from-dir", default=None, metavar="DIR",
                   help="run nothing: judge the runs an earlier call saved in DIR (its aa-NN.json) again, "
                        "by this version's rules, and print their figures")
    opts = p.parse_args(argv)
    if opts.from_dir:
        paths = sorted(glob.glob(os.path.join(opts.from_dir, "aa-[0-9][0-9].json")))
        if len(paths) < 2:
            p.error(f"--from-dir {opts.from_dir}: fewer than 2 saved runs (aa-NN.json) there")
        # Judged again by this version's rules, not read from the verdict the file was saved with.
        results = [{"path": path, **figures(analysis.analyse(document.load(path)))} for path in paths]
        for i, r in enumerate(results):
            _print_run(i, r)
        _print_totals(results)
        return 0
    if opts.runs < 2:
        p.error("--runs must be at least 2 (coverage compares consecutive runs)")
    json_dir = opts.json_dir or tempfile.mkdtemp(prefix="benchctl-aa-")
    os.makedirs(json_dir, exist_ok=True)
    cells = PAIRED_CELLS if opts.paired else CELLS
    print(f"{opts.runs} A/A runs of conv {CONV}, cells {cells}{' (paired)' if opts.paired else ''}, "
          f"repeat {opts.repeat}{'' if opts.first_rounds is None else f', first rounds {opts.first_rounds}'}, "
          f"budget {opts.budget:.0f} s each; results in {json_dir}")
    started = time.perf_counter()
    results = []
    for i in range(opts.runs):
        results.append(one_run(i, opts.repeat, opts.budget, json_dir, opts.fork, opts.paired, opts.first_rounds))
        _print_run(i, results[-1])
    _print_totals(results)
    print(f"took {(time.perf_counter() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
