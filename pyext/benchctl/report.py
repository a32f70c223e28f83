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

from . import settings as _settings
from . import summary as _summary
from .results import cell_id
from .verdict import MIN_EFFECT, describe, resolved, why_unresolved


def resolve_baseline(doc: dict, baseline: Any = None) -> dict:
    """The baseline cell: the matrix's first values, overlaid with ``baseline``.

    ``baseline`` may be None, a (partial) cell dict, or text like
    ``"alloc=retain,order=eval_only"``.
    """
    cell = {k: v[0] for k, v in doc["matrix"].items()}
    if baseline is None:
        return cell
    if isinstance(baseline, str):
        items = {}
        for item in _settings.split_values(baseline):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"baseline {baseline!r}: write NAME=VALUE[,NAME=VALUE...]")
            items[key.strip()] = value
        baseline = items
    for key, value in baseline.items():
        if key not in doc["matrix"]:
            raise ValueError(f"baseline key {key!r} is not a matrix key ({', '.join(doc['matrix']) or 'none'})")
        values = doc["matrix"][key]
        # Text from the command line matches a value as the report prints it.
        match = [v for v in values if v == value or (isinstance(value, str) and _settings.format_value(v) == value)]
        if not match:
            raise ValueError(f"baseline {key}={_settings.format_value(value)} is not among the matrix values "
                             f"{', '.join(_settings.format_value(v) for v in values)}")
        cell[key] = match[0]
    return cell


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _count(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.2g}"


def _table(rows: list[list[str]], header: list[str], text_columns: int = 1) -> str:
    """Aligned text table: the first ``text_columns`` columns left-aligned, numbers right-aligned."""
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i < text_columns else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def _ratio_cell(doc: dict, phase: str, cell: dict, base: dict) -> str:
    if cell_id(cell) == cell_id(base):
        return "baseline"
    from . import stats

    a, _ = _summary.steady_samples(doc, phase, cell)
    b, _ = _summary.steady_samples(doc, phase, base)
    if not len(a) or not len(b):
        return "n/a"
    runs = (_summary.steady_by_run(doc, phase, cell), _summary.steady_by_run(doc, phase, base))
    try:
        cmp = stats.compare(a, b, seed=0, runs=runs)
    except ValueError:  # e.g. medians of 0 ns: no ratio exists
        return "n/a"
    lo, hi = cmp["ci95"]
    # The same test as the verdict's, so the table never contradicts it.
    mark = "*" if resolved(cmp) else " (n.s.)"
    return f"{cmp['ratio']:.3f} [{lo:.3f}, {hi:.3f}]{mark}"


def format_report(doc: dict, baseline: Any = None) -> str:
    """Tables per phase, failures and verdict of a results document, as text."""
    base = resolve_baseline(doc, baseline)
    keys = list(doc["matrix"])
    runs = doc["runs"]
    ok = sum(r["status"] == "ok" for r in runs)
    fixed = {k: v for k, v in doc["args"].items() if k not in doc["matrix"]}  # matrix keys vary per cell
    lines = [f"workload {doc['workload']}  args {fixed}",
             f"{len(runs)} worker runs ({ok} ok, {len(runs) - ok} failed), "
             f"{len(_summary.cells(doc))} cells; ratios are against {_settings.cell_label(base) if keys else 'the only cell'}"
             f" (* = a difference the verdict calls: significant and at least {MIN_EFFECT:.0%})"]
    if doc["metadata"].get("analysis_error"):
        lines.append(f"no summary: {doc['metadata']['analysis_error']}")
    for phase in _summary.phases(doc):
        entries = [e for e in doc["summary"] if e["phase"] == phase]
        if not entries:
            continue
        has_base = _summary.find(doc["summary"], phase, base) is not None
        rows = []
        for e in entries:
            lo, hi = e["ci95_ms"]
            rows.append([
                _settings.cell_label({k: e["cell"][k] for k in keys}),
                str(e["n"]),
                _ms(e["median_ms"]),
                f"[{_ms(lo)}, {_ms(hi)}]",
                "n/a" if e["iqr_over_median"] is None else f"{100 * e['iqr_over_median']:.1f}%",
                _count(e.get("minor_faults_per_iter")),
                _count(e.get("cpu_migrations_per_iter")),
                _ratio_cell(doc, phase, e["cell"], base) if has_base else "n/a",
            ])
        header = ["cell", "n", "median ms", "95% CI ms", "IQR/med", "faults/iter", "migr/iter", "ratio vs baseline"]
        lines += ["", f"phase {phase}", _table(rows, header)]
        for e in entries:
            for flag in e.get("flags", []):
                lines.append(f"  note [{_settings.cell_label(e['cell'])}]: {flag}")
    failed = [r for r in runs if r["status"] == "failed"]
    if failed:
        lines += ["", "failed workers:"]
        for r in failed:
            tail = (r.get("stderr_tail") or "").strip().splitlines()
            lines.append(f"  {_settings.cell_label(r['cell'])} #{r['repetition'] + 1}: {r.get('error')}"
                         f" (exit status {r.get('exit_status')})")
            lines += [f"    | {t}" for t in tail[-5:]]
    if doc["verdict"]:
        lines += ["", "verdict:"]
        lines += [f"  [{f['phase']}] {f['message']}" for f in doc["verdict"]]
    return "\n".join(lines)


def format_comparison(a: dict, b: dict, a_name: str = "A", b_name: str = "B") -> str:
    """Each (phase, cell) present in both documents: median of each and ratio B/A with its CI."""
    from . import stats

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
        eb = _summary.find(b["summary"], ea["phase"], ea["cell"])
        if eb is None:
            continue
        xa, _ = _summary.steady_samples(a, ea["phase"], ea["cell"])
        xb, _ = _summary.steady_samples(b, ea["phase"], ea["cell"])
        runs = (_summary.steady_by_run(b, ea["phase"], ea["cell"]), _summary.steady_by_run(a, ea["phase"], ea["cell"]))
        try:
            cmp = stats.compare(xb, xa, seed=0, runs=runs)
        except ValueError as e:
            rows.append([ea["phase"], _settings.cell_label(ea["cell"]), _ms(ea["median_ms"]),
                         _ms(eb["median_ms"]), "n/a", str(e)])
            continue
        lo, hi = cmp["ci95"]
        rows.append([ea["phase"], _settings.cell_label(ea["cell"]), _ms(ea["median_ms"]), _ms(eb["median_ms"]),
                     f"{cmp['ratio']:.3f} [{lo:.3f}, {hi:.3f}]",
                     describe(cmp).split(" [")[0] if resolved(cmp) else why_unresolved(cmp)[0]])
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

    phases = _summary.phases(doc)
    if not phases:
        raise ValueError("nothing to plot: the document has no successful run")
    fig, axes = plt.subplots(len(phases), 2, figsize=(13, 4 * len(phases)), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, phase in enumerate(phases):
        series_ax, box_ax = axes[row]
        boxes, labels = [], []
        for i, cell in enumerate(_summary.cells(doc)):
            colour = colours[i % len(colours)]
            label = _settings.cell_label(cell)
            shown = False
            for run in _summary.ok_runs(doc, cell):
                data = run["phases"].get(phase)
                if not data or not data["ns"]:
                    continue
                ms = [v / 1e6 for v in data["ns"]]
                warm = data.get("warmup") or 0
                series_ax.plot(range(len(ms)), ms, color=colour, alpha=0.7, label=None if shown else label)
                if warm:
                    series_ax.plot(range(warm), ms[:warm], "x", color=colour)
                shown = True
            steady, _ = _summary.steady_samples(doc, phase, cell)
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
