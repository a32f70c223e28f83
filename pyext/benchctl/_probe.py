"""What a probe is: :class:`Probe`, one cause's evidence from the probe worker, and :class:`ProbedCall`,
what it can look at (:mod:`benchctl.probes` gathers them all)."""

from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

__all__ = ["ProbedCall", "Probe", "NoteFacts", "EntryProbe", "CallCensusProbe", "milliseconds", "hook_name"]


@dataclass(frozen=True)
class ProbedCall:
    """What a probe can look at after the probe worker's timed iterations: the workload's ``call`` (None: a
    workload that times itself), the torch ``modules`` found in its state, the thread counts its code set
    (``thread_calls``) and what each probe's watch saw over the timed iterations (``watched``, by key) and
    over the profiled call (``called``, by key)."""

    call: Callable[[], Any] | None = None
    modules: tuple = ()
    thread_calls: Any = None
    watched: dict[str, Any] = field(default_factory=dict)
    called: dict[str, Any] = field(default_factory=dict)

    def watcher(self, probe: "Probe") -> Any:
        """What ``probe``'s :meth:`Probe.watch` yielded over the timed iterations (None: none ran)."""
        return self.watched.get(probe.key)

    def call_watcher(self, probe: "Probe") -> Any:
        """What ``probe``'s :meth:`Probe.watch_call` yielded over the profiled call (None: none ran)."""
        return self.called.get(probe.key)


class Probe(abc.ABC):
    """One cause's evidence from the probe worker. ``key`` names its typed fact in
    :class:`~benchctl._results.facts.Facts` and in a saved document's facts; ``fact`` is that fact's frozen
    dataclass, built by :meth:`read` from the note's keys this probe wrote with :meth:`record`."""

    key: ClassVar[str] = ""
    fact: ClassVar[type] = object

    def watch(self) -> contextlib.AbstractContextManager:
        """A context around the timed iterations whose value :meth:`record` gets back (default: none)."""
        return contextlib.nullcontext()

    def watch_call(self) -> contextlib.AbstractContextManager:
        """A context around the profiled call (inside the profiler) whose value :meth:`record` gets back
        (default: none)."""
        return contextlib.nullcontext()

    @abc.abstractmethod
    def record(self, probed: ProbedCall) -> dict:
        """The probe note's keys for this cause, JSON-serialisable (worker side, after the profiled call)."""

    @abc.abstractmethod
    def read(self, note: dict) -> Any:
        """The typed fact from the probe note's keys, or None where they are missing."""

    def from_json(self, data: dict) -> Any:
        """The typed fact from a saved document's facts (its dataclass fields)."""
        return self.fact(**data)

    def time_goes(self, fact: Any) -> str | None:
        """Where the workload's time goes by this probe's ``fact``, said beneath an answer no cause explains
        (the library split's: by library); None (the default): this probe has nothing to say there."""
        return None


def milliseconds(ms: float) -> str:
    """A time as a probe's facts say it, to 3 digits: ``"54.9 ms"``, or ``"1.46 s"`` from a second on."""
    return f"{ms:.3g} ms" if ms < 1e3 else f"{ms / 1e3:.3g} s"


class NoteFacts:
    """A typed fact written as one entry of the probe note: a dict of its dataclass fields, read back by name
    (a key it does not know is left out, so a results file of another benchctl version still reads)."""

    @classmethod
    def from_note(cls, note: dict | None) -> Any:
        """The fact of the note's entry ``note``; None where the entry is missing (the call was not watched)."""
        if note is None:
            return None
        return cls(**{k: v for k, v in note.items() if k in cls.__dataclass_fields__})


class EntryProbe(Probe):
    """A probe whose note is one entry, ``entry``, holding the fields of its :class:`NoteFacts` fact."""

    entry: ClassVar[str] = ""

    def read(self, note: dict) -> Any:
        return self.fact.from_note(note.get(self.entry))

    def from_json(self, data: dict) -> Any:
        return self.fact.from_note(data)


class CallCensusProbe(EntryProbe):
    """An :class:`EntryProbe` whose entry is one more call of the workload (untimed, after the profiled one)
    under its cause's census, :meth:`call_census`; none for a workload that times itself, which has no call to run."""

    @abc.abstractmethod
    def call_census(self, probed: ProbedCall) -> dict[str, Any]:
        """The entry's fields from one more call of ``probed.call``, run under this cause's census."""

    def record(self, probed: ProbedCall) -> dict:
        if probed.call is None:
            return {}  # a @benchctl.workload function times its own iterations: no call to run again
        return {self.entry: self.call_census(probed)}


def hook_name(hook: Any) -> str:
    """``"log_stats"``, ``"Logger.record"``: the function a hook calls (through a ``functools.partial`` too), by its
    own name where it was defined in a function (not the enclosing one's), as a probe's evidence names hooks."""
    hook = getattr(hook, "func", hook)
    name = getattr(hook, "__qualname__", None) or type(hook).__name__
    return name.rsplit("<locals>.", 1)[-1]
