"""The terminal report at the end of a session: a table of the measured tests, the assertions,
and the comparison against a saved run."""

from __future__ import annotations

from .._results.tables import format_table, time_unit
from ._compare import CATEGORIES, ONE_PROCESS_NOTE
from ._session import Session

__all__ = ["lines"]


def _rows(session: Session) -> tuple[list[list[str]], list[str]]:
    """The table of measured tests: its rows and header (one time unit per column, from its values)."""
    measured = [r for r in session.records.values() if r.stats is not None]
    median = time_unit(r.stats.median for r in measured)
    ci = time_unit(v for r in measured for v in r.stats.ci95)
    rows = []
    for record in measured:
        s = record.stats
        how = f"{len(s.processes)} processes" if s.processes else "in-process"
        rows.append([record.nodeid, median.text(s.median), ci.interval(s.ci95),
                     "n/a" if s.iqr_over_median is None else f"{s.iqr_over_median:.1%}",
                     f"{s.rounds}x{s.iterations}", how, ", ".join(s.flags) or "-"])
    return rows, ["test", median.header("median"), ci.header("95% CI"), "IQR/median", "rounds", "measured", "flags"]


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
    rows, header = _rows(session)
    if rows:
        out.append("per-call time: median of the steady rounds and its 95% CI; rounds x calls per round")
        out += format_table(rows, header)
    assertion_lines = _assertion_lines(session)
    if assertion_lines:
        out += ([""] if out else []) + ["assertions:"] + [f"  {line}" for line in assertion_lines]
    if session.saved is not None:
        out += ([""] if out else []) + _comparison_lines(session)
    if session.dropped:
        out += ([""] if out else []) + [f"left out of the table, the results file and the comparison, because the "
                                        f"test failed: {', '.join(session.dropped)}"]
    path = session.options.json_path
    if session.json_written:
        out += ([""] if out else []) + [f"results written to {path} (python -m benchctl report {path})"]
    elif path:
        out += ([""] if out else []) + [f"--benchctl-json {path} not written: no test measured anything (a file "
                                        "already there is left as it was)"]
    return out
