"""Fill a document's ``summary`` and ``verdict`` sections from its runs."""

from __future__ import annotations

from . import summary, verdict

__all__ = ["analyse"]


def analyse(doc: dict, focus: str | None = None, with_verdict: bool = True) -> dict:
    """Fill ``doc['summary']`` (and ``doc['verdict']``) from its runs, in place; returns doc.

    When the samples cannot be analysed (values :mod:`benchctl.results.stats`
    rejects) the measurements still stand: summary and verdict stay empty and
    ``metadata['analysis_error']`` says why.
    """
    try:
        doc["summary"] = summary.summarize(doc)
        if with_verdict:
            doc["verdict"] = verdict.findings(doc, focus=focus)
    except ValueError as e:
        doc["summary"], doc["verdict"] = [], []
        doc["metadata"]["analysis_error"] = f"summary or verdict failed: {e}"
    else:
        doc["metadata"].pop("analysis_error", None)
    return doc
