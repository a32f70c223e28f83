"""Human-readable views of a results document: tables, noise, verdict, and a comparison of two files.

:func:`format_report` prints, per phase, the run's measured noise (the A/A
control: how far two identical arms differ, hence which differences this
run can resolve) and a table of the cells, each described over its fresh
processes (geometric mean of per-process medians, its t interval, how much
iterations vary within a process and processes between them, faults and
migrations per iteration, and the ratio against a baseline cell with the
verdict's mark); then the workers that shared the CPUs with other work, the
rounds of ``--repeat auto``, the comparisons left unresolved with about how
many processes would settle them, the failed workers, and the verdict.
:func:`format_comparison` sets two documents side by side (e.g. two machines).
"""

from __future__ import annotations

import math
from typing import Any

from .. import settings as _settings
from . import processes, queries, wording
from .document import CONTROL_ARM, cell_id
from .verdict import MIN_EFFECT, describe, headline

__all__ = ["format_report", "format_comparison"]

# The mark of each outcome in the ratio column.
_MARKS = {processes.EFFECT: "*", processes.NO_EFFECT: "=", processes.UNRESOLVED: "?", processes.ONE_PROCESS: ""}


def _table(rows: list[list[str]], header: list[str], text_columns: int = 1) -> str:
    """Aligned text table: the first ``text_columns`` columns left-aligned, numbers right-aligned."""
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < text_columns else c.rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def _ratio_text(cmp: dict) -> str:
    if cmp["ci95"] is None:
        return f"{cmp['ratio']:.3f} (1 process)"
    return wording.table_ratio(cmp["ratio"], cmp["ci95"]) + _MARKS[cmp["outcome"]]


def _ratio_cell(comparisons: queries.Comparisons, phase: str, entry: dict, base: dict) -> str:
    if cell_id(entry["cell"]) == cell_id(base) and entry.get("arm") is None:
        return "baseline"
    if entry.get("arm") == CONTROL_ARM:
        ctl = comparisons.control(phase)
        return _ratio_text({**ctl["comparison"], "outcome": processes.judge(ctl["comparison"])}) if ctl else "n/a"
    cmp = comparisons.compare(phase, entry["cell"], base)
    # The same comparison and test as the verdict's, so the table never contradicts it.
    return "n/a" if cmp is None else _ratio_text(cmp)


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _spread(log_sd: float | None) -> str:
    return "n/a" if log_sd is None else f"{100 * math.expm1(log_sd):.1f}%"


