"""Fill a document's ``summary`` and ``verdict`` sections from its runs."""

from __future__ import annotations

from typing import Callable

from . import summary, verdict
from .findings import Finding

__all__ = ["Judge", "analyse", "stored_focus"]

#: What judges a document with its summary: its findings (the generic verdict unless a study has its own).
Judge = Callable[[dict], "list[Finding]"]


def analyse(doc: dict, focus: str | None = None, with_verdict: bool = True, judge: Judge | None = None) -> dict:
    """Fill ``doc['summary']`` (and ``doc['verdict']``, by ``judge`` or the generic rules with ``focus``),
    in place; returns doc.

    When the samples cannot be analysed (values :mod:`benchctl._results.stats`
    rejects) the measurements still stand: summary and verdict stay empty and
    ``metadata['analysis_error']`` says why.
    """
    try:
        doc["summary"] = summary.summarize(doc)
        if with_verdict:
            found = judge(doc) if judge is not None else verdict.findings(doc, focus=focus)
            doc["verdict"] = [f.to_json() for f in found]
    except ValueError as e:
        doc["summary"], doc["verdict"] = [], []
        doc["metadata"]["analysis_error"] = f"summary or verdict failed: {e}"
    else:
        doc["metadata"].pop("analysis_error", None)
    return doc


def stored_focus(doc: dict) -> str | None:
    """The focus the document was analysed with: recorded by the runner, or (schema 1) the key
    its ``gap`` findings vary."""
    focus = doc["metadata"].get("runner", {}).get("focus")
    if focus is not None:
        return focus
    for f in doc["verdict"]:
        if f.get("rule") == "gap" and f.get("a") and f.get("b"):
            differ = [k for k in f["a"] if f["a"][k] != f["b"].get(k)]
            if len(differ) == 1:
                return differ[0]
    return None
