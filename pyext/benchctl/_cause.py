"""What every cause is, and what causes share: a rule of the engine (:class:`benchctl._results.rules.Rule`)
that names one reason a timing can have, probes it, and judges it with its evidence.

A cause is one small class (threadpoolctl's controllers are the model): ``name`` and ``title``,
``probes(facts)`` and ``precheck(facts, penalty)`` as every rule has, and ``judge_phase(ctx)``:
the one finding of a phase, or None when the run did not measure what the cause needs. Its
words come from the comparison (:class:`~benchctl._results.comparison.Comparison`) and its
mechanism sentence from the setting that probes it (:mod:`benchctl.settings`).
"""

from __future__ import annotations

import abc
from dataclasses import replace
from typing import Any

from . import settings
from ._setting import Setting
from ._results import queries, wording
from ._results.comparison import Comparison, Outcome
from ._results.document import cell_id
from ._results.counter_evidence import FAULT_COST_MIN_US, MINOR_FAULTS
from ._results.facts import Facts
from ._results.findings import Finding, Status
from ._results.rules import Context, Rule
from ._results.verdict import setting_text

__all__ = ["Cause", "mechanism", "probe_of", "probe_text", "EVIDENCE_ONLY", "NOT_RUN", "NO_COMPARISON", "NOT_WATCHED",
           "NEGLIGIBLE_SHARE", "probe_phase", "faults_negligible"]


#: What an evidence-only finding says of its fix.
EVIDENCE_ONLY = "evidence only (no setting can change the code, so no fix was measured)"
#: What a cause says when its probe cell ran no process (the budget ran out before it: a loaded machine).
NOT_RUN = "not measured: its {probe} cell ran no process within the budget"
#: Where the probe cell's processes ran and none failed, yet none gave a value to compare in this phase (a paired
#: worker that ended before reaching one of its arms).
NO_COMPARISON = ("not measured: its {probe} cell ran {processes} process(es), none of which gave a value to compare "
                 "with the unchanged workload in this phase")
#: Why a cause whose evidence or probe is the workload's call is out for a workload that times itself.
NOT_WATCHED = "its calls were not watched (a @benchctl.workload function times its own iterations): {missing}"
#: A cost under this share of an iteration cannot explain its time: what every pre-check calls negligible.
NEGLIGIBLE_SHARE = 0.01
#: How much of a failed process's error a finding quotes.
FAILED_ERROR_CHARS = 160


def probe_phase(facts: Facts | None) -> str | None:
    """:meth:`Facts.profiled_phase` of ``facts``, or None without facts."""
    return facts.profiled_phase() if facts else None


def faults_negligible(facts: Facts) -> str | None:
    """Why the probe worker's minor page faults cannot explain its time (they would cost under
    :data:`NEGLIGIBLE_SHARE` of every phase's iteration), or None when they could or are unknown."""
    costs = []
    for phase in facts.phases:
        faults, ms = facts.counters[phase].get(MINOR_FAULTS), facts.median_ms.get(phase)
        if faults is None or not ms:
            return None  # unknown: nothing is ruled out
        cost_ms = faults * FAULT_COST_MIN_US / 1e3
        if cost_ms >= NEGLIGIBLE_SHARE * ms:
            return None
        costs.append(f"{wording.count(faults)} minor faults per {phase} iteration would cost about "
                     f"{cost_ms * 1e3:.0f} µs of its {ms:.3g} ms")
    if not costs:
        return None
    return "; ".join(costs) + f" (at {FAULT_COST_MIN_US} µs a fault): under {NEGLIGIBLE_SHARE:.0%}"


def mechanism(setting: Setting) -> str:
    """The mechanism sentence ``setting`` declares (what it removes when it is the cause)."""
    return setting.mechanism


def probe_of(setting: Setting) -> dict[str, Any]:
    """The probe ``setting`` declares, as a cell's settings: ``{"ftz": "process"}``."""
    return {setting.name: setting.probe}


def probe_text(probe: dict[str, Any]) -> str:
    """``"threads=1"``: a probe as the setting it is about."""
    return ",".join(setting_text(k, v) for k, v in probe.items())


