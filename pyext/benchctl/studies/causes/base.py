"""What every cause in the library declares, and the facts and comparisons it is judged on.

A cause is one small class (threadpoolctl's controllers are the model):

* ``probes(facts)``: the settings that test it, each a ``with=[...]`` value
  measured against the unchanged workload (none when there is nothing to vary);
* ``precheck(facts, penalty)``: cheap evidence, gathered before any cell runs,
  that rules it out; a reason in words, or None;
* ``judge(ctx, phase)``: after the run, a finding saying whether it explains
  the time, with its evidence (counters, readback, census) and wording.

:class:`Facts` is what one probe worker measured about the workload;
:class:`Context` is the finished run, with its comparisons.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ...results import processes, queries, wording
from ...results.summary import COUNTER_FIELDS
from ...results.verdict import Finding, ratio_text

__all__ = ["CAUSE", "UNCONFIRMED", "UNRESOLVED", "NOT_CAUSE", "RULED_OUT", "MARKS", "Facts", "Context", "Cause",
           "counter", "moved_down", "effect_text", "no_cause"]

# What a cause's finding says of it, and its mark in the answer.
CAUSE, UNCONFIRMED, UNRESOLVED, NOT_CAUSE, RULED_OUT = "cause", "unconfirmed", "unresolved", "not_cause", "ruled_out"
MARKS = {CAUSE: "*", UNCONFIRMED: "?", UNRESOLVED: "?", NOT_CAUSE: "-", RULED_OUT: "-"}


@dataclass
class Facts:
    """What the probe worker saw of the workload, unchanged, in one fresh process.

    ``phases``: in the order they first ran; ``median_ms`` and ``counters``
    per phase (per-iteration medians of faults, context switches,
    migrations); ``ops``: the torch ops one call ran (the profiler's names;
    empty when unknown); ``census``: subnormal counts in what it computes
    (``outputs``, ``activations``, ``weights``; None when unknown); ``pools``:
    the thread pools threadpoolctl saw; ``cpus``: CPUs this process may use.
    """

    phases: list[str]
    median_ms: dict[str, float]
    counters: dict[str, dict[str, float | None]]
    ops: list[str] = field(default_factory=list)
    census: dict | None = None
    pools: list[dict] = field(default_factory=list)
    cpus: int = field(default_factory=lambda: len(os.sched_getaffinity(0)))

    @classmethod
    def from_probe(cls, doc: dict) -> "Facts":
        """The facts in a results document whose one run is the probe worker."""
        cell = queries.cells(doc)[0]
        phases = queries.phases(doc)
        summaries = {p: queries.summary_entry(doc, p, cell) or {} for p in phases}
        notes = (queries.ok_runs(doc, cell) or [{}])[0].get("notes", {})
        probe = notes.get("probe") or {}
        census = {k: probe[k] for k in ("outputs", "activations", "weights") if k in probe} or None
        return cls(phases=phases,
                   median_ms={p: s.get("median_ms") for p, s in summaries.items()},
                   counters={p: {f: s.get(f) for f in COUNTER_FIELDS.values()} for p, s in summaries.items()},
                   ops=list(probe.get("ops", [])), census=census, pools=list(notes.get("pools", [])))

    def subnormals(self) -> int | None:
        """Subnormal values seen in what the workload computes, or None when nothing was counted."""
        if not self.census:
            return None
        return sum(part.get("subnormal", 0) for part in self.census.values())


@dataclass
class Context:
    """A finished explaining run: its document, comparisons and the facts from before it."""

    doc: dict
    facts: Facts
    penalty: dict | None
    baseline: dict
    comparisons: queries.Comparisons

    @classmethod
    def of(cls, doc: dict, facts: Facts, penalty: dict | None) -> "Context":
        return cls(doc, facts, penalty, queries.baseline(doc), queries.Comparisons(doc))

    def cell(self, probe: dict) -> dict:
        return {**self.baseline, "with": probe}

    def compare(self, phase: str, probe: dict) -> dict | None:
        """The probe's cell against the unchanged workload in ``phase`` (ratio < 1: the probe is faster)."""
        return self.comparisons.compare(phase, self.cell(probe), self.baseline)

    def counter(self, phase: str, probe: dict | None, field_name: str) -> float | None:
        entry = queries.summary_entry(self.doc, phase, self.baseline if probe is None else self.cell(probe))
        return (entry or {}).get(field_name)


def counter(value: float | None) -> str:
    return wording.count(value)


def effect_text(cmp: dict) -> str:
    """``"1.45× faster [95% CI 1.38, 1.52]"`` (or slower) of a resolved comparison."""
    return " ".join(wording.slower_or_faster(cmp["ratio"], cmp["ci95"]))


def no_cause(cmp: dict, what: str) -> str:
    """Why a probe does not explain the time: no effect, the opposite effect, unresolved, one process."""
    outcome = cmp["outcome"]
    if outcome == processes.NO_EFFECT:
        return f"{what} changes nothing beyond ±{cmp['band']:.0%} ({ratio_text(cmp)})"
    if outcome == processes.EFFECT:
        return f"{what} makes it {effect_text(cmp)}: not what this cause would do"
    if outcome == processes.UNRESOLVED:
        return f"unresolved: {what} gives {ratio_text(cmp)}, across the ±{cmp['band']:.0%} band"
    return f"{what} gives {ratio_text(cmp)}: one process per cell calls nothing"


def moved_down(before: float | None, after: float | None, factor: float = 2.0, least: float = 1.0) -> bool:
    """Whether a per-iteration counter fell by ``factor`` and by at least ``least`` events."""
    if before is None or after is None:
        return False
    return before - after >= least and after * factor <= before


class Cause:
    """One cause a timing can have. Subclasses set ``name`` and ``title`` and override the three duties."""

    name = ""
    title = ""

    def probes(self, facts: Facts) -> list[dict[str, Any]]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        return None

    def judge(self, ctx: Context, phase: str) -> Finding | None:
        raise NotImplementedError

    def finding(self, phase: str | None, cmp: dict | None, text: str, status: str, **fields: Any) -> Finding:
        """This cause's finding: ``status`` (:data:`CAUSE`, ...) decides ``explains`` and the answer's mark."""
        fields["evidence"] = {**fields.get("evidence", {}), "status": status}
        return Finding.of(f"cause_{self.name}", phase, cmp, f"{self.title}: {text}", explains=status == CAUSE,
                          **{k: v for k, v in fields.items() if k != "explains"})

    def not_found(self, phase: str, cmp: dict, what: str, **fields: Any) -> Finding:
        """The finding when the probe does not explain the time (no effect, the opposite one, or unresolved)."""
        status = UNRESOLVED if cmp["outcome"] in (processes.UNRESOLVED, processes.ONE_PROCESS) else NOT_CAUSE
        return self.finding(phase, cmp, no_cause(cmp, what) + fields.pop("suffix", ""), status, **fields)

    def ruled_out(self, reason: str) -> Finding:
        """The finding of a cause ruled out before any cell ran."""
        return self.finding(None, None, f"ruled out before running: {reason}", RULED_OUT, significant=None,
                            evidence={"precheck": reason})
