"""The session reference: how fast the machine itself ran during a session, for comparisons between sessions.

Within one session the workers of an isolated test measure how far processes
disagree; two sessions can also differ as a whole, because the machine moved
between them (an unchanged, isolated suite here ran 1.2-1.6x slower in its
second session, and one test was called 1.60x slower [1.36, 1.89]). Nothing
in either session's tests can tell that apart from a change of the code.

So a session with an isolated test that writes or compares results also runs
:mod:`benchctl._workloads.machine_reference` (fixed work) in fresh processes,
as many as its most repeated isolated test (at least three), and keeps their
medians in the document's ``metadata["session_reference"]``. Comparing two
sessions, the reference is an A/A control between them: its interval sets
the no-effect band of every test (:func:`benchctl._results.processes.band_from_interval`),
so no difference smaller than the machine's own measured move is called.
A saved file without a reference leaves the band at the 5% floor, and the
comparison says that the machine's drift went unmeasured.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._results import processes, queries
from .._results.comparison import Comparison

__all__ = ["KEY", "MIN_PROCESSES", "Drift", "measure", "of_document", "drift"]

#: Where a results document keeps its session reference (under ``metadata``).
KEY = "session_reference"
MIN_PROCESSES = 3


def measure(processes_wanted: int, worker_timeout_s: float | None = None) -> dict:
    """Run the reference workload in ``processes_wanted`` (at least :data:`MIN_PROCESSES`) fresh workers.

    Returns ``{"workload", "phase", "process_medians_ns", "failed", "error"}``: a worker that failed is
    counted, not hidden (``error`` is the first failure's); a run that could not start at all gives no
    medians and its error, and the session's results are written all the same.
    """
    from .._run import run_matrix
    from .._workloads import machine_reference

    out = {"workload": machine_reference.NAME, "phase": machine_reference.PHASE, "process_medians_ns": [],
           "failed": 0, "error": None}
    k = max(MIN_PROCESSES, int(processes_wanted))
    try:
        doc = run_matrix(machine_reference.NAME, repeat=k, progress=False, control=False,
                         worker_timeout_s=worker_timeout_s)
    except Exception as e:  # the session's own results matter more: they are kept, the failure said
        return {**out, "failed": k, "error": f"{type(e).__name__}: {e}"}
    failed = [r for r in doc["runs"] if r["status"] != "ok"]
    return {**out, "process_medians_ns": queries.process_medians(doc, machine_reference.PHASE, {}),
            "failed": len(failed), "error": failed[0].get("error") if failed else None}


def of_document(doc: dict) -> list[float]:
    """The per-process reference medians a document holds (empty when it has none)."""
    return list(((doc.get("metadata") or {}).get(KEY) or {}).get("process_medians_ns") or [])


@dataclass(frozen=True)
class Drift:
    """How far the machine moved between a saved session and this one, and the band that follows."""

    band: float                # the no-effect band every test's comparison is judged against
    comparison: Comparison | None  # processes.compare of the reference, this session / saved, or None
    text: str                  # one sentence for the terminal


def drift(current: dict, saved: dict) -> Drift:
    """The reference of ``current`` against ``saved``'s: the band for judging tests between them."""
    now, before = of_document(current), of_document(saved)
    if len(now) < 2 or len(before) < 2:
        side = current if len(now) < 2 else saved
        which = "this run" if side is current else "the saved run"
        error = ((side.get("metadata") or {}).get(KEY) or {}).get("error")
        why = (f"{which}'s session reference failed ({error})" if error else
               f"{which} has no session reference (one is measured in sessions with an isolated test that write or "
               f"compare results)")
        return Drift(processes.FLOOR, None,
                     f"{why}: how far the machine moved between the sessions is not measured, and differences are "
                     f"judged against the {processes.FLOOR:.0%} floor only")
    cmp = processes.compare(now, before)
    band = processes.band_from_interval(cmp)
    cmp = cmp.judged(band)
    return Drift(band, cmp,
                 f"the machine itself (fixed reference work in {cmp.k_a} and {cmp.k_b} fresh processes) ran "
                 f"{cmp.ratio_text()} as long in this session as in the saved one: "
                 f"differences within ±{band:.0%} are not called")
