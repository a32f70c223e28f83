"""Run a seed workload's settings matrix and answer its question: the code
behind ``bench/resnet_order.py`` and ``bench/zero_weights.py``.

:func:`run_and_explain` runs the matrix with :func:`benchctl.run.runner.run_matrix`
(each cell and repetition in a fresh process), measures the CPU's penalty
profile in this process afterwards (so it never competes with a cell), adds
the seed's verdict rules (:mod:`.seed_rules`) to the runner's generic ones,
saves the document, and prints the report and the answer.
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
import sys
import time
from typing import Any, Callable

from .. import settings
from ..results import document, plot, report, wording
from ..run import runner
from . import penalty, seed_rules

__all__ = ["RESULTS_DIR", "PENALTY_SECONDS_PER_OP", "MAX_DEFAULT_REPEAT", "apply_sets", "count_cells",
           "measure_interpreter_seconds", "add_output_arguments", "parse_seed_arguments", "fit_repeat",
           "choose_repeat", "penalty_profile_evidence", "format_answer", "run_and_explain"]

RESULTS_DIR = "results"
# Planning figure for penalty_profile_evidence(): about 0.5 s per op was measured
# on the 2-core development machine; twice that leaves room for a busy one.
PENALTY_SECONDS_PER_OP = 1.0
MAX_DEFAULT_REPEAT = 3


def apply_sets(matrix: dict[str, list], sets: list[str]) -> dict[str, list]:
    """``--set NAME=V1,V2`` items over a default matrix: a new NAME adds an axis,
    an existing one is replaced (so ``--set alloc=retain`` narrows it)."""
    out = {k: list(v) for k, v in matrix.items()}
    seen = set()
    for item in sets:
        key, values = settings.parse_assignment(item)
        if key in seen:
            raise ValueError(f"--set {key}=... given twice; list all its values in one --set")
        seen.add(key)
        out[key] = values
    return out


def _default_json_path(workload: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join(RESULTS_DIR, f"{workload}-{stamp}.json")


def count_cells(matrix: dict[str, list]) -> int:
    n = 1
    for values in matrix.values():
        n *= len(values)
    return n


def measure_interpreter_seconds() -> float:
    """Seconds a fresh worker spends starting Python and importing torch, torchvision and benchctl."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch, torchvision, benchctl.workloads, benchctl.run.worker"],
                   check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def add_output_arguments(parser, workload: str) -> None:
    """The options both seed scripts share: where results go, resuming, the penalty profile."""
    parser.add_argument("--json", dest="json_path", help=f"results file (default results/{workload}-<time>.json)")
    parser.add_argument("--plot", help="write a PNG of per-iteration times and box plots per cell")
    parser.add_argument("--resume", action="store_true", help="continue the interrupted --json FILE (same arguments)")
    parser.add_argument("--skip-penalty", action="store_true",
                        help="do not measure the CPU's penalty profile (faster; the verdict then lacks that evidence)")


def parse_seed_arguments(parser, argv):
    """Parse, and refuse --resume without the file it continues."""
    opts = parser.parse_args(argv)
    if opts.resume and not opts.json_path:
        parser.error("--resume needs --json FILE: the results file to continue")
    return opts


def fit_repeat(cell_seconds: float, cells: int, budget_s: float, minimum: int = 1) -> int:
    """Repetitions per cell that fit ``budget_s`` (at least ``minimum``, at most MAX_DEFAULT_REPEAT)."""
    room = budget_s / max(cell_seconds * cells, 1e-9)
    return max(minimum, min(MAX_DEFAULT_REPEAT, int(room)))


def choose_repeat(cell_seconds: float, cells: int, budget_s: float, minimum: int = 2, out=sys.stdout) -> int:
    """Repetitions for a seed script's default run: what fits ``budget_s``, but at least
    ``minimum`` (two processes per cell are what lets a CI carry between-process
    variation), saying so when the minimum overruns the budget."""
    repeat = fit_repeat(cell_seconds, cells, budget_s, minimum=minimum)
    if repeat * cells * cell_seconds > budget_s:
        print(f"note: {minimum} processes per cell, the minimum for an honest CI, take longer than the "
              f"{budget_s / 60:.1f}-minute budget on this machine", file=out)
    return repeat


def penalty_profile_evidence(ops: tuple[str, ...]) -> dict[str, Any]:
    """The CPU's penalty profile for ``ops``, raw and as the verdict rules read it, or why it is missing."""
    started = time.perf_counter()
    try:
        profile = penalty.profile(ops=list(ops))
    except RuntimeError as exc:  # no FP control on this CPU: the profile cannot compare FTZ off/on
        return {"penalty": None, "penalty_unavailable": str(exc)}
    return {
        "penalty": seed_rules.penalty_evidence(profile),
        "penalty_profile": profile,
        "penalty_seconds": time.perf_counter() - started,
    }


