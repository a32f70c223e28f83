"""Where the probe worker's CPU time goes, by library, over its timed iterations: the native sampler's
:class:`~benchctl._libsplit.LibrarySplit` (every thread of the process, each interrupted once per
millisecond of its CPU time; the kernel's share from the process's system time), read back as that
split. Where the sampler cannot start (no timer support, no free real-time signal, a window already
open), the split says why (:meth:`~benchctl._libsplit.LibrarySplit.not_sampled`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

from ... import _libsplit
from ..._probe import Probe, ProbedCall

__all__ = ["LibrarySplitProbe", "SAID", "quoted", "PROBE", "PROBES"]

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


PROBE = LibrarySplitProbe()
PROBES = (PROBE,)
