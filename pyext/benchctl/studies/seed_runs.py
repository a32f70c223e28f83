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
import sys
import time
from typing import Any, Callable

from .. import _validate, settings
from ..results import document, plot, processes, report, verdict, wording
from ..run import rounds, runner, slurm
from ..run.options import add_matrix_arguments
from . import penalty
from .causes.base import MARKS
from .causes.denormals import penalty_evidence

__all__ = ["RESULTS_DIR", "apply_sets", "count_cells", "add_output_arguments", "parse_seed_arguments", "on_slurm",
           "penalty_profile_evidence", "format_answer", "run_and_explain"]

RESULTS_DIR = "results"


def apply_sets(matrix: dict[str, list], sets: list[str]) -> dict[str, list]:
    """``--set NAME=V1,V2`` items over a default matrix: a new NAME adds an axis,
    an existing one is replaced (so ``--set alloc=retain`` narrows it)."""
    out = {k: list(v) for k, v in matrix.items()}
    seen = set()
    for item in sets:
        key, values = settings.parse_assignment(item)
        if key in seen:
            raise _validate.ArgumentError(f"--set {key}=... given twice; list all its values in one --set")
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


def add_output_arguments(parser, workload: str, budget_s: float) -> None:
    """The options both seed scripts share: processes, budget and control, where results go,
    resuming, the penalty profile."""
    add_matrix_arguments(parser, repeat=rounds.AUTO, budget_s=budget_s)
    slurm.add_executor_arguments(parser)
    parser.add_argument("--json", dest="json_path", help=f"results file (default results/{workload}-<time>.json)")
    parser.add_argument("--plot", help="write a PNG of per-iteration times and box plots per cell")
    parser.add_argument("--resume", action="store_true", help="continue the interrupted --json FILE (same arguments)")
    parser.add_argument("--skip-penalty", action="store_true",
                        help="do not measure the CPU's penalty profile (faster; the verdict then lacks that evidence)")


def parse_seed_arguments(parser, argv):
    """Parse, and refuse --resume without the file it continues."""
    opts = parser.parse_args(argv)
    opts.argv = list(sys.argv[1:] if argv is None else argv)
    if opts.resume and not opts.json_path:
        parser.error("--resume needs --json FILE: the results file to continue")
    return opts


def on_slurm(parser, opts, script: str) -> int | None:
    """With ``--executor slurm``, run this script on every host and return its exit status; else None."""
    try:
        if not slurm.use_slurm(opts):
            return None
        return slurm.run_with_executor(opts, argv=opts.argv, program=[sys.executable, "-u", os.path.abspath(script)])
    except slurm.ExecutorError as e:
        parser.error(str(e))


