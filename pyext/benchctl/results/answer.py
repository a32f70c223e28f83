"""The answer: every finding of a run said once, marked, the causes first; the last block on screen.

``*`` a measured effect and what explains it, ``?`` an open question (with about how many
processes per cell would settle it), ``-`` ruled out and why (:data:`~.findings.LEGEND`).
Findings a rule keeps for the report only (``in_answer=False``: a setting's lack of effect,
which the per-cell table shows) are left out. When no finding of a judged phase
names a cause, the answer says so in words.
"""

from __future__ import annotations

from typing import Callable, Iterable

from . import processes
from .comparison import FLOOR
from .findings import LEGEND, Finding, Status

__all__ = ["NO_CAUSE", "settle_text", "format_answer"]

#: Said of a phase none of whose findings names a cause.
NO_CAUSE = ("none of the probed causes explains the time of {subject} in phase {phase}: each is ruled out, shows "
            "no effect beyond ±{band:.0%}, or is open")
# The order of the marks in an answer: what was found, what is open, what was measured not to be the cause,
# and last what was ruled out before running.
_ORDER = {"*": 0, "?": 1, "-": 2}


def settle_text(finding: Finding) -> str:
    """About how many processes per cell would settle an open finding, in words ("" when it is not open)."""
    cmp = finding.comparison
    if not finding.is_open or cmp.ci95 is None:  # one process a side: its own words say two are needed
        return ""
    need = processes.processes_to_resolve(cmp, cmp.band)
    if need is None:
        return "; no number of processes would settle it (its difference sits on the band's edge)"
    if need > processes.MAX_ESTIMATE:
        return f"; more than {processes.MAX_ESTIMATE} processes per cell would be needed to settle it"
    return f"; about {need} processes per cell would settle it"


def _line(finding: Finding, with_phase: bool, beside: Callable[[Finding], str]) -> str:
    where = f"[{finding.phase}] " if with_phase and finding.phase else ""
    return f" {finding.mark} {where}{finding.message}{settle_text(finding)}{beside(finding)}"


def _unexplained(found: list[Finding], subject: str) -> list[str]:
    """A sentence for each phase whose findings compare cells but name no cause."""
    lines = []
    for phase in dict.fromkeys(f.phase for f in found if f.phase is not None):
        judged = [f for f in found if f.phase == phase]
        if any(f.comparison is not None for f in judged) and not any(f.status is Status.CAUSE for f in judged):
            band = max((f.comparison.band for f in judged if f.comparison is not None), default=FLOOR)
            lines.append(" " + NO_CAUSE.format(subject=subject, phase=phase, band=max(band, FLOOR)))
    return lines


def format_answer(findings: Iterable[Finding], subject: str, beside: Callable[[Finding], str] = lambda f: "") -> str:
    """The answer about ``subject`` (a workload or target), from a run's findings; ``beside(finding)``: what the
    run's processes add to a finding's line (a slowed process that widens an open one)."""
    findings = list(findings)
    found = [f for f in findings if f.in_answer]
    if not found and findings:
        return (f"Answer for {subject}: no cell differs from the baseline beyond the no-effect band (each cell "
                "against the baseline is in the table above)")
    if not found:
        return (f"Answer for {subject}: no finding: no two cells to compare (a one-value matrix, or too few "
                "successful runs)")
    with_phase = len({f.phase for f in found if f.phase is not None}) > 1
    ordered = sorted(found, key=lambda f: (_ORDER[f.mark], f.status is Status.RULED_OUT))
    return "\n".join([f"Answer for {subject} ({LEGEND}):", *_unexplained(found, subject),
                      *(_line(f, with_phase, beside) for f in ordered)])
