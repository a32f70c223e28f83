"""Human-readable views of a results document: tables, a comparison of two files, a figure.

:func:`format_report` prints one table per phase (median, 95% CI,
IQR/median, faults and migrations per iteration, ratio against a baseline cell
with its CI and significance), the failed workers with the tail of their
stderr, and the verdict. :func:`format_comparison` sets two documents side by
side (e.g. two machines). :func:`plot` draws per-iteration times and a box
plot per cell with matplotlib.
"""

from __future__ import annotations

from typing import Any

from .. import settings as _settings
from . import queries, stats, wording
from .document import cell_id
from .verdict import MIN_EFFECT, headline, resolved

__all__ = ["format_report", "format_comparison", "plot"]


def _table(rows: list[list[str]], header: list[str], text_columns: int = 1) -> str:
    """Aligned text table: the first ``text_columns`` columns left-aligned, numbers right-aligned."""
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < text_columns else c.rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def _ratio_cell(comparisons: queries.Comparisons, phase: str, cell: dict, base: dict) -> str:
    if cell_id(cell) == cell_id(base):
        return "baseline"
    cmp = comparisons.compare(phase, cell, base)
    if cmp is None:  # no samples, or no ratio exists (medians of 0 ns)
        return "n/a"
    # The same test as the verdict's, so the table never contradicts it.
    return wording.table_ratio(cmp["ratio"], cmp["ci95"]) + ("*" if resolved(cmp) else " (n.s.)")


def _phase_table(doc: dict, phase: str, base: dict, comparisons: queries.Comparisons) -> list[str]:
    entries = [e for e in doc["summary"] if e["phase"] == phase]
    if not entries:
        return []
    keys = list(doc["matrix"])
    has_base = queries.summary_entry(doc, phase, base) is not None
    rows = []
    for e in entries:
        lo, hi = e["ci95_ms"]
        rows.append([
            _settings.cell_label({k: e["cell"][k] for k in keys}),
            str(e["n"]),
            wording.ms(e["median_ms"]),
            f"[{wording.ms(lo)}, {wording.ms(hi)}]",
            "n/a" if e["iqr_over_median"] is None else f"{100 * e['iqr_over_median']:.1f}%",
            wording.count(e.get("minor_faults_per_iter")),
            wording.count(e.get("cpu_migrations_per_iter")),
            _ratio_cell(comparisons, phase, e["cell"], base) if has_base else "n/a",
        ])
    header = ["cell", "n", "median ms", "95% CI ms", "IQR/med", "faults/iter", "migr/iter", "ratio vs baseline"]
    lines = ["", f"phase {phase}", _table(rows, header)]
    for e in entries:
        lines += [f"  note [{_settings.cell_label(e['cell'])}]: {flag}" for flag in e.get("flags", [])]
    return lines


def _failures(doc: dict) -> list[str]:
    failed = queries.failed_runs(doc)
    if not failed:
        return []
    lines = ["", "failed workers:"]
    for r in failed:
        tail = (r.get("stderr_tail") or "").strip().splitlines()
        lines.append(f"  {_settings.cell_label(r['cell'])} #{r['repetition'] + 1}: {r.get('error')}"
                     f" (exit status {r.get('exit_status')})")
        lines += [f"    | {t}" for t in tail[-5:]]
    return lines


def format_report(doc: dict, baseline: Any = None) -> str:
    """Tables per phase, failures and verdict of a results document, as text."""
    base = queries.baseline(doc, baseline)
    runs = doc["runs"]
    ok = sum(r["status"] == "ok" for r in runs)
    fixed = {k: v for k, v in doc["args"].items() if k not in doc["matrix"]}  # matrix keys vary per cell
    against = _settings.cell_label(base) if doc["matrix"] else "the only cell"
    lines = [f"workload {doc['workload']}  args {fixed}",
             f"{len(runs)} worker runs ({ok} ok, {len(runs) - ok} failed), "
             f"{len(queries.cells(doc))} cells; ratios are against {against}"
             f" (* = a difference the verdict calls: significant and at least {MIN_EFFECT:.0%})"]
    if doc["metadata"].get("analysis_error"):
        lines.append(f"no summary: {doc['metadata']['analysis_error']}")
    comparisons = queries.Comparisons(doc)
    for phase in queries.phases(doc):
        lines += _phase_table(doc, phase, base, comparisons)
    lines += _failures(doc)
    if doc["verdict"]:
        lines += ["", "verdict:"]
        lines += [f"  [{f['phase']}] {f['message']}" for f in doc["verdict"]]
    return "\n".join(lines)


