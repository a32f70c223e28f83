"""Where the probe worker's CPU time goes, by library, over its timed iterations: the native sampler's
:class:`~benchctl._libsplit.LibrarySplit` (every thread of the process, each interrupted once per
millisecond of its CPU time; the kernel's share from the process's system time), read back as that
split. Where the sampler cannot start (no timer support, no free real-time signal, a window already
open), the split says why (:meth:`~benchctl._libsplit.LibrarySplit.not_sampled`).

And the child processes of its profiled call (:class:`ChildProcesses`): the processes it forked, and the CPU time
of those it waited for, what a call that mostly waits may have waited on (a pool of processes started in it).
"""

from __future__ import annotations

import contextlib
import os
import resource
from dataclasses import dataclass
from typing import Any, Iterator

from ... import _libsplit
from ..._probe import Probe, ProbedCall

__all__ = ["LibrarySplitProbe", "SAID", "quoted", "ChildProcesses", "ChildProcessesProbe", "PROBE", "CHILDREN",
           "PROBES"]

# The probe note's key, written and read here only.
_SPLIT = "library_split"


@dataclass
class _Unopened:
    """Stands for a window the sampler refused: its ``result`` says why."""

    result: _libsplit.LibrarySplit


class LibrarySplitProbe(Probe):
    key = "library_split"
    fact = _libsplit.LibrarySplit

    @contextlib.contextmanager
    def watch(self) -> Iterator[_libsplit.Window | _Unopened]:
        with contextlib.ExitStack() as stack:
            try:
                window = stack.enter_context(_libsplit.sampling())
            except (RuntimeError, OSError) as e:  # the workload's iterations run unsampled, and the fact says why
                window = _Unopened(_libsplit.LibrarySplit.not_sampled(str(e)))
            yield window

    def record(self, probed: ProbedCall) -> dict:
        window = probed.watcher(self)
        if window is None or window.result is None:  # a workload that times itself: its iterations were not watched
            return {}
        return {_SPLIT: window.result.to_json()}

    def read(self, note: dict) -> _libsplit.LibrarySplit | None:
        return _libsplit.LibrarySplit.from_json(note[_SPLIT]) if note.get(_SPLIT) else None

    def from_json(self, data: dict) -> _libsplit.LibrarySplit:
        return _libsplit.LibrarySplit.from_json(data)

    def time_goes(self, fact: _libsplit.LibrarySplit | None) -> str | None:
        return None if fact is None or not fact.sampled else SAID.format(split=fact.text())


#: How a cause's evidence, and an answer no cause explains, quote the split.
SAID = "CPU time of its timed iterations by library: {split}"


def quoted(facts: Any) -> str:
    """``"; CPU time of its timed iterations by library: ..."`` for a cause's evidence (the pools' and the
    allocator's), or "" where the probe worker's facts hold no sampled split."""
    split = facts.of(PROBE) if facts is not None else None
    return f"; {SAID.format(split=split.text())}" if split is not None and split.sampled else ""


@dataclass(frozen=True)
class ChildProcesses:
    """Over the profiled call: ``forks``, the processes it forked (``os.fork``: a multiprocessing pool or
    DataLoader workers with the fork start method; not ``subprocess``, which starts its programs another way),
    and ``cpu_ms``, the CPU time of the child processes it waited for."""

    forks: int = 0
    cpu_ms: float = 0.0

    @property
    def started(self) -> bool:
        return self.forks > 0 or self.cpu_ms > 0

    def text(self) -> str:
        """``"in its profiled call it forked 2 processes, and the child processes it waited for ran 45.1 ms of
        CPU"``."""
        forked = f"it forked {self.forks:,} process{'es' * (self.forks != 1)}" if self.forks else "it forked none"
        return (f"in its profiled call {forked}, and the child processes it waited for ran {self.cpu_ms:.3g} ms "
                "of CPU")


# Forks counted in this process since its first watch (a fork handler cannot be taken out again).
_forks = [0]
_counting = [False]


def _forked() -> None:
    _forks[0] += 1


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# The probe note's key, written and read here only.
_CHILDREN = "child_processes"


class ChildProcessesProbe(Probe):
    key = "child_processes"
    fact = ChildProcesses

    @contextlib.contextmanager
    def watch_call(self) -> Iterator[dict]:
        if not _counting[0]:
            os.register_at_fork(before=_forked)
            _counting[0] = True
        seen: dict = {}
        forks, cpu_s = _forks[0], _children_cpu_s()
        try:
            yield seen
        finally:
            seen.update(forks=_forks[0] - forks, cpu_ms=(_children_cpu_s() - cpu_s) * 1e3)

    def record(self, probed: ProbedCall) -> dict:
        seen = probed.call_watcher(self)
        if probed.call is None or not seen:
            return {}  # a @benchctl.workload function times its own iterations: no call was watched
        return {_CHILDREN: seen}

    def read(self, note: dict) -> ChildProcesses | None:
        return ChildProcesses(**note[_CHILDREN]) if note.get(_CHILDREN) else None


PROBE = LibrarySplitProbe()
CHILDREN = ChildProcessesProbe()
PROBES = (PROBE, CHILDREN)
