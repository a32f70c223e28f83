"""``--benchctl-compare FILE``: this run's tests judged against a saved run, test by test.

Tests are matched by node id and phase. As everywhere in benchctl, the
process is the unit: each side of a test is the medians of its fresh
processes (an isolated test's workers; an in-process test is one process),
compared with :func:`benchctl._results.processes.compare` (ratio of
geometric means, Welch t interval on logs) and judged against a
no-effect band, in the comparison's own words
(:meth:`benchctl._results.comparison.Comparison.describe`):

* ``slower`` / ``faster``: the interval lies wholly beyond the band;
* ``unchanged``: wholly inside it;
* ``inconclusive``: it crosses the band's edge;
* ``one process``: a side has one process, so how far processes disagree
  is unknown and no difference is called; the ratio is still shown. (Two
  sessions of a busy machine gave the same in-process test medians up to 2×
  apart; see ``bench/pytest_overhead.py``.)

The band is the 5% floor, or wider when the session reference says the
machine itself moved between the two sessions (:mod:`._reference`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._results import document, processes, queries
from .._results.comparison import Comparison, Outcome
from ._results_file import is_plugin_document

__all__ = ["CATEGORIES", "ONE_PROCESS_NOTE", "Judgement", "load_saved", "judge"]

CATEGORIES = ("slower", "faster", "unchanged", "inconclusive", "one process")
#: Said under a comparison in which some test has one process on a side.
ONE_PROCESS_NOTE = ("a test measured in-process is one process a side: no difference is called for it; mark it "
                    "@pytest.mark.benchctl(isolate=True, repeat=3) in both runs to compare it")
_CATEGORY = {Outcome.NO_EFFECT: "unchanged", Outcome.UNRESOLVED: "inconclusive", Outcome.ONE_PROCESS: "one process"}


@dataclass
class Judgement:
    nodeid: str
    phase: str
    category: str            # one of CATEGORIES, or "new" (not in the saved file)
    comparison: Comparison | None  # ratio current/saved, judged against the band
    text: str


def load_saved(path: str) -> dict:
    """The saved document; ResultsError when it is unreadable or not written by this plugin."""
    doc = document.load(path)
    if not is_plugin_document(doc):
        raise document.ResultsError(
            f"{path}: written for workload {doc['workload']!r} with matrix keys {list(doc['matrix'])}, not by "
            f"benchctl's pytest plugin; save a run with --benchctl-json to compare against it")
    return doc


def _category(cmp: Comparison) -> str:
    if cmp.beyond_band:
        return "slower" if cmp.ratio > 1 else "faster"
    return _CATEGORY[cmp.outcome]


def judge(current: dict, saved: dict, band: float = processes.FLOOR) -> list[Judgement]:
    """Every (test, phase) of ``current`` against ``saved``, against the no-effect band ±``band``
    (the 5% floor, or wider when the machine moved between the sessions: :func:`.reference.drift`)."""
    out = []
    for nodeid in current["matrix"].get("test", []):
        cell = {"test": nodeid}
        for phase in dict.fromkeys(p for run in queries.ok_runs(current, cell) for p in run["phases"]):
            now = queries.process_medians(current, phase, cell)
            before = queries.process_medians(saved, phase, cell)
            if not now:
                continue
            if not before:
                out.append(Judgement(nodeid, phase, "new", None, "not in the saved file"))
                continue
            try:
                cmp = processes.compare(now, before, band=band)
            except ValueError as e:  # medians of 0 ns: no ratio exists
                out.append(Judgement(nodeid, phase, "inconclusive", None, f"cannot compare: {e}"))
                continue
            out.append(Judgement(nodeid, phase, _category(cmp), cmp, cmp.describe()))
    return out
