"""Human-readable views of a results document: tables, noise, values, and a comparison of two files.

:func:`format_report` prints, per phase, the run's measured noise (the A/A
control: how far two identical arms differ, hence which differences this
run can resolve) and a table of the cells, each described over its fresh
processes (geometric mean of per-process medians, its t interval, how much
iterations vary within a process and processes between them, faults and
migrations per iteration, and the ratio against a baseline cell with the
comparison's mark; under it, a process far slower than its cell's others that
nothing counted explains, :mod:`.outlying`); then the workers that shared the CPUs with other work, the
rounds of ``--repeat auto``, the failed workers, and the values the runs
counted. The findings are the answer's (:mod:`.answer`), printed after it.
:func:`format_comparison` sets two documents side by side (e.g. two machines).
"""

from __future__ import annotations

import math
from typing import Any

from .. import settings as _settings
from . import contention_gate, outlying, processes, queries, summary, wording
from .tables import TimeUnit, format_table, time_unit
from .comparison import FLOOR, MAX_NO_EFFECT_BAND
from .document import CONTROL_ARM, PAIRED_ARM, cell_id

__all__ = ["format_report", "format_values", "format_comparison"]


def _ratio_cell(comparisons: queries.Comparisons, phase: str, entry: dict, base: dict) -> str:
    if cell_id(entry["cell"]) == cell_id(base) and entry.get("arm") is None:
        return "baseline"
    if entry.get("arm") in (CONTROL_ARM, PAIRED_ARM):
        ctl = comparisons.control(phase) if entry["arm"] == CONTROL_ARM else comparisons.paired_control(phase)
        return ctl.comparison.table_text() if ctl else "n/a"
    cmp = comparisons.compare(phase, entry["cell"], base)
    # The same comparison and test as the rules', so the table never contradicts the answer.
    return "n/a" if cmp is None else cmp.table_text()


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _spread(log_sd: float | None) -> str:
    return "n/a" if log_sd is None else f"{100 * math.expm1(log_sd):.1f}%"


def _seconds(ms: float | None) -> float | None:
    """A summary's milliseconds in seconds, the unit tables read."""
    return None if ms is None else ms * 1e-3


def _row(doc: dict, e: dict, phase: str, base: dict, comparisons: queries.Comparisons, median: TimeUnit,
         ci: TimeUnit) -> list[str]:
    keys = list(doc["matrix"])
    return [
        summary.label({k: e["cell"][k] for k in keys}, e.get("arm"))
        + (f" {summary.PAIRED_LABEL}" if e.get("paired") and e.get("arm") is None else ""),
        str(e.get("processes", e.get("repetitions", "?"))),
        median.text(_seconds(e["median_ms"])),
        ci.interval([_seconds(v) for v in e["ci95_ms"]]),
        _share(e.get("within_iqr_over_median", e.get("iqr_over_median"))),
        _spread(e.get("between_process_log_sd")),
        wording.count(e.get("minor_faults_per_iter")),
        wording.count(e.get("cpu_migrations_per_iter")),
        _ratio_cell(comparisons, phase, e, base),
    ]


def _phase_table(doc: dict, phase: str, base: dict, comparisons: queries.Comparisons) -> list[str]:
    entries = [e for e in doc["summary"] if e["phase"] == phase]
    if not entries:
        return []
    median = time_unit(_seconds(e["median_ms"]) for e in entries)
    ci = time_unit(_seconds(v) for e in entries for v in e["ci95_ms"])
    rows = [_row(doc, e, phase, base, comparisons, median, ci) for e in entries]
    header = ["cell", "proc", median.header("median"), ci.header("95% CI"), "within", "between", "faults/iter",
              "migr/iter", "vs baseline [95% CI]"]
    lines = ["", f"phase {phase}", *_noise_lines(doc, phase, comparisons), *_paired_lines(doc, phase, comparisons),
             *format_table(rows, header)]
    for e, row in zip(entries, rows):
        lines += [f"  note [{row[0]}]: {flag}" for flag in e.get("flags", [])]
        slowed = outlying.outlying_process(doc, phase, e["cell"], e.get("arm"))
        if slowed is not None:
            lines.append(f"  note [{row[0]}]: {slowed.describe()}")
        if e.get("from_paired_processes"):
            own = e["processes"] - e["from_paired_processes"]
            lines.append(f"  note [{row[0]}]: {f'{own} process(es) of its own and ' if own else ''}arm A of "
                         f"{e['from_paired_processes']} paired process(es) (the baseline's settings timed there)"
                         f"{'' if own else ', none of its own'}: every cell is timed paired with it")
    return lines


