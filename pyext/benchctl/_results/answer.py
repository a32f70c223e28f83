"""The answer: every finding of a run said once, marked, the causes first; the last block on screen.

``*`` a measured effect and what explains it, ``?`` an open question (with about how many
processes per cell would settle it), ``-`` ruled out and why (:data:`~.findings.LEGEND`).
The ``*`` and ``?`` findings get a line each; the ``-`` ones, which a user did not come for
(a CPU-only machine rules out every GPU cause), are named on one line, their reasons said
only with ``verbose`` (:data:`VERBOSE_FLAG`; the results file keeps every finding with its
reason either way). Findings a rule keeps for the report only (``in_answer=False``: a
setting's lack of effect, which the per-cell table shows) are left out. When no finding of
a judged phase names a cause, the answer says so in words, and beneath it where the time goes in
the probe worker's profiled call (its top ops by self time, with their shapes).
"""

from __future__ import annotations

from typing import Callable, Iterable

from .. import probes
from . import processes, wording
from .comparison import FLOOR, MAX_NO_EFFECT_BAND
from .facts import Facts
from .findings import LEGEND, Finding, Status

__all__ = ["NO_CAUSE", "NO_CAUSE_UNRESOLVED", "TOP_OPS", "TOP_OPS_SAID", "VERBOSE_FLAG", "settle_text", "finding_name",
           "format_answer"]

#: Said of a phase none of whose findings names a cause.
NO_CAUSE = ("none of the probed causes explains the time of {subject} in phase {phase}: each is ruled out, shows "
            "no effect beyond ±{band:.0%}, or is open")
#: :data:`NO_CAUSE` where the band is wider than "no effect" is ever said against: no cell can then show none.
NO_CAUSE_UNRESOLVED = ("none of the probed causes explains the time of {subject} in phase {phase}, and this run "
                       "cannot tell whether one would: identical processes differ by up to ±{band:.0%} here, over "
                       "the ±{most:.0%} within which 'no effect' is said; more processes (a longer budget) or a "
                       "quieter machine narrow it")
#: Said beneath :data:`NO_CAUSE` of the phase of the probe worker's profiled call: where its time went, by op.
TOP_OPS_SAID = "its profiled call ({wall_ms:.3g} ms) spent {ops}"
#: How many ops, by self time, :data:`TOP_OPS_SAID` names.
TOP_OPS = 3
#: The command-line flag that prints every ``-`` finding with its reason (the commands that print an answer
#: take it: :func:`benchctl._cli.options.add_answer_argument`).
VERBOSE_FLAG = "--verbose"
#: What the one line of ``-`` findings says of each kind, in this order.
_NOT_IT = {Status.RULED_OUT: "ruled out before running", Status.NOT_CAUSE: "measured, not the cause"}
# A cause's findings carry the rule "cause_<name>" (Cause.rule_name, in benchctl._studies): the name is what a
# user reads elsewhere (explain's help, the results file).
_CAUSE_RULE = "cause_"
# The order of the marks in an answer: what was found, what is open, what was measured not to be the cause,
# and last what was ruled out before running.
_ORDER = {"*": 0, "?": 1, "-": 2}


def settle_text(finding: Finding) -> str:
    """About how many processes per cell would settle an open finding, in words ("" when it is not open)."""
    cmp = finding.comparison
    if not finding.is_open or cmp.ci95 is None:  # one process a side: its own words say two are needed
        return ""
    need = processes.processes_to_resolve(cmp, cmp.band)
    if need is None:
        return "; no number of processes would settle it (its difference sits on the band's edge)"
    if need > processes.MAX_ESTIMATE:
        return f"; more than {processes.MAX_ESTIMATE} processes per cell would be needed to settle it"
    return f"; about {need} processes per cell would settle it"


def finding_name(finding: Finding, with_phase: bool = False) -> str:
    """What a finding is about, in a word: its cause's name (``thp``), else the setting it judges
    (``ftz=process``), else its rule; ``[phase]`` first with ``with_phase``."""
    if finding.rule.startswith(_CAUSE_RULE):
        name = finding.rule[len(_CAUSE_RULE):]
    else:
        name = finding.setting or finding.rule
    return f"[{finding.phase}] {name}" if with_phase and finding.phase else name


def _line(finding: Finding, with_phase: bool, beside: Callable[[Finding], str]) -> str:
    where = f"[{finding.phase}] " if with_phase and finding.phase else ""
    return f" {finding.mark} {where}{finding.message}{settle_text(finding)}{beside(finding)}"


def _not_it_line(findings: list[Finding], with_phase: bool) -> list[str]:
    """The ``-`` findings named on one line, by kind; the reasons behind :data:`VERBOSE_FLAG`."""
    groups = []
    for status, words in _NOT_IT.items():
        names = dict.fromkeys(finding_name(f, with_phase) for f in findings if f.status is status)
        if names:
            groups.append(f"{words}: {', '.join(names)}")
    return [f" - {'; '.join(groups)} (why each: {VERBOSE_FLAG})"] if groups else []


