"""What the probe worker learns of DataLoader workers over its profiled call: how many multi-process iterators the
call made (each starts its worker processes: ``_MultiProcessingDataLoaderIter.__init__``), how many workers they
started, and the time spent starting them and stopping them (``_shutdown_workers``, the first time for each
iterator), beside the call's own time, read back as :class:`LoaderFacts`.

A DataLoader with ``num_workers > 0`` starts its worker processes each time it is iterated, unless
``persistent_workers=True`` keeps them for the next epoch; built or iterated inside the timed call, each call pays
for the processes (a fork of the whole process each) and their shutdown: a 256-row loader with 2 workers here,
15-21 ms starting them and 9-11 ms stopping them, of a 45 ms call."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Iterator

from ..._probe import EntryProbe, NoteFacts, ProbedCall

__all__ = ["LoaderTally", "watching_loaders", "LoaderFacts", "LoaderProbe", "PROBE", "PROBES"]


@dataclass
class LoaderTally:
    """Over a block: ``iterators`` multi-process iterators made, ``workers`` processes they started, ``start_s``
    and ``stop_s`` the time spent starting and stopping them, ``wall_s`` the block's own time."""

    iterators: int = 0
    workers: int = 0
    start_s: float = 0.0
    stop_s: float = 0.0
    wall_s: float = 0.0

    def note(self) -> dict:
        return {"iterators": self.iterators, "workers": self.workers, "start_ms": self.start_s * 1e3,
                "stop_ms": self.stop_s * 1e3, "wall_ms": self.wall_s * 1e3}


def _iterator_class() -> Any:
    """torch's multi-process DataLoader iterator, or None where this torch has none by that name."""
    try:
        from torch.utils.data import dataloader
    except ImportError:
        return None
    return getattr(dataloader, "_MultiProcessingDataLoaderIter", None)


@contextlib.contextmanager
def watching_loaders() -> Iterator[LoaderTally]:
    """Count and time the DataLoader worker processes started and stopped inside the block (torch's own methods
    back after it, also on an exception); yields the :class:`LoaderTally` it fills."""
    tally = LoaderTally()
    cls = _iterator_class()
    started = time.perf_counter()
    if cls is None:
        yield tally
        tally.wall_s = time.perf_counter() - started
        return
    own_init, own_shutdown = cls.__init__, cls._shutdown_workers

    def init(self, *args: Any, **kwargs: Any) -> None:
        began = time.perf_counter()
        try:
            own_init(self, *args, **kwargs)
        finally:
            tally.start_s += time.perf_counter() - began
            tally.iterators += 1
            tally.workers += int(getattr(self, "_num_workers", 0) or 0)

    def shutdown(self, *args: Any, **kwargs: Any) -> None:
        if getattr(self, "_shutdown", True):  # already stopped (it is called again from __del__): nothing to time
            return own_shutdown(self, *args, **kwargs)
        began = time.perf_counter()
        try:
            return own_shutdown(self, *args, **kwargs)
        finally:
            tally.stop_s += time.perf_counter() - began

    cls.__init__, cls._shutdown_workers = init, shutdown
    try:
        yield tally
    finally:
        tally.wall_s = time.perf_counter() - started
        cls.__init__, cls._shutdown_workers = own_init, own_shutdown


#: The probe note's key, written and read here only.
_LOADERS = "loader_workers"


@dataclass(frozen=True)
class LoaderFacts(NoteFacts):
    """In the profiled call: ``iterators`` multi-process DataLoader iterators made, ``workers`` processes they
    started, ``start_ms`` and ``stop_ms`` spent starting and stopping them, ``wall_ms`` the call's time."""

    iterators: int = 0
    workers: int = 0
    start_ms: float = 0.0
    stop_ms: float = 0.0
    wall_ms: float = 0.0

    @property
    def share(self) -> float:
        """The share of the call spent starting and stopping worker processes."""
        return min(1.0, (self.start_ms + self.stop_ms) / self.wall_ms) if self.wall_ms > 0 else 0.0

    def text(self) -> str:
        """``"its profiled call started 2 DataLoader worker processes (1 iterator) and stopped them: 16.2 ms
        starting and 10.5 ms stopping them, 58% of its 45.9 ms call"``."""
        return (f"its profiled call started {self.workers:,} DataLoader worker process{'es' * (self.workers != 1)} "
                f"({self.iterators:,} iterator{'s' * (self.iterators != 1)}) and stopped them: "
                f"{self.start_ms:.3g} ms starting and {self.stop_ms:.3g} ms stopping them, {self.share:.0%} of its "
                f"{self.wall_ms:.3g} ms call")


class LoaderProbe(EntryProbe):
    """The DataLoader workers of the profiled call, counted and timed (none for a workload that times itself)."""

    key = "loader_workers"
    fact = LoaderFacts
    entry = _LOADERS

    def watch_call(self) -> contextlib.AbstractContextManager:
        return watching_loaders()

    def record(self, probed: ProbedCall) -> dict:
        tally = probed.call_watcher(self)
        if probed.call is None or tally is None:
            return {}
        return {_LOADERS: tally.note()}


PROBE = LoaderProbe()
PROBES = (PROBE,)