def _comparison_row(a: dict, b: dict, entry_a: dict, entry_b: dict) -> list[str]:
    phase, cell = entry_a["phase"], entry_a["cell"]
    head = [phase, _settings.cell_label(cell), wording.ms(entry_a["median_ms"]), wording.ms(entry_b["median_ms"])]
    xa, _ = queries.steady_samples(a, phase, cell)
    xb, _ = queries.steady_samples(b, phase, cell)
    runs = (queries.steady_by_run(b, phase, cell), queries.steady_by_run(a, phase, cell))
    try:
        cmp = stats.compare(xb, xa, seed=0, runs=runs)
    except ValueError as e:
        return head + ["n/a", str(e)]
    return head + [wording.table_ratio(cmp["ratio"], cmp["ci95"]), headline(cmp)]


def format_comparison(a: dict, b: dict, a_name: str = "A", b_name: str = "B") -> str:
    """Each (phase, cell) present in both documents: median of each and ratio B/A with its CI."""
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
        eb = queries.summary_entry(b, ea["phase"], ea["cell"])
        if eb is not None:
            rows.append(_comparison_row(a, b, ea, eb))
    if not rows:
        lines.append("no (phase, cell) in common: nothing to compare")
        return "\n".join(lines)
    header = ["phase", "cell", f"{a_name} ms", f"{b_name} ms", f"{b_name}/{a_name} [95% CI]", f"{b_name} is"]
    return "\n".join(lines + ["", _table(rows, header, text_columns=2)])


def plot(doc: dict, path: str) -> None:
    """Write a figure: per phase, per-iteration times of every run and a box plot per cell."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("plotting needs matplotlib: pip install 'benchctl[plot]'") from None

    matplotlib.use("Agg")  # files only: never needs a display
    import matplotlib.pyplot as plt

    phases = queries.phases(doc)
    if not phases:
        raise ValueError("nothing to plot: the document has no successful run")
    fig, axes = plt.subplots(len(phases), 2, figsize=(13, 4 * len(phases)), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, phase in enumerate(phases):
        series_ax, box_ax = axes[row]
        boxes, labels = [], []
        for i, cell in enumerate(queries.cells(doc)):
            label = _settings.cell_label(cell)
            _plot_series(series_ax, doc, phase, cell, colours[i % len(colours)], label)
            steady, _ = queries.steady_samples(doc, phase, cell)
            if len(steady):
                boxes.append(steady / 1e6)
                labels.append(label)
        series_ax.set(title=f"{doc['workload']} / {phase}: per-iteration time (x = warm-up)",
                      xlabel="iteration", ylabel="ms")
        series_ax.legend(fontsize="small")
        if boxes:
            box_ax.boxplot(boxes)
            box_ax.set_xticks(range(1, len(labels) + 1), labels, fontsize="small", rotation=20, ha="right")
        box_ax.set(title=f"{phase}: steady-state iterations per cell", ylabel="ms")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_series(ax, doc: dict, phase: str, cell: dict, colour: str, label: str) -> None:
    """Each run's per-iteration times of ``cell`` (labelled once), warm-up marked with x."""
    shown = False
    for run in queries.ok_runs(doc, cell):
        data = run["phases"].get(phase)
        if not data or not data["ns"]:
            continue
        ms = [v / 1e6 for v in data["ns"]]
        warm = data.get("warmup") or 0
        ax.plot(range(len(ms)), ms, color=colour, alpha=0.7, label=None if shown else label)
        if warm:
            ax.plot(range(warm), ms[:warm], "x", color=colour)
        shown = True
