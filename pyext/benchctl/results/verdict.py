"""The verdict: small named rules over a results document that say which setting explains a gap.

Every rule is a function ``rule(ctx) -> list[Finding]`` over one phase of a
document; :func:`findings` runs all of :data:`RULES` over every phase and
returns them as JSON (:meth:`Finding.to_json`)::

    {"rule", "phase", "a", "b", "ratio", "ci95", "significant", "p_value", "outcome",
     "band", "setting", "explains", "evidence", "message"}

``a`` and ``b`` are the two cells compared, with the process as the unit
(:mod:`benchctl.results.processes`): ``ratio`` is the ratio of the cells'
geometric means of per-process medians, ``ci95`` its Welch t interval over
processes. ``outcome`` judges that interval against the no-effect ``band``
(the 5% floor of :data:`MIN_EFFECT`, widened to what the run's A/A control
says identical processes can differ by): ``effect`` (the interval lies
beyond the band), ``no_effect`` (inside it), ``unresolved`` (across an edge;
also any effect in a phase whose control arms differ), or ``one_process``
(a side has one process: no difference is called). ``significant`` is
``outcome == "effect"``. ``setting`` is the ``name=value`` the finding is
about, and ``explains`` says whether that setting closes the gap (for
``setting_effect``: whether it changes the time at all).

The rules:

* :func:`gap`: the focus contrast (e.g. ``order=eval_only`` vs
  ``train_then_eval``) with the other keys at their first values;
* :func:`closes_gap`: the same contrast under each other setting value:
  the gap closes (``explains``), narrows, stays, reverses, or appears only
  there (rules ``closes_gap``, ``narrows_gap``, ``keeps_gap``,
  ``reverses_gap``, ``opens_gap``, ``no_gap``, ``unresolved_gap``), with the counters and
  readback that move along;
* :func:`setting_effect`: each setting value against the first value of its
  key, everything else at baseline, including "no significant difference";
* :func:`not_comparable`: pairs the comparison refused, said rather than dropped.

:func:`unresolved_cells` lists the cells whose findings stay unresolved:
what another round of processes should measure (``--repeat auto``).

What a setting contributes (the readback facts that prove it took effect,
the counter that carries its evidence, the mechanism it names) lives with the
setting in :mod:`benchctl.settings`, so a new setting needs no new rule.
Callers may pass extra rules: ``findings(doc, focus, rules=RULES + (mine,))``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from .. import settings as _settings
from .._validate import ArgumentError
from . import processes, queries, wording
from .document import cell_id
from .processes import EFFECT, NO_EFFECT, ONE_PROCESS, UNRESOLVED
from .summary import COUNTER_FIELDS

__all__ = ["MIN_EFFECT", "CLOSED_SHARE", "NARROWED_SHARE", "COUNTER_FACTOR", "COUNTER_MIN_DIFFERENCE",
           "COUNTER_WORDS", "UNRESOLVED_RULES", "Finding", "Context", "resolved", "ratio_text", "describe", "headline",
           "gap",
           "closes_gap", "setting_effect", "not_comparable", "RULES", "findings", "unresolved_cells"]

#: Differences smaller than this share are never called (the floor of every no-effect band).
MIN_EFFECT = processes.FLOOR
#: A gap counts as closed when even the most that may be left of it is at most this share of the
#: least it may have been (log ratios, from the two intervals).
CLOSED_SHARE = 0.25
#: A gap counts as narrowed when at most this share of it is left.
NARROWED_SHARE = 0.5
#: Counters "differ" between two cells when one is this many times the other ...
COUNTER_FACTOR = 2.0
#: ... and the difference is at least this many events per iteration.
COUNTER_MIN_DIFFERENCE = 1.0

COUNTER_WORDS = {
    "minor_faults_per_iter": "minor page faults/iter",
    "major_faults_per_iter": "major page faults/iter",
    "context_switches_per_iter": "context switches/iter",
    "cpu_migrations_per_iter": "CPU migrations/iter",
}


@dataclass
class Finding:
    """One statement of the verdict (or of a study's rules) with its evidence.

    ``a`` and ``b`` are the cells compared, ``ratio`` median(a)/median(b) with
    its ``ci95``; ``significant`` says whether the difference is called
    (:func:`resolved`); ``setting`` is the ``name=value`` the finding is about
    and ``explains`` whether it explains the effect the rule looks at.
    """

    rule: str
    phase: str | None
    message: str
    a: dict | None = None
    b: dict | None = None
    ratio: float | None = None
    ci95: list | None = None
    significant: bool | None = False
    p_value: float | None = None
    outcome: str | None = None
    band: float | None = None
    setting: str | None = None
    explains: bool = False
    evidence: dict = field(default_factory=dict)

    @classmethod
    def of(cls, rule: str, phase: str | None, cmp: dict | None, message: str, **fields: Any) -> "Finding":
        """A finding about the comparison ``cmp`` (None: no comparison could be made)."""
        if cmp is not None:
            fields.update(ratio=cmp["ratio"], ci95=None if cmp["ci95"] is None else list(cmp["ci95"]),
                          significant=resolved(cmp), p_value=cmp.get("p_value"), outcome=cmp["outcome"],
                          band=cmp["band"])
        return cls(rule, phase, message, **fields)

    def to_json(self) -> dict:
        """The finding as the results document stores it."""
        return asdict(self)


class Context:
    """One phase of one document, as the rules read it: its baseline, cells and comparisons."""

    def __init__(self, doc: dict, phase: str, focus: str | None,
                 comparisons: queries.Comparisons | None = None) -> None:
        self.doc = doc
        self.phase = phase
        self.focus = focus
        self.matrix = doc["matrix"]
        self.baseline = queries.baseline(doc)
        self.comparisons = comparisons or queries.Comparisons(doc)

    def cell(self, **changes: Any) -> dict:
        return {**self.baseline, **changes}

    def entry(self, cell: dict) -> dict | None:
        return queries.summary_entry(self.doc, self.phase, cell)

    def compare(self, a: dict, b: dict) -> dict | None:
        """The comparison of the two cells' steady samples, or None if either has none."""
        return self.comparisons.compare(self.phase, a, b)


def _label(cell: dict, keys: list[str]) -> str:
    return " ".join(f"{k}={_settings.format_value(cell[k])}" for k in keys)


def resolved(cmp: dict) -> bool:
    """Whether a comparison calls a difference: its interval lies beyond the no-effect band."""
    return cmp["outcome"] == EFFECT


def _band(cmp: dict) -> str:
    return f"±{cmp['band']:.0%}"


def ratio_text(cmp: dict) -> str:
    """``"1.45× [95% CI 1.38, 1.52]"``, or the ratio alone when no interval exists (one process)."""
    if cmp["ci95"] is None:
        return f"{wording.factor(cmp['ratio'])}× (no interval: one process)"
    return wording.ratio_ci(cmp["ratio"], cmp["ci95"])


def _one_process_text(cmp: dict) -> str:
    return (f"{ratio_text(cmp)} from {cmp['k_a']} and {cmp['k_b']} process(es): no difference is called without two "
            "or more fresh processes per cell")


def _unresolved_text(cmp: dict) -> str:
    why = ("the run's A/A control arms differ, so no effect is called in this phase" if cmp.get("unreliable")
           else f"it crosses the {_band(cmp)} band")
    return f"unresolved: {ratio_text(cmp)}, {why}"


def describe(cmp: dict) -> str:
    """"1.45× slower [95% CI ...]", "within ±5% (ratio ...)", "unresolved: ...", or why no interval exists."""
    outcome = cmp["outcome"]
    if outcome == EFFECT:
        return " ".join(wording.slower_or_faster(cmp["ratio"], cmp["ci95"]))
    if outcome == NO_EFFECT:
        return f"within {_band(cmp)} (ratio {ratio_text(cmp)})"
    if outcome == UNRESOLVED:
        return _unresolved_text(cmp)
    return _one_process_text(cmp)


def headline(cmp: dict) -> str:
    """"1.45× slower", "1.30× faster", "no difference beyond ±5%", "unresolved" or "one process"."""
    outcome = cmp["outcome"]
    if outcome == EFFECT:
        return wording.slower_or_faster(cmp["ratio"], cmp["ci95"])[0]
    if outcome == NO_EFFECT:
        return f"no difference beyond {_band(cmp)}"
    return "unresolved" if outcome == UNRESOLVED else "one process"


def _relation(a_label: str, b_label: str, cmp: dict) -> str:
    """"A is 1.45× slower than B [95% CI ...]", or what is known when no difference is called."""
    outcome = cmp["outcome"]
    if outcome == EFFECT:
        how, interval = wording.slower_or_faster(cmp["ratio"], cmp["ci95"])
        return f"{a_label} is {how} than {b_label} {interval}"
    if outcome == NO_EFFECT:
        return f"no difference beyond {_band(cmp)} between {a_label} and {b_label} (ratio {ratio_text(cmp)})"
    if outcome == UNRESOLVED:
        return f"{a_label} against {b_label} is {_unresolved_text(cmp)}"
    return f"{a_label}/{b_label} = {_one_process_text(cmp)}"


def _counters(ctx: Context, cells: dict[str, dict]) -> dict[str, dict[str, float | None]]:
    """{counter field: {role: per-iteration median}} for the cells that have a summary entry."""
    out: dict[str, dict[str, float | None]] = {}
    for field_name in COUNTER_FIELDS.values():
        values = {role: (ctx.entry(c) or {}).get(field_name) for role, c in cells.items()}
        if any(v is not None for v in values.values()):
            out[field_name] = values
    return out


def _differ(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return False
    lo, hi = sorted((abs(x), abs(y)))
    return hi - lo >= COUNTER_MIN_DIFFERENCE and hi >= COUNTER_FACTOR * lo


def _readback_text(name: str, facts: dict | None) -> str:
    if not facts or "varies" in facts:
        return ""
    phrase = _settings.SETTINGS[name].facts_phrase(facts)
    return f" ({phrase})" if phrase else ""


def _log(r: float) -> float:
    return math.log(r) if r and r > 0 else 0.0


def gap(ctx: Context) -> list[Finding]:
    """The focus contrast at baseline: each focus value against the first one."""
    if not ctx.focus:
        return []
    a = ctx.cell()
    out = []
    for value in ctx.matrix[ctx.focus][1:]:
        b = ctx.cell(**{ctx.focus: value})
        cmp = ctx.compare(a, b)
        if cmp is None:
            continue
        message = _relation(_label(a, [ctx.focus]), _label(b, [ctx.focus]), cmp)
        out.append(Finding.of("gap", ctx.phase, cmp, message, a=a, b=b,
                              evidence={"counters": _counters(ctx, {"a": a, "b": b})}))
    return out


def closes_gap(ctx: Context) -> list[Finding]:
    """Re-measure the focus gap under each other setting value: does it close?"""
    if not ctx.focus:
        return []
    out = []
    for f_value in ctx.matrix[ctx.focus][1:]:
        a0, b0 = ctx.cell(), ctx.cell(**{ctx.focus: f_value})
        base = ctx.compare(a0, b0)
        if base is None:
            continue
        for key, values in ctx.matrix.items():
            if key == ctx.focus:
                continue
            for value in values[1:]:
                a1, b1 = ctx.cell(**{key: value}), ctx.cell(**{ctx.focus: f_value, key: value})
                under = ctx.compare(a1, b1)
                if under is not None:
                    out.append(_judge_gap(ctx, key, value, (a0, b0, base), (a1, b1, under)))
    return out


def _moving_counters(counters: dict, base_ratio: float) -> list[str]:
    """Counter fields whose lead in the slower cell mostly goes away under the setting.

    Evidence moves with the gap: higher in the slower cell at baseline, and
    under the setting fallen there, its lead over the faster cell mostly gone
    (measured against the baseline lead: 148 vs 3,131 faults after 310k vs
    2.6k has closed that gap, though one is 20 times the other).
    """
    slow, fast = ("a", "b") if base_ratio >= 1 else ("b", "a")
    moved = []
    for name, v in counters.items():
        lead = (v[slow] or 0) - (v[fast] or 0)
        lead_with = (v[slow + "_with_setting"] or 0) - (v[fast + "_with_setting"] or 0)
        if (_differ(v[slow], v[fast]) and lead > 0 and (v[slow + "_with_setting"] or 0) < (v[slow] or 0)
                and lead_with <= CLOSED_SHARE * lead):
            moved.append(name)
    return moved


def _gap_outcome(base: dict, under: dict, setting: str) -> tuple[str, bool, str]:
    """(rule, explains, the words after the measurements) for a gap re-measured under ``setting``.

    Judged on the intervals: with ``g`` the gap at baseline and ``r`` what is
    left of it under the setting (log ratios, signed so the gap is positive),
    the setting closes the gap when even the top of r's interval is at most
    :data:`CLOSED_SHARE` of the bottom of g's; it narrows it when r is
    resolved, clearly below g and at most :data:`NARROWED_SHARE` of it.
    """
    b_out, u_out = base["outcome"], under["outcome"]
    if ONE_PROCESS in (b_out, u_out):
        return "unresolved_gap", False, ": with one process per cell the gap cannot be judged"
    if b_out == NO_EFFECT:
        if u_out == EFFECT:
            return "opens_gap", False, ": the gap appears only with this setting"
        return "no_gap", False, ""
    if b_out == UNRESOLVED:
        return "unresolved_gap", False, ": the gap itself is unresolved: add processes"
    sign = 1.0 if base["ratio"] > 1 else -1.0
    g_lo = min(sign * _log(v) for v in base["ci95"])
    r = sign * _log(under["ratio"])
    r_lo, r_hi = sorted(sign * _log(v) for v in under["ci95"])
    if u_out == EFFECT and r_hi < 0:
        return "reverses_gap", False, f": {setting} reverses the gap (the two interact)"
    if r_hi <= CLOSED_SHARE * g_lo:
        return "closes_gap", True, f": {setting} closes the gap"
    if u_out == EFFECT and r_hi < g_lo and r <= NARROWED_SHARE * sign * _log(base["ratio"]):
        return "narrows_gap", False, f": {setting} narrows the gap but does not close it"
    if u_out == EFFECT and r_lo > 0:
        return "keeps_gap", False, f": {setting} does not explain the gap"
    # Neither clearly gone nor clearly kept: noise may hide it rather than the setting closing it.
    return ("unresolved_gap", False, f": with {setting} the gap is not resolved, yet too much of it "
                                     f"may remain to call it closed: add processes")


def _judge_gap(ctx: Context, key: str, value: Any, before: tuple, after: tuple) -> Finding:
    (a0, b0, base), (a1, b1, under) = before, after
    setting = f"{key}={_settings.format_value(value)}"
    counters = _counters(ctx, {"a": a0, "b": b0, "a_with_setting": a1, "b_with_setting": b1})
    moved = _moving_counters(counters, base["ratio"])
    readback = {role: queries.readback_facts(ctx.doc, c, key) for role, c in (("a", a1), ("b", b1))} \
        if key in _settings.SETTINGS else {}
    evidence = {
        "gap": _brief(base),
        "gap_with_setting": _brief(under),
        "cells_with_setting": [a1, b1],
        "counters": counters,
        "counters_moving_with_gap": moved,
        "readback": readback,
    }
    rule, explains, outcome = _gap_outcome(base, under, setting)
    message = (f"{_relation(_label(a0, [ctx.focus]), _label(b0, [ctx.focus]), base)}; "
               f"with {setting}{_readback_text(key, readback.get('a'))} it is {describe(under)}{outcome}")
    if rule == "closes_gap":
        message += _mechanism_text(key, counters, moved)
    return Finding.of(rule, ctx.phase, base, message, a=a0, b=b0, setting=setting, explains=explains,
                      evidence=evidence)


def _brief(cmp: dict) -> dict:
    return {"ratio": cmp["ratio"], "ci95": cmp["ci95"], "outcome": cmp["outcome"], "significant": resolved(cmp)}


def _mechanism_text(key: str, counters: dict, moved: list[str]) -> str:
    setting = _settings.SETTINGS.get(key)
    field_name, mechanism = (setting.evidence_counter, setting.mechanism) if setting else (None, None)
    parts = []
    for f in moved:
        v = counters[f]
        slow = "a" if (v["a"] or 0) >= (v["b"] or 0) else "b"
        parts.append(f"{COUNTER_WORDS[f]} go from {wording.count(v[slow])} to "
                     f"{wording.count(v[slow + '_with_setting'])}")
    text = "; " + ", ".join(parts) if parts else ""
    # A mechanism is named only when its own counter moved with the gap.
    if mechanism and field_name is not None and field_name in moved:
        text += f": the slowdown is {mechanism}"
    return text


def setting_effect(ctx: Context) -> list[Finding]:
    """Each non-focus key: every value against the key's first value, the rest at baseline."""
    out = []
    for key, values in ctx.matrix.items():
        if key == ctx.focus:
            continue
        a = ctx.cell()
        for value in values[1:]:
            b = ctx.cell(**{key: value})
            cmp = ctx.compare(b, a)
            if cmp is None:
                continue
            setting = f"{key}={_settings.format_value(value)}"
            is_setting = key in _settings.SETTINGS
            readback = {setting: queries.readback_facts(ctx.doc, b, key)} if is_setting else {}
            message = _relation(_label(b, [key]), _label(a, [key]), cmp)
            if is_setting:
                message += _readback_text(key, readback[setting])
            out.append(Finding.of("setting_effect", ctx.phase, cmp, message, a=b, b=a, setting=setting,
                                  explains=resolved(cmp), evidence={
                                      "counters": _counters(ctx, {"a": b, "b": a}), "readback": readback}))
    return out


def not_comparable(ctx: Context) -> list[Finding]:
    """Pairs the rules wanted but stats.compare refused: said, not silently dropped."""
    return [Finding("not_comparable", ctx.phase, a=a, b=b, ratio=None, ci95=None,
                    message=f"cannot compare {_settings.cell_label(a)} with {_settings.cell_label(b)}: {reason}")
            for (phase, _, _), (a, b, reason) in ctx.comparisons.refused.items() if phase == ctx.phase]


RULES: tuple[Callable[[Context], list[Finding]], ...] = (gap, closes_gap, setting_effect)
#: Rules whose finding says that more processes could settle it.
UNRESOLVED_RULES = ("unresolved_gap",)


def findings(doc: dict, focus: str | None = None, rules=RULES) -> list[dict]:
    """Run ``rules`` over every phase of ``doc`` (which must have its ``summary``); findings as JSON."""
    if focus is not None and focus not in doc["matrix"]:
        raise ArgumentError(f"focus {focus!r} is not a matrix key of this document ({', '.join(doc['matrix'])})")
    comparisons = queries.Comparisons(doc)
    out: list[Finding] = []
    for phase in queries.phases(doc):
        ctx = Context(doc, phase, focus, comparisons)
        for rule in rules:
            out += rule(ctx)
        out += not_comparable(ctx)
    return [f.to_json() for f in out]


def _open(finding: dict) -> bool:
    """Whether more processes could settle this finding."""
    return finding["rule"] in UNRESOLVED_RULES or (
        finding["rule"] in ("gap", "setting_effect") and finding.get("outcome") == UNRESOLVED)


def unresolved_cells(findings_json: list[dict]) -> list[dict]:
    """The cells of every finding more processes could settle, each once, in order of first mention."""
    seen: dict[str, dict] = {}
    for f in findings_json:
        if not _open(f):
            continue
        for cell in [f["a"], f["b"], *f.get("evidence", {}).get("cells_with_setting", [])]:
            if cell is not None:
                seen.setdefault(cell_id(cell), cell)
    return list(seen.values())
