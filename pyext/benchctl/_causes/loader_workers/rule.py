"""Cause: DataLoader worker processes started and stopped in each call.

A ``DataLoader(..., num_workers=N)`` iterated inside the timed call, built there or built once without
``persistent_workers=True``, starts N worker processes at each iteration over it (a fork of the whole process
each) and stops them at its end: for a small data set that is most of the call. No setting can change the code,
so the finding rests on the probe worker's timed iterations (:mod:`.probe`): the time spent starting the workers
(until their first batch) and stopping them against the iterations' own, judged as every share-judged cause is
(:mod:`benchctl._share_cause`).
"""

from __future__ import annotations

from ..._share_cause import ShareCause
from .probe import PROBE, LoaderFacts

__all__ = ["MECHANISM", "FIX", "LoaderWorkers", "CAUSES"]

MECHANISM = ("each iteration over a DataLoader with worker processes starts them (a fork of the whole process each) "
             "and stops them at its end, unless persistent_workers=True keeps them")
FIX = ("build the DataLoader once, outside the timed call, with persistent_workers=True (its workers then serve every "
       "iteration over it), or num_workers=0 where a batch is quick to make")


class LoaderWorkers(ShareCause):
    name = "loader_workers"
    order = 172
    title = "DataLoader worker processes started in each call"
    watch = PROBE
    unwatched = "no call shows its DataLoader workers"
    mechanism = MECHANISM
    fix = FIX
    it = "they"

    def unseen(self, seen: LoaderFacts) -> str | None:
        return None if seen.iterators else "no DataLoader started worker processes over its timed iterations"


CAUSES = (LoaderWorkers(),)
