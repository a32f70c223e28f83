"""What the probe worker records for each cause, and the typed fact that reads it back: one :class:`Probe`
per cause that needs one (``benchctl._causes.<name>.probe``), gathered in :data:`PROBES`.

A probe writes its keys into the probe worker's note and reads the same keys back, in one file, so
no key crosses a layer as a bare string. The probe worker (:mod:`benchctl._workloads.user`) runs every
probe's :meth:`Probe.watch` around its timed iterations, :meth:`Probe.watch_call` around its profiled call
and :meth:`Probe.record` after it; :class:`benchctl._results.facts.Facts` holds one typed entry per probe
(:meth:`Probe.read`), which a cause asks for with ``facts.of(PROBE)``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from . import _plugins
from ._probe import Probe, ProbedCall

__all__ = ["ProbedCall", "Probe", "PROBES", "watching", "calling", "recorded", "read_all", "from_json"]


#: Every probe: benchctl's own causes', then those of installed packages (:mod:`benchctl._plugins`).
PROBES: tuple[Probe, ...] = _plugins.gathered("probe", "PROBES")


@contextlib.contextmanager
def watching(active: bool) -> Iterator[dict[str, Any]]:
    """Around the timed iterations of a probe worker (``active``): every probe's watch, yielding
    {key: what it yielded}; elsewhere nothing is watched and the dict stays empty."""
    if not active:
        yield {}
        return
    with contextlib.ExitStack() as stack:
        yield {p.key: stack.enter_context(p.watch()) for p in PROBES}


@contextlib.contextmanager
def calling() -> Iterator[dict[str, Any]]:
    """Around a probe worker's profiled call: every probe's call watch, yielding {key: what it yielded}."""
    with contextlib.ExitStack() as stack:
        yield {p.key: stack.enter_context(p.watch_call()) for p in PROBES}


def recorded(probed: ProbedCall) -> dict:
    """Every probe's note keys for one probe worker."""
    note: dict = {}
    for probe in PROBES:
        note.update(probe.record(probed))
    return note


def read_all(note: dict) -> dict[str, Any]:
    """{key: typed fact} from a probe note; a probe whose keys are missing is left out."""
    return {p.key: fact for p in PROBES if (fact := p.read(note)) is not None}


def from_json(data: dict) -> dict[str, Any]:
    """{key: typed fact} from a saved document's facts: its ``probed`` entries, or, in a document written
    before probes had their own entry, the same names at the top level (a document written while only some
    probes had moved holds both: each key is read from where it is)."""
    saved = {**{p.key: data[p.key] for p in PROBES if data.get(p.key)}, **(data.get("probed") or {})}
    return {p.key: p.from_json(saved[p.key]) for p in PROBES if saved.get(p.key)}