def _format_values(doc: dict) -> str:
    """Which weights each distinct setup used, and their subnormal census (from the runs' notes)."""
    lines, seen = [], set()
    for run in doc["runs"]:
        notes = run.get("notes") or {}
        if run.get("status") != "ok" or "weights_census" not in notes:
            continue
        weights = notes.get("weights") or {}
        census = notes["weights_census"]
        text = (f"{census['subnormal']:,} of {census['values']:,} values subnormal"
                if census.get("available", True) else f"census unavailable: {census.get('reason')}")
        line = f" weights {weights.get('used', run['cell'].get('init', '?'))}: {text}"
        if weights.get("why"):
            line += f" ({weights['why']})"
        if line not in seen:
            seen.add(line)
            lines.append(line)
    return "Values:\n" + "\n".join(lines) if lines else ""


def format_answer(doc: dict, seed_rules: tuple[str, ...]) -> str:
    """The answer: every seed rule's finding (they answer the seed's question), then the
    runner's findings that explain a difference. ``*`` marks a measured effect and
    what explains it, ``-`` an effect ruled out and why."""
    explaining = [f for f in doc["verdict"] if f.get("explains") and f["rule"] not in seed_rules]
    seeds = [f for f in doc["verdict"] if f["rule"] in seed_rules]
    if not explaining and not seeds:
        if doc["verdict"]:
            return ("Answer: no setting explains a significant difference (see the verdict above); with few "
                    "iterations per cell the tests cannot resolve one: raise --repeat or --num-data")
        return ("Answer: no finding: no two cells to compare (a one-value matrix, "
                "or too few successful runs)")
    lines = ["Answer (* an effect measured and what explains it, - an effect ruled out and why):"]
    lines += [f" {'*' if f.get('explains') else '-'} {f['message']}" for f in seeds]
    lines += [f" * [{f['phase']}] {f['message']}" for f in explaining]
    return "\n".join(lines)


def run_and_explain(workload: str, args: dict, matrix: dict[str, list], *, repeat: int, json_path: str | None,
                    plot_path: str | None, focus: str, seed_rules: Callable[[dict], list[dict]],
                    penalty_ops: tuple[str, ...], cell_seconds: float | None, measure_penalty: bool = True,
                    resume: bool = False, out=sys.stdout) -> dict:
    """Run, explain, save and print; returns the results document.

    ``resume`` continues ``json_path`` left by an interrupted run (same
    workload, arguments and matrix): only the missing runs are started."""
    if resume and not json_path:
        raise ValueError("--resume needs --json FILE: the results file to continue")
    json_path = json_path or _default_json_path(workload)
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    cells = count_cells(matrix)
    print(f"{workload}: {cells} cells × {repeat} repetition(s), each in a fresh process; matrix "
          + ", ".join(f"{k}={{{','.join(map(str, v))}}}" for k, v in matrix.items()), file=out)
    if cell_seconds is not None:
        penalty_s = PENALTY_SECONDS_PER_OP * len(penalty_ops) if measure_penalty else 0.0
        expected = cells * repeat * cell_seconds + penalty_s
        print(f"expected duration ≈ {wording.duration(expected)}: {cells * repeat} workers × ~{cell_seconds:.0f} s "
              f"(probed in this process)" + (f" + ~{penalty_s:.0f} s penalty profile" if penalty_s else ""),
              file=out)
    print(f"results: {json_path} (rewritten after every cell; after an interruption "
          f"--resume --json {json_path} continues it)", file=out, flush=True)

    started = time.perf_counter()
    doc = runner.run_matrix(workload, args, matrix, repeat=repeat, json_path=json_path, focus=focus,
                            resume=resume)
    doc["evidence"] = (penalty_profile_evidence(penalty_ops) if measure_penalty else
                       {"penalty": None, "penalty_unavailable": "skipped (--skip-penalty)"})
    seed_findings = seed_rules(doc)
    doc["verdict"] = list(doc.get("verdict") or []) + seed_findings
    document.save(doc, json_path)
    print(report.format_report(doc), file=out)
    values = _format_values(doc)
    if values:
        print(values, file=out)
    if plot_path:
        plot.plot(doc, plot_path)
        print(f"plot: {plot_path}", file=out)
    print(format_answer(doc, tuple({f["rule"] for f in seed_findings})), file=out)
    print(f"took {wording.duration(time.perf_counter() - started)}; results in {json_path}", file=out)
    return doc
