"""Cause: DataLoader worker processes started and stopped in each call.

A ``DataLoader(..., num_workers=N)`` iterated inside the timed call, built there or built once without
``persistent_workers=True``, starts N worker processes at each iteration over it (a fork of the whole process
each) and stops them at its end: for a small data set that is most of the call. No setting can change the code,
so the finding rests on the probe worker's timed iterations (:mod:`.probe`): the time spent starting the workers
(until their first batch) and stopping them against the iterations' own.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import EVIDENCE_ONLY, NOT_WATCHED, Cause
from .probe import PROBE, LoaderFacts

__all__ = ["NEGLIGIBLE_SHARE", "PART_SHARE", "DOMINANT_SHARE", "MECHANISM", "FIX", "LoaderWorkers", "CAUSES"]

#: Under this share of the call, starting and stopping workers cannot explain its time: ruled out before running.
NEGLIGIBLE_SHARE = 0.05
#: From this share they explain part of the time (``?``) ...
PART_SHARE = 0.2
#: ... and from this share most of it (``*``).
DOMINANT_SHARE = 0.5
MECHANISM = ("each iteration over a DataLoader with worker processes starts them (a fork of the whole process each) "
             "and stops them at its end, unless persistent_workers=True keeps them")
FIX = ("build the DataLoader once, outside the timed call, with persistent_workers=True (its workers then serve every "
       "iteration over it), or num_workers=0 where a batch is quick to make")


def _seen(facts: Facts | None) -> LoaderFacts | None:
    return facts.of(PROBE) if facts is not None else None


class LoaderWorkers(Cause):
    name = "loader_workers"
    order = 172
    title = "DataLoader worker processes started in each call"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="no call shows its DataLoader workers")
        if not seen.iterators:
            return "no DataLoader started worker processes over its timed iterations"
        if seen.share < NEGLIGIBLE_SHARE:
            return f"{seen.text()}: under {NEGLIGIBLE_SHARE:.0%}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        called = ctx.facts.called_phase() if ctx.facts is not None else None  # whether or not it ran a torch op
        seen = _seen(ctx.facts) if ctx.phase == called else None
        if seen is None or not seen.iterators:
            return None
        evidence = {"loader_workers": ctx.facts.to_json()["probed"].get(PROBE.key), "share": seen.share}
        if seen.share < PART_SHARE:
            return self.finding(ctx, None, f"{seen.text()}: under {PART_SHARE:.0%}", Status.NOT_CAUSE,
                                evidence=evidence)
        if seen.share < DOMINANT_SHARE:
            return self.finding(ctx, None, f"{seen.text()}; under {DOMINANT_SHARE:.0%}, they explain part of the "
                                           f"time at most; the fix: {FIX}", Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{seen.text()}: {MECHANISM}; the fix: {FIX}; {EVIDENCE_ONLY}", Status.CAUSE,
                            evidence=evidence)


CAUSES = (LoaderWorkers(),)