def _top_ops(facts: Facts) -> str | None:
    """``"its profiled call (0.73 ms) spent 84% in aten::mm on 384x384, 384x384 (1 call), ..."``: the ops with the
    most self time, as shares of the call's wall time; None when no op time is known."""
    rows = sorted(facts.op_table, key=lambda r: -r.self_us)[:TOP_OPS]
    if not rows or not facts.call_wall_us:
        return None
    ops = ", ".join(f"{r.self_us / facts.call_wall_us:.0%} in {r.op}{f' on {r.shapes_text}' if r.shapes_text else ''} "
                    f"({wording.count(r.calls)} call{'s' * (r.calls != 1)})" for r in rows)
    return TOP_OPS_SAID.format(wall_ms=facts.call_wall_us / 1e3, ops=ops)


def _by_probes(facts: Facts) -> str | None:
    """What the probes say of where the time goes (:meth:`benchctl.probes.Probe.time_goes`: the split by
    library), or None."""
    said = [s for p in probes.PROBES if (fact := facts.of(p)) is not None and (s := p.time_goes(fact))]
    return "; ".join(said) or None


# What is said beneath NO_CAUSE of where the time goes, one line each, from the probe worker's facts.
_WHERE_TIME_GOES: tuple[Callable[[Facts], str | None], ...] = (_top_ops, _by_probes)


def _where_time_goes(facts: Facts | None, phase: str) -> list[str]:
    """The lines beneath :data:`NO_CAUSE` for ``phase``: only that of the probe worker's profiled call has them."""
    if facts is None or phase != facts.profiled_phase():
        return []
    return [f"   {said}" for said in (where(facts) for where in _WHERE_TIME_GOES) if said]


def _unexplained(found: list[Finding], subject: str, facts: Facts | None = None, busy: bool = False) -> list[str]:
    """A sentence for each phase whose findings compare cells but name no cause, and beneath it where the time
    goes (:func:`_where_time_goes`); ``busy``: the answer's first line already says why no cause is named (the
    machine was busy), so the sentence is left out and where the time goes stays."""
    lines = []
    for phase in dict.fromkeys(f.phase for f in found if f.phase is not None):
        judged = [f for f in found if f.phase == phase]
        if any(f.comparison is not None for f in judged) and not any(f.status is Status.CAUSE for f in judged):
            band = max((f.comparison.band for f in judged if f.comparison is not None), default=FLOOR)
            if not busy:
                band = max(band, FLOOR)
                said = NO_CAUSE if band <= MAX_NO_EFFECT_BAND else NO_CAUSE_UNRESOLVED
                lines.append(" " + said.format(subject=subject, phase=phase, band=band, most=MAX_NO_EFFECT_BAND))
            lines.extend(_where_time_goes(facts, phase))
    return lines


def format_answer(findings: Iterable[Finding], subject: str, beside: Callable[[Finding], str] = lambda f: "",
                  verbose: bool = False, first: str | None = None, facts: Facts | None = None) -> str:
    """The answer about ``subject`` (a workload or target), from a run's findings; ``beside(finding)``: what the
    run's processes add to a finding's line (a slowed process that widens an open one); ``verbose``: a line
    with its reason for each ``-`` finding too, instead of their names on one line; ``first``: what the answer
    says before anything else (the machine was too busy for one), instead of the sentence that no probed cause
    explains the time; ``facts``: the probe worker's, for where the time goes when no cause explains it."""
    said = _findings_said(list(findings), subject, beside, verbose, facts, busy=first is not None)
    if first is None:
        return said
    head, _, rest = said.partition("\n")  # right under the heading, above every finding
    return "\n".join(line for line in (head, f" {first}", rest) if line)


def _findings_said(findings: list[Finding], subject: str, beside: Callable[[Finding], str], verbose: bool,
                   facts: Facts | None, busy: bool) -> str:
    """The answer's heading and its findings (:func:`format_answer` less its first line)."""
    found = [f for f in findings if f.in_answer]
    if not found and findings:
        return (f"Answer for {subject}: no cell differs from the baseline beyond the no-effect band (each cell "
                "against the baseline is in the table above)")
    if not found:
        return (f"Answer for {subject}: no finding: no two cells to compare (a one-value matrix, or too few "
                "successful runs)")
    with_phase = len({f.phase for f in found if f.phase is not None}) > 1
    ordered = sorted(found, key=lambda f: (_ORDER[f.mark], f.status is Status.RULED_OUT))
    shown = ordered if verbose else [f for f in ordered if f.mark != "-"]
    rest = [] if verbose else _not_it_line([f for f in ordered if f.mark == "-"], with_phase)
    return "\n".join([f"Answer for {subject} ({LEGEND}):", *_unexplained(found, subject, facts, busy),
                      *(_line(f, with_phase, beside) for f in shown), *rest])
