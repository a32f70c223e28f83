"""A figure of a results document: per-iteration times of every run and a box plot per cell."""

from __future__ import annotations

from .. import settings as _settings
from .._validate import ArgumentError
from ..errors import MissingPackage
from . import queries

__all__ = ["plot"]


def plot(doc: dict, path: str) -> None:
    """Write a figure: per phase, per-iteration times of every run and a box plot per cell."""
    try:
        import matplotlib
    except ImportError:
        raise MissingPackage("plotting needs matplotlib: pip install 'benchctl[plot]'") from None

    matplotlib.use("Agg")  # files only: never needs a display
    import matplotlib.pyplot as plt

    phases = queries.phases(doc)
    if not phases:
        raise ArgumentError("nothing to plot: the document has no successful run")
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