class Cause(Rule):
    """One cause a timing can have. Subclasses set ``name`` and ``title`` and implement :meth:`judge_phase`."""

    title = ""
    #: Where its finding stands in the answer among findings of the same mark, lowest first: benchctl's CPU
    #: causes from 10, its GPU causes from 200 (ruled out at once where no CUDA work ran); another package's
    #: cause is placed after them unless it says otherwise.
    order = 500
    #: The probe in words where it depends on the workload's evidence (``probes(None)`` is then empty);
    #: None: it has no probe, its evidence alone judges it.
    probe_words: str | None = None

    @property
    def rule_name(self) -> str:
        return f"cause_{self.name}"

    def judge(self, ctx: Context) -> list[Finding]:
        """The finding of :meth:`judge_phase`; or, where the workload's own code undid one of this cause's
        probes during the timed iterations (its setup() called torch.set_num_threads(2) in a threads=1
        cell), the open finding that says so: a probe that was not measured is never judged."""
        cells = [c for c in (ctx.probe_cell(p) for p in self.probes(ctx.facts)) if c is not None]
        undone = ctx.undone(ctx.baseline, *cells) if cells else None
        if undone is not None:
            found = undone.finding(self.rule_name, ctx.phase)
            return [replace(found, message=f"{self.title}: {found.message}")]
        found = self.judge_phase(ctx)
        return [] if found is None else [found]

    @abc.abstractmethod
    def judge_phase(self, ctx: Context) -> Finding | None:
        """This cause's finding in ``ctx.phase``, or None when the run has nothing to judge it on."""

    def probed(self, ctx: Context) -> tuple[dict, Comparison] | None:
        """(the first probe's cell, its comparison with the unchanged workload) in this phase, or None."""
        for probe in self.probes(ctx.facts):
            cell = ctx.probe_cell(probe)
            cmp = None if cell is None else ctx.compare(cell, ctx.baseline)
            if cmp is not None:
                return cell, cmp
        return None

    def finding(self, ctx_or_phase: Context | str | None, cmp: Comparison | None, text: str, status: Status,
                **fields: Any) -> Finding:
        """This cause's finding, its text prefixed with the title."""
        phase = ctx_or_phase.phase if isinstance(ctx_or_phase, Context) else ctx_or_phase
        return Finding(self.rule_name, phase, status, f"{self.title}: {text}", cmp, **fields)

    def not_found(self, ctx: Context, cmp: Comparison, what: str, suffix: str = "", **fields: Any) -> Finding:
        """The finding when the probe does not explain the time (no effect, the opposite one, or open)."""
        status = Status.UNRESOLVED if cmp.outcome in (Outcome.UNRESOLVED, Outcome.ONE_PROCESS) else Status.NOT_CAUSE
        words = cmp.change_text(what) + (": not what this cause would do" if cmp.beyond_band else "")
        return self.finding(ctx, cmp, words + suffix, status, **fields)

    def not_run(self, ctx: Context, cell: dict | None) -> Finding | None:
        """The open finding when the probe ``cell`` is in the matrix yet ran no process at all, or None."""
        if cell is None or any(cell_id(r["cell"]) == cell_id(cell) for r in ctx.doc["runs"]):
            return None
        probe = probe_text(settings.split_cell(cell)[0])
        return self.finding(ctx, None, NOT_RUN.format(probe=probe), Status.UNRESOLVED, a=cell, b=ctx.baseline,
                            setting=probe)

    def no_comparison(self, ctx: Context, cell: dict | None) -> Finding | None:
        """The open finding when the probe ``cell`` ran processes, none failed, and none gave this phase a value to
        compare (:data:`NO_COMPARISON`), or None: without it the cause fell out of the answer."""
        if cell is None:
            return None
        runs = [r for r in ctx.doc["runs"] if cell_id(r["cell"]) == cell_id(cell)]
        if not runs or any(r.get("status") != "ok" for r in runs):
            return None
        probe = probe_text(settings.split_cell(cell)[0])
        return self.finding(ctx, None, NO_COMPARISON.format(probe=probe, processes=len(runs)), Status.UNRESOLVED,
                            a=cell, b=ctx.baseline, setting=probe)

    def failed_error(self, ctx: Context, cell: dict) -> str | None:
        """The first line of the error of the first failed process of ``cell`` (what a probe that breaks the
        code's call ran into), or None where none of its processes failed."""
        key = cell_id(cell)
        errors = [r.get("error") or "" for r in queries.failed_runs(ctx.doc) if cell_id(r["cell"]) == key]
        if not errors:
            return None
        return errors[0].splitlines()[0][:FAILED_ERROR_CHARS] if errors[0] else "no error recorded"

    def unmeasured(self, ctx: Context, cell: dict | None, under: str) -> Finding | None:
        """Where the probe ``cell`` has no comparison: the open finding when it ran no process, when its processes
        failed (the code's call fails ``under`` the probe, e.g. "with its hooks detached"), or when they ran and gave
        nothing to compare (:meth:`no_comparison`); None where the cell is not in the matrix."""
        failed = self.not_run(ctx, cell)
        error = None if failed is not None or cell is None else self.failed_error(ctx, cell)
        if error is None:
            return failed or self.no_comparison(ctx, cell)
        probe = probe_text(settings.split_cell(cell)[0])
        return self.finding(ctx, None, f"not measured: {under} its call fails ({error})", Status.UNRESOLVED, a=cell,
                            b=ctx.baseline, setting=probe)

    @staticmethod
    def readback_suffix(ctx: Context, cell: dict, setting: Setting) -> str:
        """``"; kept off against 30 calls of the code that turned it on"``: what ``setting`` read back in ``cell``
        (one phrase for all its processes), or ""."""
        reach = ctx.readback(cell, setting.name) or {}
        phrase = setting.facts_phrase(reach) if isinstance(reach, dict) and "varies" not in reach else ""
        return f"; {phrase}" if phrase else ""

    def ruled_out(self, reason: str) -> Finding:
        """The finding of a cause ruled out before any cell ran, its text prefixed with the title."""
        found = super().ruled_out(reason)
        return replace(found, message=f"{self.title}: {found.message}")
