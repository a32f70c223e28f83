"""A figure of a results document, a row per phase: each process's iterations, and each cell over its processes.

Left, every process's per-iteration times (a line each, a colour per cell, its
warm-up marked ``x``): what the steady state looks like and where warm-up ends.
Right, the unit the statistics count, the process: each process's median of
its steady iterations as a point, and the cell's geometric mean with its 95%
t interval over processes as a bar (as the report's table has them). The A/A
control's second arm is drawn as a cell of its own: how far two identical
arms land apart is the run's noise. An axis whose values span more than
:data:`LOG_SPAN` is logarithmic, so a millisecond warm-up does not flatten a
microsecond steady state; times are in the unit a table of them would use
(:func:`benchctl._results.tables.time_unit`).
"""

from __future__ import annotations

from .._validate import ArgumentError
from ..errors import MissingPackage
from . import processes, queries, summary
from .tables import TimeUnit, time_unit

__all__ = ["LOG_SPAN", "plot", "figure"]

#: An axis whose largest value is more than this many times its smallest is drawn on a log scale.
LOG_SPAN = 10.0
# Points of one cell spread sideways over this share of the space between two cells, so they do not hide
# one another.
_JITTER = 0.3


def plot(doc: dict, path: str) -> None:
    """Write :func:`figure` of ``doc`` to ``path``."""
    fig = figure(doc)  # first: it says when matplotlib is missing
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path)
    finally:
        plt.close(fig)


def figure(doc: dict):
    """The figure (a matplotlib ``Figure``; the caller closes it): per phase, each process's per-iteration
    times and each cell's processes."""
    try:
        import matplotlib
    except ImportError:
        raise MissingPackage("plotting needs matplotlib: pip install 'benchctl[plot]'") from None

    matplotlib.use("Agg")  # files only: never needs a display
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    phases = queries.phases(doc)
    if not phases:
        raise ArgumentError("nothing to plot: the document has no successful run")
    slots = summary.slots(doc)
    fig, axes = plt.subplots(len(phases), 2, figsize=(13, 4.2 * len(phases) + 0.6), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, phase in enumerate(phases):
        series_ax, cells_ax = axes[row]
        series = [(i, cell, arm, _iterations(doc, phase, cell, arm)) for i, (cell, arm) in enumerate(slots)]
        unit = time_unit(v / 1e9 for *_, runs in series for ns, _ in runs for v in ns)
        for i, cell, arm, runs in series:
            _plot_series(series_ax, runs, unit, colours[i % len(colours)], summary.label(cell, arm))
        series_ax.set(title=f"phase {phase}: each process's iterations (x: warm-up)", xlabel="iteration",
                      ylabel=unit.name)
        series_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _scale(series_ax, [v / 1e9 / unit.seconds for *_, runs in series for ns, _ in runs for v in ns])
        series_ax.legend(fontsize="small")
        _plot_cells(cells_ax, doc, phase, slots, colours)
    fig.suptitle(f"workload {doc['workload']}")
    fig.tight_layout()
    return fig


def _iterations(doc: dict, phase: str, cell: dict, arm: str | None) -> list[tuple[list[float], int]]:
    """(per-iteration ns, warm-up iterations) of each successful process of ``cell`` (its arm) in ``phase``."""
    out = []
    for run in queries.ok_runs(doc, cell, arm):
        data = run["phases"].get(phase)
        if data and data["ns"]:
            out.append((list(data["ns"]), queries.steady_start(data)))
    return out


def _scale(ax, values: list[float]) -> None:
    """A log scale where the values span more than :data:`LOG_SPAN`, its ticks written as plain numbers."""
    from matplotlib.ticker import LogFormatter

    positive = [v for v in values if v > 0]
    if positive and max(positive) > LOG_SPAN * min(positive):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(LogFormatter())
        # Some ticks between the powers of ten labelled too while the axis spans up to 2 decades.
        ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def _plot_series(ax, runs: list[tuple[list[float], int]], unit: TimeUnit, colour: str, label: str) -> None:
    """Each process's per-iteration times (labelled once), its warm-up marked with x."""
    for n, (ns, warm) in enumerate(runs):
        values = [v / 1e9 / unit.seconds for v in ns]
        ax.plot(range(len(values)), values, color=colour, alpha=0.6, linewidth=1, label=None if n else label)
        if warm:
            ax.plot(range(warm), values[:warm], "x", color=colour)


def _plot_cells(ax, doc: dict, phase: str, slots: list[tuple[dict, str | None]], colours: list[str]) -> None:
    """Per cell: each process's median as a point, the geometric mean and its 95% interval over processes
    (the row's phase is in the title beside it)."""
    medians = [queries.process_medians(doc, phase, cell, arm) for cell, arm in slots]
    unit = time_unit(v / 1e9 for m in medians for v in m)
    shown = []
    for i, ((cell, arm), values) in enumerate(zip(slots, medians)):
        values = [v / 1e9 / unit.seconds for v in values]
        if not values:
            continue
        x = len(shown)
        shown.append(summary.label(cell, arm))
        colour = colours[i % len(colours)]
        offsets = [(_JITTER * (j / (len(values) - 1) - 0.5) if len(values) > 1 else 0.0) for j in range(len(values))]
        ax.plot([x + o for o in offsets], values, "o", color=colour, alpha=0.7, markersize=5)
        if min(values) > 0:
            cell_ci = processes.cell_interval(values)
            lo, hi = cell_ci["ci"] or (cell_ci["value"], cell_ci["value"])
            ax.errorbar([x + _JITTER], [cell_ci["value"]], yerr=[[cell_ci["value"] - lo], [hi - cell_ci["value"]]],
                        fmt="_", color="black", markersize=14, capsize=4)
    ax.set_xticks(range(len(shown)), shown, fontsize="small", rotation=20, ha="right")
    ax.set_xlim(-0.6, len(shown) - 0.4)
    ax.set(title="each process's median (o); the cell's geometric mean and 95% CI (bar)", ylabel=unit.name)
    _scale(ax, [v / 1e9 / unit.seconds for m in medians for v in m])