def _row(doc: dict, e: dict, phase: str, base: dict, comparisons: queries.Comparisons) -> list[str]:
    keys = list(doc["matrix"])
    label = _settings.cell_label({k: e["cell"][k] for k in keys})
    lo, hi = e["ci95_ms"]
    return [
        label + (" [A/A arm B]" if e.get("arm") == CONTROL_ARM else ""),
        str(e.get("processes", e.get("repetitions", "?"))),
        wording.ms(e["median_ms"]),
        f"[{wording.ms(lo)}, {wording.ms(hi)}]",
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
    rows = [_row(doc, e, phase, base, comparisons) for e in entries]
    header = ["cell", "proc", "median ms", "95% CI ms", "within", "between", "faults/iter", "migr/iter",
              "vs baseline [95% CI]"]
    lines = ["", f"phase {phase}", *_noise_lines(doc, phase, comparisons), _table(rows, header)]
    for e, row in zip(entries, rows):
        lines += [f"  note [{row[0]}]: {flag}" for flag in e.get("flags", [])]
    return lines


def _noise_lines(doc: dict, phase: str, comparisons: queries.Comparisons) -> list[str]:
    """What the run's A/A control measured in ``phase``, and the band no difference inside is called."""
    if not doc.get("control"):
        return [f"  no A/A control in this run: differences are judged against the {MIN_EFFECT:.0%} floor only, "
                "not against this run's own noise"]
    ctl = comparisons.control(phase)
    if ctl is None:
        runs = queries.ok_runs(doc, doc["control"]["cell"])
        why = ("its cell does not run this phase" if runs and all(phase not in r["phases"] for r in runs)
               else "an arm has no successful process in this phase")
        return [f"  A/A control: {why}: differences are judged against the {MIN_EFFECT:.0%} floor only"]
    cmp = ctl["comparison"]
    if cmp["ci95"] is None:
        return [f"  A/A control: arm B/arm A = {wording.factor(cmp['ratio'])}× with one process an arm: this run's "
                f"noise is unmeasured; differences are judged against the {MIN_EFFECT:.0%} floor"]
    head = (f"  A/A control: the baseline cell run as two arms ({cmp['k_b']} and {cmp['k_a']} processes), "
            f"arm B/arm A = {wording.ratio_ci(cmp['ratio'], cmp['ci95'])}")
    if ctl["unreliable"]:
        return [head, f"  UNRELIABLE: two identical arms differ beyond the {MIN_EFFECT:.0%} floor, so this phase's "
                      "processes disagree more than their own spread says; no effect is called in it"]
    resolves = (f"  this run resolves differences of {ctl['resolves']:.0%} or more in this phase between two "
                f"cells of {cmp['k_b']} and {cmp['k_a']} processes as noisy as the arms: identical processes "
                f"differ by {ctl['band']:.0%} here (the arms' standard deviation, at least the {MIN_EFFECT:.0%} "
                f"floor), no difference is called unless its 95% CI lies wholly beyond ±{ctl['band']:.0%}, and "
                f"comparisons with the baseline count both arms' {cmp['k_a'] + cmp['k_b']} processes")
    if ctl["band"] > processes.MAX_NO_EFFECT_BAND:
        resolves += (f"; identical processes differ too much here to say 'no effect' (over "
                     f"{processes.MAX_NO_EFFECT_BAND:.0%}): add processes or quiet the machine")
    return [head, resolves]


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


def _processes_needed(cmp: dict) -> str:
    need = processes.processes_to_resolve(cmp, cmp["band"])
    if need is None:
        return "no number of processes would resolve it (its difference sits on the band's edge)"
    if need > processes.MAX_ESTIMATE:
        return f"more than {processes.MAX_ESTIMATE} processes per cell would be needed"
    return f"about {need} processes per cell would resolve it"


def _unresolved_lines(doc: dict, comparisons: queries.Comparisons) -> list[str]:
    """Each unresolved comparison (once) with about how many processes per cell would settle it."""
    lines, seen = [], set()
    for f in doc["verdict"]:
        if f.get("outcome") != processes.UNRESOLVED or f["a"] is None or f["b"] is None:
            continue
        key = (f["phase"], cell_id(f["a"]), cell_id(f["b"]))
        cmp = comparisons.compare(f["phase"], f["a"], f["b"])
        if cmp is None or key in seen:
            continue
        seen.add(key)
        lines.append(f"  [{f['phase']}] {_settings.cell_label(f['a'])} vs {_settings.cell_label(f['b'])}: "
                     f"{describe(cmp)}; {_processes_needed(cmp)}")
    return ["", "unresolved comparisons:", *lines] if lines else []


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
    """Noise, tables per phase, failures, unresolved comparisons and verdict of a results document."""
    base = queries.baseline(doc, baseline)
    runs = doc["runs"]
    ok = sum(r["status"] == "ok" for r in runs)
    fixed = {k: v for k, v in doc["args"].items() if k not in doc["matrix"]}  # matrix keys vary per cell
    against = _settings.cell_label(base) if doc["matrix"] else "the only cell"
    lines = [f"workload {doc['workload']}  args {fixed}",
             f"{len(runs)} worker runs ({ok} ok, {len(runs) - ok} failed), {len(queries.cells(doc))} cells; each "
             f"cell is described over its fresh processes; ratios are against {against} "
             "(* a difference the verdict calls, = no difference beyond the band, ? unresolved)"]
    if doc["metadata"].get("analysis_error"):
        lines.append(f"no summary: {doc['metadata']['analysis_error']}")
    comparisons = queries.Comparisons(doc)
    for phase in queries.phases(doc):
        lines += _phase_table(doc, phase, base, comparisons)
    lines += _beside_lines(doc) + _rounds_lines(doc) + _unresolved_lines(doc, comparisons) + _failures(doc)
    if doc["verdict"]:
        lines += ["", "verdict:"]
        lines += [f"  [{f['phase']}] {f['message']}" for f in doc["verdict"]]
    return "\n".join(lines)


def _comparison_row(a: dict, b: dict, entry_a: dict, entry_b: dict) -> list[str]:
    phase, cell = entry_a["phase"], entry_a["cell"]
    head = [phase, _settings.cell_label(cell), wording.ms(entry_a["median_ms"]), wording.ms(entry_b["median_ms"])]
    try:
        cmp = processes.compare(queries.process_medians(b, phase, cell), queries.process_medians(a, phase, cell))
    except ValueError as e:
        return head + ["n/a", str(e)]
    # Two files have no shared control: judged against the floor alone.
    cmp = {**cmp, "outcome": processes.judge(cmp), "band": processes.FLOOR}
    return head + [_ratio_text(cmp), headline(cmp)]


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
    rows = []
    for ea in a["summary"]:
        if ea.get("arm") == CONTROL_ARM:
            continue
        eb = queries.summary_entry(b, ea["phase"], ea["cell"])
        if eb is not None:
            rows.append(_comparison_row(a, b, ea, eb))
    if not rows:
        lines.append("no (phase, cell) in common: nothing to compare")
        return "\n".join(lines)
    header = ["phase", "cell", f"{a_name} ms", f"{b_name} ms", f"{b_name}/{a_name} [95% CI]", f"{b_name} is"]
    return "\n".join(lines + ["", _table(rows, header, text_columns=2),
                              f"(processes are the unit; two files share no A/A control, so the {MIN_EFFECT:.0%} "
                              "floor is the band)"])
