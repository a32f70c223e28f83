"""What every command that ran or loaded a results document prints: the report, then the answer last.

The answer is the last block on screen (what a terminal leaves visible after a long run); the
per-cell tables and the run's noise stand above it.
"""

from __future__ import annotations

from typing import Any

from .._results import answer, contention_gate, outlying, report
from .._results.facts import Facts
from .._results.findings import Finding

__all__ = ["render"]


def render(doc: dict, subject: str | None = None, baseline: Any = None, closing: str | None = None,
           verbose: bool = False) -> str:
    """The report of ``doc``, ``closing`` (e.g. how long it took), and the answer about ``subject``; ``verbose``:
    each ruled-out finding with its reason, not only its name (:func:`benchctl._results.answer.format_answer`)."""
    findings = [Finding.from_json(f) for f in doc.get("verdict") or []]
    parts = [report.format_report(doc, baseline=baseline)]
    if closing:
        parts.append(closing)

    def widened(finding: Finding) -> str:
        return "".join(o.open_text() for o in outlying.widening(doc, finding))

    parts.append(answer.format_answer(findings, subject or doc["workload"], beside=widened, verbose=verbose,
                                      first=contention_gate.too_busy(doc, settled=not any(
                                          f.in_answer and f.mark == "?" for f in findings)),
                                      facts=Facts.from_json((doc.get("evidence") or {}).get("facts"))))
    return "\n\n".join(parts)
