"""The explanation engine: every judgement is a :class:`Rule` over one :class:`Context`.

A rule has three duties, each optional but the last:

* ``probes(facts)``: the settings that test it, each measured against the unchanged
  workload (``benchctl explain`` runs them as a star of ``with=[...]`` cells; a matrix
  that already varies them, as the seed scripts' do, is judged as it is);
* ``precheck(facts, penalty)``: cheap evidence, gathered before any cell runs, that rules it
  out; a reason in words, or None;
* ``judge(ctx)``: after the run, the findings of one phase (:class:`~.findings.Finding`).

:func:`judge` runs a list of rules over every phase of a document; the runner asks it which
cells are still open (:func:`open_cells`) to decide what another round measures. The generic
rules (the focus gap, what closes it, each setting's effect) are in :mod:`.verdict`, the
causes ``benchctl explain`` probes and the seeds' own rules in :mod:`benchctl._studies`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .. import settings as _settings
from . import queries
from .comparison import Comparison
from .document import cell_id
from .facts import Facts
from .findings import Finding, Status

__all__ = ["Rule", "Context", "Undone", "judge", "open_cells", "not_comparable"]


@dataclass(frozen=True)
class Undone:
    """A probe the workload's own code undid: in ``cell``, ``setting`` was applied as ``requested`` and the
    check after a timed iteration read ``seen``, what the code set."""

    cell: dict
    setting: str
    requested: Any
    seen: Any

    @property
    def text(self) -> str:
        name = self.setting
        return (f"the workload's own code set {name}={_settings.format_value(self.seen)} during the timed "
                f"iterations: the {name}={_settings.format_value(self.requested)} probe was not measured")

    def finding(self, rule: str, phase: str | None) -> Finding:
        """The finding of a rule that will not judge the cell: open, and no number of processes settles it
        (no comparison: the runner measures no more of it)."""
        return Finding(rule, phase, Status.UNRESOLVED, self.text, a=self.cell,
                       setting=f"{self.setting}={_settings.format_value(self.requested)}",
                       evidence={"undone": {"setting": self.setting, "requested": self.requested, "seen": self.seen}})


@dataclass(frozen=True)
class Context:
    """One phase of a finished run, as every rule reads it: the document, its comparisons (computed
    once for all rules), the facts from before it ran and the penalty profile."""

    doc: dict
    phase: str
    comparisons: queries.Comparisons
    focus: str | None = None
    facts: Facts | None = None
    penalty: dict | None = None

    @property
    def matrix(self) -> dict[str, list]:
        return self.doc["matrix"]

    @property
    def baseline(self) -> dict:
        return queries.baseline(self.doc)

    def cell(self, **changes: Any) -> dict:
        """The baseline cell with ``changes``."""
        return {**self.baseline, **changes}

    def probe_cell(self, probe: dict) -> dict | None:
        """The cell that applies ``probe`` (settings) to the baseline: its ``with=[...]`` value where the
        matrix has that axis, else the baseline with those axes changed; None when the matrix has no such
        cell."""
        if probe in self.matrix.get("with", []):
            return self.cell(**{"with": probe})
        if probe and all(v in self.matrix.get(k, []) for k, v in probe.items()):
            return self.cell(**probe)
        return None

    def compare(self, a: dict, b: dict) -> Comparison | None:
        """a against b in this phase (None when either has no successful process in it)."""
        return self.comparisons.compare(self.phase, a, b)

    def entry(self, cell: dict) -> dict | None:
        return queries.summary_entry(self.doc, self.phase, cell)

    def saved_ns(self, cmp: Comparison) -> float:
        """Nanoseconds an iteration saves where ``cmp`` (a cell against the baseline) is faster: the baseline's
        median times (1 - ratio); 0 where it is not faster or the baseline has no median."""
        median_ms = (self.entry(self.baseline) or {}).get("median_ms")
        return 0.0 if median_ms is None or cmp.ratio >= 1 else median_ms * 1e6 * (1 - cmp.ratio)

    def counter(self, cell: dict, field: str) -> float | None:
        """Counter ``field`` of ``cell`` per iteration (its median; the wait for a CPU's mean), or None."""
        return (self.entry(cell) or {}).get(field)

    def readback(self, cell: dict, name: str) -> dict | None:
        return queries.readback_facts(self.doc, cell, name)

    def probe_held(self, cell: dict, setting: str) -> tuple[bool, Any]:
        """(whether ``setting`` held through ``cell``'s timed iterations, what the workload's code set if not)."""
        return queries.probe_held(self.doc, cell, setting)

    def undone(self, *cells: dict) -> Undone | None:
        """The first setting of ``cells`` the workload's own code undid during the timed iterations, or None:
        a comparison of such a cell is not the probe's, and no rule judges it."""
        for cell in cells:
            for name, value in _settings.split_cell(cell)[0].items():
                held, seen = self.probe_held(cell, name)
                if not held:
                    return Undone(cell, name, value, seen)
        return None

    def undone_finding(self, rule: str, *cells: dict) -> Finding | None:
        """The finding that ``rule`` does not judge these cells because a probe in them was undone, or None."""
        found = self.undone(*cells)
        return None if found is None else found.finding(rule, self.phase)

    def band(self) -> float:
        return self.comparisons.band(self.phase)


class Rule(abc.ABC):
    """One judgement. Subclasses set ``name`` and implement :meth:`judge`."""

    name: str = ""

    @property
    def rule_name(self) -> str:
        """The ``rule`` its findings carry."""
        return self.name

    def probes(self, facts: Facts) -> list[dict[str, Any]]:
        """The settings (each a dict of setting values) whose cells this rule judges."""
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        """Why this rule cannot apply, from evidence gathered before any cell runs; None: it may."""
        return None

    def ruled_out(self, reason: str) -> Finding:
        """The finding of this rule ruled out before any cell ran."""
        return Finding(self.rule_name, None, Status.RULED_OUT, f"ruled out before running: {reason}",
                       evidence={"precheck": reason})

    @abc.abstractmethod
    def judge(self, ctx: Context) -> list[Finding]:
        """The findings of one phase."""


def not_comparable(ctx: Context) -> list[Finding]:
    """Pairs a rule wanted but the comparison refused (medians of 0 ns, say): said, not dropped."""
    return [Finding("not_comparable", ctx.phase, Status.UNRESOLVED,
                    f"cannot compare {_settings.cell_label(a)} with {_settings.cell_label(b)}: {reason}", a=a, b=b)
            for (phase, _, _), (a, b, reason) in ctx.comparisons.refused.items() if phase == ctx.phase]


def judge(doc: dict, rules: Sequence[Rule], focus: str | None = None, facts: Facts | None = None,
          penalty: dict | None = None, phases: Iterable[str] | None = None) -> list[Finding]:
    """Every rule's findings over ``phases`` (default: every phase) of ``doc``, which must have its
    ``summary``."""
    comparisons = queries.Comparisons(doc)
    out: list[Finding] = []
    for phase in (queries.phases(doc) if phases is None else phases):
        ctx = Context(doc, phase, comparisons, focus, facts, penalty)
        for rule in rules:
            out += rule.judge(ctx)
        out += not_comparable(ctx)
    return out


def open_cells(findings: Iterable[Finding]) -> list[dict]:
    """The cells of every finding more processes could settle, each once, in order of first mention."""
    seen: dict[str, dict] = {}
    for f in findings:
        if f.is_open:
            for cell in f.cells():
                seen.setdefault(cell_id(cell), cell)
    return list(seen.values())
