"""The generic rules: the focus gap, whether each other setting closes it, each setting's own effect.

Three rules of the engine (:mod:`.rules`) that need nothing but the matrix:

* :class:`Gap`: the focus contrast (e.g. ``order=eval_only`` vs ``train_then_eval``) with the
  other keys at their first values: an effect measured (``*``), none, or open (``?``);
* :class:`GapUnderSetting`: the same contrast under each other setting value: does the setting
  close the gap (``closes_gap``, ``*``, naming the setting's mechanism when its evidence counter
  moved with the gap), narrow, keep or reverse it, or open one (``narrows_gap``, ``keeps_gap``,
  ``reverses_gap``, ``opens_gap``, ``no_gap``: ``-``), or is that open (``unresolved_gap``,
  ``?``)? The gap itself is the :class:`Gap` finding's: each says its own;
* :class:`SettingEffect`: each setting value against the first value of its key, everything else
  at baseline; values a study's cause judges are left to that cause.

A comparison whose cell ran with a setting the workload's own code undid during the timed
iterations is judged by none of them: their finding says so (:class:`~.rules.Undone`).

:func:`findings` runs them (the runner's verdict when no study gives its own rules). What a
setting contributes (the readback that proves it took effect, the counter that carries its
evidence, the mechanism it names) is declared by the setting (:mod:`benchctl.settings`).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from .. import _validate
from .. import settings as _settings
from . import counter_evidence, rules
from .comparison import Comparison, Outcome
from .findings import Finding, Status
from .rules import Context, Rule
from .summary import COUNTER_FIELDS
from .tdist import t_quantile

__all__ = ["CLOSED_SHARE", "CLOSED_CONFIDENCE",
           "NARROWED_SHARE", "Gap", "GapUnderSetting", "SettingEffect", "generic_rules", "findings",
           "setting_text"]

#: A gap counts as closed when the share of it left (log ratios) is shown to be at most this: the claim is
#: one-sided, so it is tested as equivalence tests do (TOST): the one-sided 95% upper bound of the share
#: left must lie at or under it (:data:`CLOSED_CONFIDENCE`).
CLOSED_SHARE = 0.25
#: The confidence of that one-sided bound.
CLOSED_CONFIDENCE = 0.95
#: A gap counts as narrowed when at most this share of it is left.
NARROWED_SHARE = 0.5


def setting_text(key: str, value: Any) -> str:
    return f"{key}={_settings.format_value(value)}"


def _label(cell: dict, keys: list[str]) -> str:
    return " ".join(setting_text(k, cell[k]) for k in keys)


def _counters(ctx: Context, cells: dict[str, dict]) -> dict[str, dict[str, float | None]]:
    """{counter field: {role: per-iteration median}} for the cells that have a summary entry."""
    out: dict[str, dict[str, float | None]] = {}
    for field_name in COUNTER_FIELDS.values():
        values = {role: ctx.counter(c, field_name) for role, c in cells.items()}
        if any(v is not None for v in values.values()):
            out[field_name] = values
    return out


def _readback_text(name: str, facts: dict | None) -> str:
    if not facts or "varies" in facts or name not in _settings.SETTINGS:
        return ""
    phrase = _settings.SETTINGS[name].facts_phrase(facts)
    return f" ({phrase})" if phrase else ""


def _log(r: float) -> float:
    return math.log(r) if r and r > 0 else 0.0


def _effect_status(cmp: Comparison) -> Status:
    """The status of a comparison no cause speaks for: an effect measured, none, or open."""
    if cmp.beyond_band:
        return Status.MEASURED
    return Status.NOT_CAUSE if cmp.outcome is Outcome.NO_EFFECT else Status.UNRESOLVED


class Gap(Rule):
    """The focus contrast at baseline: each focus value against the first one."""

    name = "gap"

    def judge(self, ctx: Context) -> list[Finding]:
        if not ctx.focus:
            return []
        a = ctx.baseline
        out = []
        for value in ctx.matrix[ctx.focus][1:]:
            b = ctx.cell(**{ctx.focus: value})
            cmp = ctx.compare(a, b)
            if cmp is None:
                continue
            undone = ctx.undone_finding(self.name, a, b)
            if undone is not None:
                out.append(undone)
                continue
            status = _effect_status(cmp)
            out.append(Finding(self.name, ctx.phase, status, cmp.relation(_label(a, [ctx.focus]),
                                                                          _label(b, [ctx.focus])),
                               cmp, a=a, b=b, evidence={"counters": _counters(ctx, {"a": a, "b": b})}))
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
        if (counter_evidence.differ(name, v[slow], v[fast]) and lead > 0
                and (v[slow + "_with_setting"] or 0) < (v[slow] or 0) and lead_with <= CLOSED_SHARE * lead):
            moved.append(name)
    return moved


class GapUnderSetting(Rule):
    """Re-measure the focus gap under each other setting value: does the setting close it?

    Judged on the intervals: with ``g`` the gap at baseline and ``r`` what is left of it under the
    setting (log ratios, signed so the gap is positive), the setting closes the gap when the
    one-sided upper bound of the share left, r/g (:func:`share_left_upper`), is at most
    :data:`CLOSED_SHARE`, or when r's interval lies within the no-effect band (nothing the run can
    resolve is left); it narrows it when r is resolved, clearly below g and at most
    :data:`NARROWED_SHARE` of it.
    """

    name = "gap_under_setting"

    def judge(self, ctx: Context) -> list[Finding]:
        if not ctx.focus:
            return []
        out = []
        for f_value in ctx.matrix[ctx.focus][1:]:
            a0, b0 = ctx.baseline, ctx.cell(**{ctx.focus: f_value})
            base = ctx.compare(a0, b0)
            if base is None:
                continue
            for key, values in ctx.matrix.items():
                if key == ctx.focus:
                    continue
                for value in values[1:]:
                    a1, b1 = ctx.cell(**{key: value}), ctx.cell(**{ctx.focus: f_value, key: value})
                    under = ctx.compare(a1, b1)
                    if under is None:
                        continue
                    undone = ctx.undone_finding(self.name, a0, b0, a1, b1)
                    out.append(undone or self._judge(ctx, key, value, (a0, b0, base), (a1, b1, under)))
        return out

    @staticmethod
    def outcome(base: Comparison, under: Comparison, setting: str) -> tuple[str, Status, str]:
        """(what the setting does to the gap: its finding's rule is ``<that>_gap``, its status, the words after
        the measurement)."""
        if Outcome.ONE_PROCESS in (base.outcome, under.outcome):
            return "unresolved", Status.UNRESOLVED, ""  # the comparison's own words say two processes are needed
        if base.outcome is Outcome.NO_EFFECT:
            if under.beyond_band:
                return "opens", Status.NOT_CAUSE, ": the gap appears only with this setting"
            # Said with the baseline's own measurement: after "is unresolved: ..." under the setting, a bare
            # "there is no gap to close" read as a contradiction (zero_weights, forward_backward, threads=2).
            return "no", Status.NOT_CAUSE, f": there is no gap to close (without {setting} it is {base.describe()})"
        if base.outcome is Outcome.UNRESOLVED:
            return "unresolved", Status.UNRESOLVED, ": the gap itself is open, so whether it closes is too"
        sign = 1.0 if base.ratio > 1 else -1.0
        g_lo = min(sign * _log(v) for v in base.ci95)
        r = sign * _log(under.ratio)
        r_lo, r_hi = sorted(sign * _log(v) for v in under.ci95)
        if under.beyond_band and r_hi < 0:
            return "reverses", Status.NOT_CAUSE, f": {setting} reverses the gap (the two interact)"
        # Closed: at most a small share of the gap is left, or no difference beyond the band is left at all
        # (the run resolves nothing finer, in the gap or in what is left of it).
        if under.outcome is Outcome.NO_EFFECT:
            return "closes", Status.CAUSE, f": {setting} closes the gap"
        share = GapUnderSetting.share_left_upper(base, under)
        if share <= CLOSED_SHARE:
            return "closes", Status.CAUSE, f": {setting} closes the gap (at most {max(share, 0.0):.0%} of it is left)"
        if under.beyond_band and r_hi < g_lo and r <= NARROWED_SHARE * sign * _log(base.ratio):
            return "narrows", Status.NOT_CAUSE, f": {setting} narrows the gap but does not close it"
        if under.beyond_band and r_lo > 0:
            return "keeps", Status.NOT_CAUSE, f": {setting} does not explain the gap"
        # Neither clearly gone nor clearly kept: noise may hide it rather than the setting closing it.
        return ("unresolved", Status.UNRESOLVED, f": whether {setting} closes it is open, too much of it may "
                                                 "remain to call it closed")

    @staticmethod
    def share_left_upper(base: Comparison, under: Comparison) -> float:
        """The one-sided :data:`CLOSED_CONFIDENCE` upper bound of the share of the gap left under the
        setting, r/g (log ratios, signed so the gap is positive): the delta method over the two comparisons,
        whose cells are distinct, each term at its own one-sided t quantile. "At most a quarter is left" is
        a one-sided claim: the top of a two-sided 95% interval would test it at 97.5% (on the quiet AMD VM
        such tops sat at 27-29% of the gap in 4 of 10 runs). The interval of the ratio r/g is the one that
        counts: r's top against g's bottom would combine two ends and call a 1.48x [1.40, 1.56] gap left at
        0.98x [0.88, 1.09] still open."""
        g, r, h_g, h_r = _gap_terms(base, under, CLOSED_CONFIDENCE)
        return (r + math.hypot(h_r, r / g * h_g)) / g

    @staticmethod
    def cells_to_settle(base: Comparison, under: Comparison, gap_cells: list, cells_with_setting: list) -> list:
        """The cells more processes would settle the share left with: those with the setting, whose
        interval (h_r) adds most to the share's where little of the gap is left, and the gap's as well where
        its term (r/g x h_g) is as large, or where no gap is measured yet (g = 0); a round of either pair
        costs about the same (one cell of each side of the gap)."""
        g, r, h_g, h_r = _gap_terms(base, under)
        return [*cells_with_setting, *gap_cells] if g == 0 or abs(r / g) * h_g >= h_r else list(cells_with_setting)

    def _judge(self, ctx: Context, key: str, value: Any, before: tuple, after: tuple) -> Finding:
        (a0, b0, base), (a1, b1, under) = before, after
        setting = setting_text(key, value)
        counters = _counters(ctx, {"a": a0, "b": b0, "a_with_setting": a1, "b_with_setting": b1})
        moved = _moving_counters(counters, base.ratio)
        readback = {role: ctx.readback(c, key) for role, c in (("a", a1), ("b", b1))} \
            if key in _settings.SETTINGS else {}
        does, status, words = self.outcome(base, under, setting)
        settle = self.cells_to_settle(base, under, [a0, b0], [a1, b1]) if status is Status.UNRESOLVED \
            and base.ci95 is not None and under.ci95 is not None else [a1, b1, a0, b0]
        evidence = {"does": does, "gap": base.to_json(), "gap_cells": [a0, b0], "cells_with_setting": [a1, b1],
                    "cells_to_settle": settle,
                    "counters": counters,
                    "counters_moving_with_gap": moved, "readback": readback}
        gap = f"{_label(a0, [ctx.focus])} vs {_label(b0, [ctx.focus])}"
        # A closed gap may leave a remainder the band cannot call (its interval crosses an edge): said as
        # what is left of the gap, not as "unresolved", which would contradict the verdict that follows.
        left = (f"shrinks from {base.ratio_text()} to {under.ratio_text()}"
                if does == "closes" and under.outcome is not Outcome.NO_EFFECT else f"is {under.describe()}")
        message = f"with {setting}{_readback_text(key, readback.get('a'))} the gap {gap} {left}{words}"
        if status is Status.CAUSE:
            message += _mechanism_text(key, counters, moved)
        return Finding(f"{does}_gap", ctx.phase, status, message, under, a=a1, b=b1, setting=setting,
                       evidence=evidence)


def _one_sided_reach(cmp: Comparison, confidence: float) -> float:
    """How far a one-sided ``confidence`` bound of ``cmp``'s log ratio lies from its estimate: its two-sided
    interval's half-width, rescaled from that interval's t quantile to the one-sided one (at its degrees of
    freedom; the normal's where a stored comparison has none)."""
    half = abs(_log(cmp.ci95[1]) - _log(cmp.ci95[0])) / 2
    df = cmp.df if cmp.df and cmp.df > 0 else math.inf
    return half * t_quantile(confidence, df) / t_quantile(0.5 + cmp.confidence / 2, df)


def _gap_terms(base: Comparison, under: Comparison, confidence: float | None = None
               ) -> tuple[float, float, float, float]:
    """(g, r, h_g, h_r): the gap and what is left of it under a setting as log ratios signed so that the gap
    is positive, and how far their intervals reach: the two-sided intervals' half-widths, or with
    ``confidence`` the one-sided bounds' (:func:`_one_sided_reach`)."""
    sign = 1.0 if base.ratio > 1 else -1.0
    if confidence is None:
        h_g, h_r = (abs(_log(c.ci95[1]) - _log(c.ci95[0])) / 2 for c in (base, under))
    else:
        h_g, h_r = (_one_sided_reach(c, confidence) for c in (base, under))
    return sign * _log(base.ratio), sign * _log(under.ratio), h_g, h_r


def _mechanism_text(key: str, counters: dict, moved: list[str]) -> str:
    setting = _settings.SETTINGS.get(key)
    parts = []
    for f in moved:
        v = counters[f]
        slow = "a" if (v["a"] or 0) >= (v["b"] or 0) else "b"
        parts.append(counter_evidence.change_text(f, v[slow], v[slow + "_with_setting"]))
    text = "; " + ", ".join(parts) if parts else ""
    # A mechanism is named only when its own counter moved with the gap.
    if setting is not None and setting.mechanism and setting.evidence_counter in moved:
        text += f": the slowdown is {setting.mechanism}"
    return text


class SettingEffect(Rule):
    """Each non-focus key: every value against the key's first value, the rest at baseline. Values in
    ``judged_elsewhere`` (``(key, value)`` pairs a study's cause probes) are left to it."""

    name = "setting_effect"

    def __init__(self, judged_elsewhere: Iterable[tuple[str, Any]] = ()) -> None:
        self.judged_elsewhere = [(k, v) for k, v in judged_elsewhere]

    def judge(self, ctx: Context) -> list[Finding]:
        out = []
        for key, values in ctx.matrix.items():
            if key == ctx.focus:
                continue
            a = ctx.baseline
            for value in values[1:]:
                if (key, value) in self.judged_elsewhere:
                    continue
                b = ctx.cell(**{key: value})
                cmp = ctx.compare(b, a)
                if cmp is None:
                    continue
                undone = ctx.undone_finding(self.name, b, a)
                if undone is not None:
                    out.append(undone)
                    continue
                setting = setting_text(key, value)
                readback = {setting: ctx.readback(b, key)} if key in _settings.SETTINGS else {}
                message = cmp.relation(_label(b, [key]), _label(a, [key])) + _readback_text(key, readback.get(setting))
                status = _effect_status(cmp)
                # A setting that changes nothing is the per-cell table's to show, not the answer's.
                out.append(Finding(self.name, ctx.phase, status, message, cmp, a=b, b=a, setting=setting,
                                   evidence={"counters": _counters(ctx, {"a": b, "b": a}), "readback": readback},
                                   in_answer=status is not Status.NOT_CAUSE))
        return out


def generic_rules() -> tuple[Rule, ...]:
    return (Gap(), GapUnderSetting(), SettingEffect())


def findings(doc: dict, focus: str | None = None, rule_list: Iterable[Rule] | None = None) -> list[Finding]:
    """The generic rules (or ``rule_list``) over every phase of ``doc``, which must have its ``summary``."""
    if focus is not None and focus not in doc["matrix"]:
        raise _validate.ArgumentError(
            f"focus {focus!r} is not a matrix key of this document ({', '.join(doc['matrix'])})")
    return rules.judge(doc, tuple(rule_list or generic_rules()), focus=focus)