def penalty_profile_evidence(ops: tuple[str, ...]) -> dict[str, Any]:
    """The CPU's penalty profile for ``ops``, raw and as the verdict rules read it, or why it is missing."""
    started = time.perf_counter()
    try:
        profile = penalty.profile(ops=list(ops))
    except RuntimeError as exc:  # no FP control on this CPU: the profile cannot compare FTZ off/on
        return {"penalty": None, "penalty_unavailable": str(exc)}
    return {
        "penalty": penalty_evidence(profile),
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


def _mark(finding: dict) -> str:
    status = (finding.get("evidence") or {}).get("status")
    if status in MARKS:  # a finding of the cause library says its own mark
        return MARKS[status]
    if finding.get("outcome") == processes.UNRESOLVED or finding["rule"] in verdict.UNRESOLVED_RULES:
        return "?"
    return "*" if finding.get("explains") else "-"


def _comparison_key(finding: dict) -> tuple:
    """What a finding compares: its phase, setting and two cells."""
    return (finding.get("phase"), finding.get("setting"), document.cell_id(finding.get("a")),
            document.cell_id(finding.get("b")))


def format_answer(doc: dict, seed_rules: tuple[str, ...]) -> str:
    """The answer: every seed rule's finding (they answer the seed's question), then the
    runner's findings that explain a difference or leave the focus gap unresolved. ``*``
    marks a measured effect and what explains it, ``-`` an effect ruled out and why, ``?``
    an effect left unresolved (with its interval)."""
    seeds = [f for f in doc["verdict"] if f["rule"] in seed_rules]
    runner_side = [f for f in doc["verdict"] if f["rule"] not in seed_rules and (
        f.get("explains") or f["rule"] in verdict.UNRESOLVED_RULES
        or (f["rule"] == "gap" and f.get("outcome") == processes.UNRESOLVED))]
    # The gap, then the gap with what a setting does to it: a finding whose message only begins a
    # longer one of the same phase is said once, in the longer.
    runner_side = [f for f in runner_side if not any(
        g["phase"] == f["phase"] and len(g["message"]) > len(f["message"]) and g["message"].startswith(f["message"])
        for g in runner_side)]
    # A seed rule that judged the same two cells for the same setting (the allocator cause and the
    # runner's alloc=retain finding) already said it, with its evidence.
    said = {_comparison_key(f) for f in seeds if f.get("setting")}
    runner_side = [f for f in runner_side if _comparison_key(f) not in said]
    if not runner_side and not seeds:
        if doc["verdict"]:
            return ("Answer: no setting explains a difference this run resolves (see the verdict above); "
                    "more processes (--repeat, --budget) may resolve one")
        return ("Answer: no finding: no two cells to compare (a one-value matrix, "
                "or too few successful runs)")
    lines = ["Answer (* an effect measured and what explains it, - an effect ruled out and why, "
             "? unresolved: not enough processes to say):"]
    lines += [f" {_mark(f)} {f['message']}" for f in seeds]
    lines += [f" {_mark(f)} [{f['phase']}] {f['message']}" for f in runner_side]
    return "\n".join(lines)


def _load_resumed(json_path: str) -> tuple[dict, dict]:
    """The matrix and evidence a resumed file was started with (its pre-checks are not redone)."""
    doc = document.load(json_path)
    return doc["matrix"], doc.get("evidence") or {}


def _drop(matrix: dict[str, list], ruled_out: list[dict]) -> dict[str, list]:
    """``matrix`` without the values the pre-checks ruled out (an axis keeps at least one value)."""
    out = {k: list(v) for k, v in matrix.items()}
    for finding in ruled_out:
        for key, values in finding["evidence"]["dropped"].items():
            kept = [v for v in out.get(key, []) if v not in values]
            if key in out and kept:
                out[key] = kept
    return out


def _prechecks(matrix, precheck, evidence, fixed_keys, out) -> tuple[dict[str, list], list[dict]]:
    """Run the cheap pre-checks that can rule a setting out; drop its cells unless the user chose them."""
    if precheck is None:
        return matrix, []
    ruled_out = [f for f in precheck(matrix, evidence.get("penalty"))
                 if not set(f["evidence"]["dropped"]) & set(fixed_keys)]
    for f in ruled_out:
        print(f"ruled out before running: {f['message']}", file=out)
    return _drop(matrix, ruled_out), ruled_out


def run_and_explain(workload: str, args: dict, matrix: dict[str, list], *, repeat: int | str,
                    budget_s: float | None, control: bool, json_path: str | None, plot_path: str | None,
                    focus: str, seed_rules: Callable[[dict], list[dict]], penalty_ops: tuple[str, ...],
                    measure_penalty: bool = True, precheck: Callable | None = None, fixed_keys=(),
                    resume: bool = False, out=sys.stdout) -> dict:
    """Measure the evidence, rule out what it can, run the matrix, explain, save and print.

    The penalty profile is measured first, in this process, before any worker
    runs (so it never competes with a cell); ``precheck(matrix, penalty)``
    may then return findings that rule a setting out (each with
    ``evidence["dropped"]``), whose cells are not run, unless the user named
    that axis (``fixed_keys``). ``budget_s`` covers all of it. ``resume``
    continues ``json_path`` with the matrix and evidence it was started with.
    Returns the results document.
    """
    if resume and not json_path:
        raise _validate.ArgumentError("--resume needs --json FILE: the results file to continue")
    started = time.perf_counter()
    json_path = json_path or _default_json_path(workload)
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    if resume:
        matrix, evidence = _load_resumed(json_path)
        ruled_out = evidence.get("ruled_out", [])
    else:
        evidence = (penalty_profile_evidence(penalty_ops) if measure_penalty else
                    {"penalty": None, "penalty_unavailable": "skipped (--skip-penalty)"})
        matrix, ruled_out = _prechecks(matrix, precheck, evidence, fixed_keys, out)
        evidence["ruled_out"] = ruled_out
    cells = count_cells(matrix)
    start = f"{rounds.AUTO_START} processes per cell, then more for unresolved comparisons" \
        if repeat == rounds.AUTO else f"{repeat} process(es) per cell"
    print(f"{workload}: {cells} cells, {start}, each in a fresh process, plus the baseline again as an A/A "
          f"control{'' if control else ' (off)'}; matrix "
          + ", ".join(f"{k}={{{','.join(map(str, v))}}}" for k, v in matrix.items())
          + (f"; budget {budget_s:.0f} s" if budget_s else ""), file=out)
    print(f"results: {json_path} (rewritten after every worker; after an interruption "
          f"--resume --json {json_path} continues it)", file=out, flush=True)
    left = None if budget_s is None else max(1.0, budget_s - (time.perf_counter() - started))
    doc = runner.run_matrix(workload, args, matrix, repeat=repeat, json_path=json_path, focus=focus,
                            resume=resume, control=control, budget_s=left)
    doc["evidence"] = evidence
    seed_findings = ruled_out + seed_rules(doc)
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