def _noise_lines(doc: dict, phase: str, comparisons: queries.Comparisons) -> list[str]:
    """What the run's A/A control measured in ``phase``, and the band no difference inside is called."""
    if not doc.get("control") and doc.get("paired"):
        return [f"  no fresh-process A/A control: every cell is marked {summary.PAIRED_LABEL} and judged against "
                "the paired one"]
    if not doc.get("control"):
        return [f"  no A/A control in this run: differences are judged against the {FLOOR:.0%} floor only, "
                "not against this run's own noise"]
    ctl = comparisons.control(phase)
    if ctl is None:
        runs = queries.ok_runs(doc, doc["control"]["cell"])
        why = ("its cell does not run this phase" if runs and all(phase not in r["phases"] for r in runs)
               else "an arm has no successful process in this phase")
        return [f"  A/A control: {why}: differences are judged against the {FLOOR:.0%} floor only"]
    cmp = ctl.comparison
    if cmp.ci95 is None:
        return [f"  A/A control: arm B/arm A = {wording.factor(cmp.ratio)}× with one process an arm: this run's "
                f"noise is unmeasured; differences are judged against the {FLOOR:.0%} floor"]
    head = (f"  A/A control: the baseline cell run as two arms ({cmp.k_b} and {cmp.k_a} processes), "
            f"arm B/arm A = {cmp.ratio_text()}")
    if ctl.unreliable:
        return [head, f"  UNRELIABLE: two identical arms differ beyond the {FLOOR:.0%} floor, so this phase's "
                      "processes disagree more than their own spread says; no effect is called in it"]
    resolves = (f"  this run resolves differences of {ctl.resolves:.0%} or more in this phase between two "
                f"cells of {cmp.k_b} and {cmp.k_a} processes as noisy as the arms: identical processes "
                f"differ by {ctl.band:.0%} here (the arms' standard deviation, at least the {FLOOR:.0%} "
                f"floor), no difference is called unless its 95% CI lies wholly beyond ±{ctl.band:.0%}, and "
                f"comparisons with the baseline count both arms' {cmp.k_a + cmp.k_b} processes")
    if ctl.band > MAX_NO_EFFECT_BAND:
        resolves += (f"; identical processes differ too much here to say 'no effect' (over "
                     f"{MAX_NO_EFFECT_BAND:.0%}): add processes or quiet the machine")
    return [head, resolves]


def _paired_lines(doc: dict, phase: str, comparisons: queries.Comparisons) -> list[str]:
    """What the paired A/A control measured in ``phase``: the band paired comparisons are judged against."""
    if not doc.get("paired"):
        return []
    ctl = comparisons.paired_control(phase)
    if ctl is None:
        return [f"  paired A/A control: no paired process of it in this phase: the cells marked "
                f"{summary.PAIRED_LABEL} are judged against the {FLOOR:.0%} floor only"]
    cmp = ctl.comparison
    head = (f"  paired A/A control: the baseline timed by {cmp.k_a} paired process(es) with nothing switched, "
            f"arm B/arm A = {cmp.ratio_text()}")
    if ctl.unreliable:
        return [head, "  UNRELIABLE: the same cell differs from itself between the arms of a paired process; "
                      "no effect is called for a paired cell in this phase"]
    return [head, f"  the cells marked {summary.PAIRED_LABEL} ran in the baseline's processes, switched between "
                  f"blocks of iterations: each process gives one ratio taken inside it, judged against "
                  f"±{ctl.band:.0%} (the paired control's standard deviation, at least the {FLOOR:.0%} floor)"]


def _beside_lines(doc: dict) -> list[str]:
    """The workers that shared the CPUs with other work, from what each recorded beside it."""
    shared = [(r, queries.beside_cpus(r)) for r in doc["runs"] if queries.shared_cpus(r)]
    if not shared:
        return []
    worst = max(other for _, other in shared)
    return ["", f"{len(shared)} of {len(doc['runs'])} workers shared the CPUs with other work (other processes "
                f"or steal kept up to {worst:.2f} CPUs busy beside them): their timings are slower and noisier "
                "than the code alone (see `python -m benchctl doctor`)"]


def _rounds_lines(doc: dict) -> list[str]:
    rounds = doc.get("rounds") or []
    if not rounds:
        return []
    last = rounds[-1]
    return ["", f"rounds: {len(rounds)} ({', '.join(str(r['workers']) for r in rounds)} workers); "
                f"stopped: {doc.get('stopped', last.get('why', 'done'))}"]


