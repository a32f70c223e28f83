"""The verdict: small named rules over a results document that say which setting explains a gap.

Every rule is a function ``rule(ctx) -> list[Finding]`` over one phase of a
document; :func:`findings` runs all of :data:`RULES` over every phase and
returns them as JSON (:meth:`Finding.to_json`)::

    {"rule", "phase", "a", "b", "ratio", "ci95", "significant", "p_value",
     "setting", "explains", "evidence", "message"}

``a`` and ``b`` are the two cells compared, ``ratio`` is median(a)/median(b)
of their pooled steady-state iterations with its bootstrap 95% CI (from
:func:`benchctl.results.stats.compare`), ``significant`` means the Mann-Whitney test
finds a difference, the CI excludes 1 *and* the ratio is at least
:data:`MIN_EFFECT` away from 1 (with repeated cells the CI resamples
processes, then iterations), ``setting`` is the ``name=value``
the finding is about, and ``explains`` says whether that setting closes the
gap (for ``setting_effect``: whether it changes the time at all).

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
* :func:`not_comparable`: pairs :func:`benchctl.results.stats.compare` refused, said
  rather than dropped.

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
from . import queries, wording
from .summary import COUNTER_FIELDS

__all__ = ["MIN_EFFECT", "CLOSED_SHARE", "NARROWED_SHARE", "COUNTER_FACTOR", "COUNTER_MIN_DIFFERENCE",
           "COUNTER_WORDS", "Finding", "Context", "resolved", "describe", "headline", "gap", "closes_gap",
           "setting_effect", "not_comparable", "RULES", "findings"]

#: Differences smaller than this share are never called. Each cell runs in its
#: own process, and the medians of one setting differ between processes
#: (address-space layout, page placement, which core; seen here: 2-5% for
#: ResNet-50 eval, up to 15% for the seed-2 net on 2 threads). With two or
#: more repetitions per cell the CI resamples processes and carries that
#: variation; with one it cannot, and this floor stands in for it.
MIN_EFFECT = 0.05
#: A gap counts as closed when what is left is at most this share of it (in log ratio).
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
    setting: str | None = None
    explains: bool = False
    evidence: dict = field(default_factory=dict)

    @classmethod
    def of(cls, rule: str, phase: str | None, cmp: dict | None, message: str, **fields: Any) -> "Finding":
        """A finding about the comparison ``cmp`` (None: no comparison could be made)."""
        if cmp is not None:
            fields.update(ratio=cmp["ratio"], ci95=list(cmp["ci95"]), significant=resolved(cmp),
                          p_value=cmp.get("p_value"))
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


def _statistically_apart(cmp: dict) -> bool:
    lo, hi = cmp["ci95"]
    return bool(cmp["significant"]) and not (lo <= 1.0 <= hi)


def resolved(cmp: dict) -> bool:
    """A difference counts when the U test finds one, the ratio's CI excludes 1,
    and the ratio is at least :data:`MIN_EFFECT` away from 1."""
    return _statistically_apart(cmp) and abs(_log(cmp["ratio"])) >= math.log1p(MIN_EFFECT)


# Why a comparison is not called a difference, as an adjective (describe) and a noun phrase (_relation).
_UNDER_FLOOR = ("within run-to-run variation", "no difference beyond run-to-run variation")
_NOT_SIGNIFICANT = ("not significantly different", "no significant difference")


def _unresolved_words(cmp: dict) -> tuple[tuple[str, str], str]:
    """(the two wordings of why no difference is called, the parenthesis with the ratio)."""
    ratio = wording.ratio_ci(cmp["ratio"], cmp["ci95"])
    if _statistically_apart(cmp):
        return _UNDER_FLOOR, f"(ratio {ratio}: under the {MIN_EFFECT:.0%} that separate processes resolve)"
    return _NOT_SIGNIFICANT, f"(ratio {ratio})"


def describe(cmp: dict) -> str:
    """"1.45× slower [95% CI ...]", "1.30× faster [...]", or why no difference is called."""
    if not resolved(cmp):
        (adjective, _), ratio = _unresolved_words(cmp)
        return f"{adjective} {ratio}"
    return " ".join(wording.slower_or_faster(cmp["ratio"], cmp["ci95"]))


def headline(cmp: dict) -> str:
    """"1.45× slower", "1.30× faster", or "no significant difference" (no interval)."""
    if not resolved(cmp):
        return _unresolved_words(cmp)[0][1]
    return wording.slower_or_faster(cmp["ratio"], cmp["ci95"])[0]


def _relation(a_label: str, b_label: str, cmp: dict) -> str:
    """"A is 1.45× slower than B [95% CI ...]", or that no difference between them is called."""
    if not resolved(cmp):
        (_, noun), ratio = _unresolved_words(cmp)
        return f"{noun} between {a_label} and {b_label} {ratio}"
    how, interval = wording.slower_or_faster(cmp["ratio"], cmp["ci95"])
    return f"{a_label} is {how} than {b_label} {interval}"


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
    """(rule, explains, the words after the measurements) for a gap re-measured under ``setting``."""
    left = abs(_log(under["ratio"])) / abs(_log(base["ratio"])) if _log(base["ratio"]) else float("inf")
    if not resolved(base):
        if resolved(under):
            return "opens_gap", False, ": the gap appears only with this setting"
        return "no_gap", False, ""
    if resolved(under) and (under["ratio"] > 1) != (base["ratio"] > 1):
        return "reverses_gap", False, f": {setting} reverses the gap (the two interact)"
    if left <= CLOSED_SHARE or (not resolved(under) and _consistent_with_no_gap(under)
                                and _intervals_apart(base, under)):
        return "closes_gap", True, f": {setting} closes the gap"
    if left <= NARROWED_SHARE:
        return "narrows_gap", False, f": {setting} narrows the gap but does not close it"
    if not resolved(under):
        # No longer resolved, yet neither small nor clearly apart from the gap:
        # noise may have hidden it rather than the setting closing it.
        return ("unresolved_gap", False, f": with {setting} the gap is not resolved, yet too much of it "
                                         f"may remain to call it closed: add repetitions")
    return "keeps_gap", False, f": {setting} does not explain the gap"


def _judge_gap(ctx: Context, key: str, value: Any, before: tuple, after: tuple) -> Finding:
    (a0, b0, base), (a1, b1, under) = before, after
    setting = f"{key}={_settings.format_value(value)}"
    counters = _counters(ctx, {"a": a0, "b": b0, "a_with_setting": a1, "b_with_setting": b1})
    moved = _moving_counters(counters, base["ratio"])
    readback = {role: queries.readback_facts(ctx.doc, c, key) for role, c in (("a", a1), ("b", b1))} \
        if key in _settings.SETTINGS else {}
    evidence = {
        "gap": {"ratio": base["ratio"], "ci95": list(base["ci95"]), "significant": resolved(base)},
        "gap_with_setting": {"ratio": under["ratio"], "ci95": list(under["ci95"]),
                             "significant": resolved(under)},
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


def _consistent_with_no_gap(cmp: dict) -> bool:
    lo, hi = cmp["ci95"]
    return lo <= 1.0 <= hi


def _intervals_apart(base: dict, under: dict) -> bool:
    """The gap under a setting lies wholly on the near side of 1 of the gap's own CI."""
    (b_lo, b_hi), (u_lo, u_hi) = base["ci95"], under["ci95"]
    return u_hi < b_lo if base["ratio"] > 1 else u_lo > b_hi


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


def findings(doc: dict, focus: str | None = None, rules=RULES) -> list[dict]:
    """Run ``rules`` over every phase of ``doc`` (which must have its ``summary``); findings as JSON."""
    if focus is not None and focus not in doc["matrix"]:
        raise ValueError(f"focus {focus!r} is not a matrix key of this document ({', '.join(doc['matrix'])})")
    comparisons = queries.Comparisons(doc)
    out: list[Finding] = []
    for phase in queries.phases(doc):
        ctx = Context(doc, phase, focus, comparisons)
        for rule in rules:
            out += rule(ctx)
        out += not_comparable(ctx)
    return [f.to_json() for f in out]
