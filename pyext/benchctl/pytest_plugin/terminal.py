"""The terminal report at the end of a session: a table of the measured tests, the assertions,
and the comparison against a saved run."""

from __future__ import annotations

from typing import Optional

from .compare import CATEGORIES, ONE_PROCESS_NOTE
from .session import Session

__all__ = ["seconds", "table", "lines"]

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def seconds(value: Optional[float], unit: Optional[tuple[float, str]] = None) -> str:
    """A duration in seconds written in ``unit`` (or the largest one under it), 4 significant digits."""
    if value is None:
        return "n/a"
    scale, name = unit or _unit(value)
    return f"{value / scale:.4g} {name}"


def _unit(value: float) -> tuple[float, str]:
    return next((u for u in _UNITS if abs(value) >= u[0]), _UNITS[-1])


def table(rows: list[list[str]], header: list[str]) -> list[str]:
    """Aligned columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return [line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]


def _rows(session: Session) -> list[list[str]]:
    rows = []
    for record in session.records.values():
        s = record.stats
        if s is None:
            continue
        unit = _unit(s.median)
        how = f"{len(s.processes)} processes" if s.processes else "in-process"
        rows.append([record.nodeid, seconds(s.median, unit),
                     f"[{seconds(s.ci95[0], unit)}, {seconds(s.ci95[1], unit)}]",
                     "n/a" if s.iqr_over_median is None else f"{s.iqr_over_median:.1%}",
                     f"{s.rounds}x{s.iterations}", how, ", ".join(s.flags) or "-"])
    return rows


def _assertion_lines(session: Session) -> list[str]:
    out = []
    for record in session.records.values():
        for a in record.assertions:
            first = a["message"].splitlines()[0]
            out.append(f"{record.nodeid}: {a['assertion']} {a['outcome'].replace('_', ' ')}: {first}")
    return out


def _comparison_lines(session: Session) -> list[str]:
    judgements = session.judgements
    out = [f"against {session.options.compare_path}:"]
    # How far the machine moved matters only where a test has processes to compare.
    if session.drift is not None and any(j.comparison and j.comparison.ci95 for j in judgements):
        out.append(f"  {session.drift.text}")
    for category in CATEGORIES + ("new",):
        group = [j for j in judgements if j.category == category]
        if group:
            out.append(f"  {category} ({len(group)}):")
            out += [f"    {j.nodeid} [{j.phase}]: {j.text}" for j in group]
    if not judgements:
        out.append("  no test of this run measured anything to compare")
    if any(j.category == "one process" for j in judgements):
        out.append(f"  note: {ONE_PROCESS_NOTE}")
    return out


def lines(session: Session) -> list[str]:
    """Everything the terminal summary prints (empty when no test used benchctl)."""
    out = []
    rows = _rows(session)
    if rows:
        out.append("per-call time: median of the steady rounds and its 95% CI; rounds x calls per round")
        out += table(rows, ["test", "median", "95% CI", "IQR/median", "rounds", "measured", "flags"])
    assertion_lines = _assertion_lines(session)
    if assertion_lines:
        out += ([""] if out else []) + ["assertions:"] + [f"  {line}" for line in assertion_lines]
    if session.saved is not None:
        out += ([""] if out else []) + _comparison_lines(session)
    if session.options.json_path and session.document is not None:
        out += ([""] if out else []) + [f"results written to {session.options.json_path} "
                                        f"(python -m benchctl report {session.options.json_path})"]
    return out