def _failures(doc: dict) -> list[str]:
    failed = queries.failed_runs(doc)
    if not failed:
        return []
    lines = ["", "failed workers:"]
    for r in failed:
        # The traceback of an exception in the workload; else what the worker printed last.
        tail = (r.get("traceback") or r.get("stderr_tail") or "").strip().splitlines()
        lines.append(f"  {_settings.cell_label(r['cell'])} #{r['repetition'] + 1}: {r.get('error')}"
                     f" (exit status {r.get('exit_status')})")
        lines += [f"    | {t}" for t in tail[-8:]]
    return lines


def format_report(doc: dict, baseline: Any = None) -> str:
    """Noise, tables per phase, shared CPUs, rounds, failures and values of a results document."""
    base = queries.baseline(doc, baseline)
    runs = doc["runs"]
    ok = sum(r["status"] == "ok" for r in runs)
    fixed = {k: v for k, v in doc["args"].items() if k not in doc["matrix"]}  # matrix keys vary per cell
    against = _settings.cell_label(base) if doc["matrix"] else "the only cell"
    lines = [f"workload {doc['workload']}  args {fixed}",
             f"{len(runs)} worker runs ({ok} ok, {len(runs) - ok} failed), {len(queries.cells(doc))} cells; each "
             f"cell is described over its fresh processes; ratios are against {against} "
             "(* a difference called, = no difference beyond the band, ? unresolved)"]
    if doc["metadata"].get("analysis_error"):
        lines.append(f"no summary: {doc['metadata']['analysis_error']}")
    comparisons = queries.Comparisons(doc)
    for phase in queries.phases(doc):
        lines += _phase_table(doc, phase, base, comparisons)
    lines += _beside_lines(doc) + contention_gate.report_lines(doc) + _rounds_lines(doc) + _failures(doc)
    values = format_values(doc)
    return "\n".join(lines + (["", values] if values else []))


def format_values(doc: dict) -> str:
    """Which weights each distinct setup used, and their subnormal census (from the runs' notes)."""
    lines: list[str] = []
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
        if line not in lines:
            lines.append(line)
    return "Values:\n" + "\n".join(lines) if lines else ""


def _comparison_row(a: dict, b: dict, entry_a: dict, entry_b: dict, units: tuple[TimeUnit, TimeUnit]) -> list[str]:
    phase, cell = entry_a["phase"], entry_a["cell"]
    head = [phase, _settings.cell_label(cell), units[0].text(_seconds(entry_a["median_ms"])),
            units[1].text(_seconds(entry_b["median_ms"]))]
    try:
        # Two files have no shared control: judged against the floor alone.
        cmp = processes.compare(queries.process_medians(b, phase, cell), queries.process_medians(a, phase, cell))
    except ValueError as e:
        return head + ["n/a", str(e)]
    return head + [cmp.table_text(), cmp.headline()]


def format_comparison(a: dict, b: dict, a_name: str = "A", b_name: str = "B") -> str:
    """Each (phase, cell) present in both documents: median of each and ratio B/A with its CI over processes."""
    lines = [f"{a_name}: workload {a['workload']} on {a['metadata'].get('hostname', '?')}",
             f"{b_name}: workload {b['workload']} on {b['metadata'].get('hostname', '?')}"]
    if a["workload"] != b["workload"] or a["args"] != b["args"]:
        lines.append(f"warning: the files ran different workloads or arguments "
                     f"({a['workload']} {a['args']} vs {b['workload']} {b['args']})")
    for key in ("python", "platform"):
        if a["metadata"].get(key) != b["metadata"].get(key):
            lines.append(f"{key}: {a['metadata'].get(key)} vs {b['metadata'].get(key)}")
    pairs = [(ea, queries.summary_entry(b, ea["phase"], ea["cell"])) for ea in a["summary"]
             if ea.get("arm") != CONTROL_ARM]
    pairs = [(ea, eb) for ea, eb in pairs if eb is not None]
    if not pairs:
        lines.append("no (phase, cell) in common: nothing to compare")
        return "\n".join(lines)
    units = (time_unit(_seconds(ea["median_ms"]) for ea, _ in pairs),
             time_unit(_seconds(eb["median_ms"]) for _, eb in pairs))
    rows = [_comparison_row(a, b, ea, eb, units) for ea, eb in pairs]
    header = ["phase", "cell", units[0].header(a_name), units[1].header(b_name), f"{b_name}/{a_name} [95% CI]",
              f"{b_name} is"]
    return "\n".join(lines + ["", *format_table(rows, header, text_columns=2),
                              f"(processes are the unit; two files share no A/A control, so the {FLOOR:.0%} "
                              "floor is the band)"])
