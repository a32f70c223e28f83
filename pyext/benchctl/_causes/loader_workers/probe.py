"""What the probe worker learns of DataLoader workers over its timed iterations: how many multi-process iterators
the calls made (each starts its worker processes: ``_MultiProcessingDataLoaderIter.__init__``), how many workers they
started, the time spent starting them (until their first batch came back) and stopping them (``_shutdown_workers``,
the first time for each iterator), beside the iterations' own time, read back as :class:`LoaderFacts`. The timed
iterations, not the profiled call: one call's share moved 0.49-0.70 between calls, and the profiler slows the call
around the workers, not their start.

A DataLoader with ``num_workers > 0`` starts its worker processes each time it is iterated, unless
``persistent_workers=True`` keeps them for the next epoch; built or iterated inside the timed call, each call pays
for the processes (a fork of the whole process each), for their start before they hand back a batch, and for their
shutdown: a 256-row loader with 2 workers here, 26 ms forking them, 21 ms to its first batch (later batches 5.6 ms)
and 16 ms stopping them, of a 73 ms call that takes 5.2 ms with the workers kept."""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..._probe import EntryProbe, NoteFacts, ProbedCall, milliseconds

__all__ = ["LoaderTally", "watching_loaders", "LoaderFacts", "LoaderProbe", "PROBE", "PROBES"]


@dataclass
class LoaderTally:
    """Over a block: ``iterators`` multi-process iterators made, ``workers`` processes they started, ``start_s``
    the time spent starting them (``first_batch_s`` of it waiting for their first batch beyond what a later batch
    of the same iterator waited), ``stop_s`` the time spent stopping them, ``wall_s`` the block's own time."""

    iterators: int = 0
    workers: int = 0
    start_s: float = 0.0
    first_batch_s: float = 0.0
    stop_s: float = 0.0
    wall_s: float = 0.0
    # By iterator (id), the batch waits of those started in the block: one kept from before has no team to start.
    _waits: dict[int, list[float]] = field(default_factory=dict, repr=False)

    def started(self, iterator: Any) -> None:
        self._waits[id(iterator)] = []

    def waited(self, iterator: Any, seconds: float) -> None:
        if id(iterator) in self._waits:
            self._waits[id(iterator)].append(seconds)

    def settle(self, iterator: Any | None = None) -> None:
        """Count the first-batch wait of ``iterator`` (every one left, for None): beyond the median wait of its
        later batches, which a kept worker team waits too; nothing for an iterator of one batch, whose first wait
        cannot tell starting from making the batch."""
        keys = list(self._waits) if iterator is None else [id(iterator)]
        for key in keys:
            waits = self._waits.pop(key, [])
            if len(waits) > 1:
                self.first_batch_s += max(0.0, waits[0] - statistics.median(waits[1:]))

    def note(self) -> dict:
        return {"iterators": self.iterators, "workers": self.workers, "start_ms": self.start_s * 1e3,
                "first_batch_ms": self.first_batch_s * 1e3, "stop_ms": self.stop_s * 1e3, "wall_ms": self.wall_s * 1e3}


def _iterator_class() -> Any:
    """torch's multi-process DataLoader iterator, or None where this torch has none by that name."""
    try:
        from torch.utils.data import dataloader
    except ImportError:
        return None
    return getattr(dataloader, "_MultiProcessingDataLoaderIter", None)


@contextlib.contextmanager
def watching_loaders() -> Iterator[LoaderTally]:
    """Count and time the DataLoader worker processes started and stopped inside the block, and each new team's
    wait for its first batch (torch's own methods back after it, also on an exception); yields the
    :class:`LoaderTally` it fills."""
    tally = LoaderTally()
    cls = _iterator_class()
    started = time.perf_counter()
    if cls is None:
        yield tally
        tally.wall_s = time.perf_counter() - started
        return
    own_init, own_next, own_shutdown = cls.__init__, cls._next_data, cls._shutdown_workers
    forking = [0.0]  # the fork part of start_s, apart from the first-batch waits settled into it

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        began = time.perf_counter()
        try:
            own_init(self, *args, **kwargs)
        finally:
            forking[0] += time.perf_counter() - began
            tally.started(self)
            tally.iterators += 1
            tally.workers += int(getattr(self, "_num_workers", 0) or 0)

    def next_data(self: Any) -> Any:
        began = time.perf_counter()
        try:
            return own_next(self)
        finally:
            tally.waited(self, time.perf_counter() - began)

    def shutdown(self: Any, *args: Any, **kwargs: Any) -> None:
        if getattr(self, "_shutdown", True):  # already stopped (it is called again from __del__): nothing to time
            return own_shutdown(self, *args, **kwargs)
        tally.settle(self)
        began = time.perf_counter()
        try:
            return own_shutdown(self, *args, **kwargs)
        finally:
            tally.stop_s += time.perf_counter() - began

    cls.__init__, cls._next_data, cls._shutdown_workers = init, next_data, shutdown
    try:
        yield tally
    finally:
        tally.wall_s = time.perf_counter() - started
        cls.__init__, cls._next_data, cls._shutdown_workers = own_init, own_next, own_shutdown
        tally.settle()
        tally.start_s = forking[0] + tally.first_batch_s


#: The probe note's key, written and read here only.
_LOADERS = "loader_workers"


@dataclass(frozen=True)
class LoaderFacts(NoteFacts):
    """Over the probe worker's timed iterations: ``iterators`` multi-process DataLoader iterators made, ``workers``
    processes they started, ``start_ms`` spent starting them (``first_batch_ms`` of it waiting for their first
    batches beyond a later batch's wait) and ``stop_ms`` stopping them, ``wall_ms`` the iterations' time. (A results
    file from before holds one profiled call's, without ``first_batch_ms``.)"""

    iterators: int = 0
    workers: int = 0
    start_ms: float = 0.0
    stop_ms: float = 0.0
    wall_ms: float = 0.0
    first_batch_ms: float = 0.0

    @property
    def share(self) -> float:
        """The share of the time spent starting and stopping worker processes."""
        return min(1.0, (self.start_ms + self.stop_ms) / self.wall_ms) if self.wall_ms > 0 else 0.0

    def text(self) -> str:
        """``"over its timed iterations it started 60 DataLoader worker processes (30 iterators) and stopped them:
        1.42 s starting them (457 ms of it waiting for their first batches beyond a later batch's wait) and 482 ms
        stopping them, 87% of their 2.18 s"``."""
        first = (f" ({milliseconds(self.first_batch_ms)} of it waiting for their first batches beyond a later "
                 "batch's wait)" if self.first_batch_ms > 0 else "")
        return (f"over its timed iterations it started {self.workers:,} DataLoader worker "
                f"process{'es' * (self.workers != 1)} ({self.iterators:,} iterator{'s' * (self.iterators != 1)}) and "
                f"stopped them: {milliseconds(self.start_ms)} starting them{first} and "
                f"{milliseconds(self.stop_ms)} stopping them, {self.share:.0%} of their {milliseconds(self.wall_ms)}")


class LoaderProbe(EntryProbe):
    """The DataLoader workers of the timed iterations, counted and timed (none for a workload that times itself: its
    own regions are not the window)."""

    key = "loader_workers"
    fact = LoaderFacts
    entry = _LOADERS

    def watch(self) -> contextlib.AbstractContextManager:
        return watching_loaders()

    def record(self, probed: ProbedCall) -> dict:
        tally = probed.watcher(self)
        if probed.call is None or tally is None:
            return {}
        return {_LOADERS: tally.note()}


PROBE = LoaderProbe()
PROBES = (PROBE,)
