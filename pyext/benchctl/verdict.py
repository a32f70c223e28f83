"""The verdict: small named rules over a results document that say which setting explains a gap.

Every rule is a function ``rule(ctx) -> list[finding]`` over one phase of a
document; :func:`findings` runs all of :data:`RULES` over every phase. A
finding is a dict::

    {"rule", "phase", "a", "b", "ratio", "ci95", "significant", "setting",
     "explains", "evidence", "message"}

``a`` and ``b`` are the two cells compared, ``ratio`` is median(a)/median(b)
of their pooled steady-state iterations with its bootstrap 95% CI (from
:func:`benchctl.stats.compare`), ``significant`` means the Mann-Whitney test
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
* :func:`not_comparable`: pairs :func:`benchctl.stats.compare` refused, said
  rather than dropped.

What a setting contributes (the readback facts that prove it took effect,
the counter that carries its evidence, the mechanism it names) lives with the
setting in :mod:`benchctl.settings`, so a new setting needs no new rule.
Callers may pass extra rules: ``findings(doc, focus, rules=RULES + (mine,))``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from . import settings as _settings
from . import summary as _summary
from .results import cell_id

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


class Context:
    """One phase of one document, with cached comparisons."""

    def __init__(self, doc: dict, phase: str, focus: str | None) -> None:
        self.doc = doc
        self.phase = phase
        self.focus = focus
        self.matrix = doc["matrix"]
        self.baseline = {k: v[0] for k, v in self.matrix.items()}
        self._cache: dict[tuple[str, str], dict | None] = {}
        #: Pairs stats.compare refused (e.g. medians of 0 ns), with its reason.
        self.refused: dict[tuple[str, str], tuple[dict, dict, str]] = {}

    def cell(self, **changes: Any) -> dict:
        return {**self.baseline, **changes}

    def entry(self, cell: dict) -> dict | None:
        return _summary.find(self.doc["summary"], self.phase, cell)

    def compare(self, a: dict, b: dict) -> dict | None:
        """stats.compare of the two cells' pooled steady samples, or None if either has none."""
        key = (cell_id(a), cell_id(b))
        if key not in self._cache:
            from . import stats

            a_ns, _ = _summary.steady_samples(self.doc, self.phase, a)
            b_ns, _ = _summary.steady_samples(self.doc, self.phase, b)
            runs = (_summary.steady_by_run(self.doc, self.phase, a), _summary.steady_by_run(self.doc, self.phase, b))
            result = None
            if len(a_ns) and len(b_ns):
                try:
                    result = stats.compare(a_ns, b_ns, seed=0, runs=runs)
                except ValueError as e:
                    self.refused[key] = (a, b, str(e))
            self._cache[key] = result
        return self._cache[key]


def _label(cell: dict, keys: list[str]) -> str:
    return " ".join(f"{k}={_settings.format_value(cell[k])}" for k in keys)


def ratio_text(ratio: float, ci: list) -> str:
    """"1.45× [95% CI 1.38, 1.52]"."""
    lo, hi = ci
    return f"{ratio:.2f}× [95% CI {lo:.2f}, {hi:.2f}]"


def _statistically_apart(cmp: dict) -> bool:
    lo, hi = cmp["ci95"]
    return bool(cmp["significant"]) and not (lo <= 1.0 <= hi)


def resolved(cmp: dict) -> bool:
    """A difference counts when the U test finds one, the ratio's CI excludes 1,
    and the ratio is at least :data:`MIN_EFFECT` away from 1."""
    return _statistically_apart(cmp) and abs(_log(cmp["ratio"])) >= math.log1p(MIN_EFFECT)


def why_unresolved(cmp: dict) -> tuple[str, str]:
    """(the words for "no difference", the parenthesis with the ratio) of an unresolved comparison."""
    ratio = ratio_text(cmp["ratio"], cmp["ci95"])
    if _statistically_apart(cmp):
        return ("no difference beyond run-to-run variation",
                f"(ratio {ratio}: under the {MIN_EFFECT:.0%} that separate processes resolve)")
    return "no significant difference", f"(ratio {ratio})"


def describe(cmp: dict) -> str:
    """"1.45× slower [95% CI ...]", "1.30× faster [...]", or why no difference is called."""
    r, (lo, hi) = cmp["ratio"], cmp["ci95"]
    if not resolved(cmp):
        words, ratio = why_unresolved(cmp)
        return ("not significantly different " if words == "no significant difference"
                else "within run-to-run variation ") + ratio
    if r >= 1:
        return f"{r:.2f}× slower [95% CI {lo:.2f}, {hi:.2f}]"
    return f"{1 / r:.2f}× faster [95% CI {1 / hi:.2f}, {1 / lo:.2f}]"


def _relation(a_label: str, b_label: str, cmp: dict) -> str:
    if not resolved(cmp):
        words, ratio = why_unresolved(cmp)
        return f"{words} between {a_label} and {b_label} {ratio}"
    how, _, ci = describe(cmp).partition(" [")
    return f"{a_label} is {how} than {b_label} [{ci}"


def _count_text(x: float | None) -> str:
    if x is None:
        return "n/a"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.1f}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.0f}k"
    return f"{x:.0f}" if abs(x) >= 10 or x == int(x) else f"{x:.1f}"


def _finding(rule: str, ctx: Context, a: dict, b: dict, cmp: dict, setting: str | None, explains: bool,
             evidence: dict, message: str) -> dict:
    return {
        "rule": rule,
        "phase": ctx.phase,
        "a": a,
        "b": b,
        "ratio": cmp["ratio"],
        "ci95": list(cmp["ci95"]),
        "significant": resolved(cmp),
        "p_value": cmp.get("p_value"),
        "setting": setting,
        "explains": explains,
        "evidence": evidence,
        "message": message,
    }


def _counters(ctx: Context, cells: dict[str, dict]) -> dict[str, dict[str, float | None]]:
    """{counter field: {role: per-iteration median}} for the cells that have a summary entry."""
    out: dict[str, dict[str, float | None]] = {}
    for field in _summary.COUNTER_FIELDS.values():
        values = {role: (ctx.entry(c) or {}).get(field) for role, c in cells.items()}
        if any(v is not None for v in values.values()):
            out[field] = values
    return out


def _differ(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return False
    lo, hi = sorted((abs(x), abs(y)))
    return hi - lo >= COUNTER_MIN_DIFFERENCE and hi >= COUNTER_FACTOR * lo


def _readback_facts(doc: dict, cell: dict, name: str) -> dict | None:
    """The observed state of setting ``name`` in ``cell``'s successful runs, condensed by the setting."""
    setting = _settings.SETTINGS[name]
    facts = [setting.facts(observed) for run in _summary.ok_runs(doc, cell)
             if (observed := (run.get("readback", {}).get(name) or {}).get("observed")) is not None]
    if not facts:
        return None
    return facts[0] if all(f == facts[0] for f in facts) else {"varies": facts}


def _readback_text(name: str, facts: dict | None) -> str:
    if not facts or "varies" in facts:
        return ""
    phrase = _settings.SETTINGS[name].facts_phrase(facts)
    return f" ({phrase})" if phrase else ""


def gap(ctx: Context) -> list[dict]:
    """The focus contrast at baseline: each focus value against the first one."""
    if not ctx.focus:
        return []
    values = ctx.matrix[ctx.focus]
    a = ctx.cell()
    out = []
    for value in values[1:]:
        b = ctx.cell(**{ctx.focus: value})
        cmp = ctx.compare(a, b)
        if cmp is None:
            continue
        evidence = {"counters": _counters(ctx, {"a": a, "b": b})}
        message = _relation(_label(a, [ctx.focus]), _label(b, [ctx.focus]), cmp)
        out.append(_finding("gap", ctx, a, b, cmp, None, False, evidence, message))
    return out


def _log(r: float) -> float:
    return math.log(r) if r and r > 0 else 0.0


def closes_gap(ctx: Context) -> list[dict]:
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
                if under is None:
                    continue
                out.append(_judge_gap(ctx, key, value, (a0, b0, base), (a1, b1, under)))
    return out


def _judge_gap(ctx: Context, key: str, value: Any, before: tuple, after: tuple) -> dict:
    (a0, b0, base), (a1, b1, under) = before, after
    setting = f"{key}={_settings.format_value(value)}"
    names = [ctx.focus]
    counters = _counters(ctx, {"a": a0, "b": b0, "a_with_setting": a1, "b_with_setting": b1})
    slow, fast = ("a", "b") if base["ratio"] >= 1 else ("b", "a")
    # Evidence moves with the gap: higher in the slower cell at baseline, and
    # under the setting fallen there, its lead over the faster cell mostly gone
    # (measured against the baseline lead: 148 vs 3,131 faults after 310k vs
    # 2.6k has closed that gap, though one is 20 times the other).
    moved = [f for f, v in counters.items()
             if _differ(v[slow], v[fast]) and (v[slow] or 0) > (v[fast] or 0)
             and (v[slow + "_with_setting"] or 0) < (v[slow] or 0)
             and (v[slow + "_with_setting"] or 0) - (v[fast + "_with_setting"] or 0)
             <= CLOSED_SHARE * ((v[slow] or 0) - (v[fast] or 0))]
    readback = {role: _readback_facts(ctx.doc, c, key) for role, c in (("a", a1), ("b", b1))} \
        if key in _settings.SETTINGS else {}
    evidence = {
        "gap": {"ratio": base["ratio"], "ci95": list(base["ci95"]), "significant": resolved(base)},
        "gap_with_setting": {"ratio": under["ratio"], "ci95": list(under["ci95"]),
                             "significant": resolved(under)},
        "counters": counters,
        "counters_moving_with_gap": moved,
        "readback": readback,
    }
    left = abs(_log(under["ratio"])) / abs(_log(base["ratio"])) if _log(base["ratio"]) else float("inf")
    head = _relation(_label(a0, names), _label(b0, names), base)
    under_text = f"with {setting}{_readback_text(key, readback.get('a'))} it is {describe(under)}"
    if not resolved(base):
        rule = "opens_gap" if resolved(under) else "no_gap"
        explains = False
        message = f"{head}; {under_text}" + (": the gap appears only with this setting" if resolved(under) else "")
    elif resolved(under) and (under["ratio"] > 1) != (base["ratio"] > 1):
        rule, explains = "reverses_gap", False
        message = f"{head}; {under_text}: {setting} reverses the gap (the two interact)"
    elif left <= CLOSED_SHARE or (not resolved(under) and _consistent_with_no_gap(under)
                                  and _intervals_apart(base, under)):
        rule, explains = "closes_gap", True
        message = f"{head}; {under_text}: {setting} closes the gap" + _mechanism_text(key, counters, moved)
    elif left <= NARROWED_SHARE:
        rule, explains = "narrows_gap", False
        message = f"{head}; {under_text}: {setting} narrows the gap but does not close it"
    elif not resolved(under):
        # No longer resolved, yet neither small nor clearly apart from the gap:
        # noise may have hidden it rather than the setting closing it.
        rule, explains = "unresolved_gap", False
        message = (f"{head}; {under_text}: with {setting} the gap is not resolved, yet too much of it "
                   f"may remain to call it closed: add repetitions")
    else:
        rule, explains = "keeps_gap", False
        message = f"{head}; {under_text}: {setting} does not explain the gap"
    return _finding(rule, ctx, a0, b0, base, setting, explains, evidence, message)


def _consistent_with_no_gap(cmp: dict) -> bool:
    lo, hi = cmp["ci95"]
    return lo <= 1.0 <= hi


def _intervals_apart(base: dict, under: dict) -> bool:
    """The gap under a setting lies wholly on the near side of 1 of the gap's own CI."""
    (b_lo, b_hi), (u_lo, u_hi) = base["ci95"], under["ci95"]
    return u_hi < b_lo if base["ratio"] > 1 else u_lo > b_hi


def _mechanism_text(key: str, counters: dict, moved: list[str]) -> str:
    setting = _settings.SETTINGS.get(key)
    field, mechanism = (setting.evidence_counter, setting.mechanism) if setting else (None, None)
    parts = []
    for f in moved:
        v = counters[f]
        slow = "a" if (v["a"] or 0) >= (v["b"] or 0) else "b"
        parts.append(f"{COUNTER_WORDS[f]} go from {_count_text(v[slow])} to "
                     f"{_count_text(v[slow + '_with_setting'])}")
    text = "; " + ", ".join(parts) if parts else ""
    # A mechanism is named only when its own counter moved with the gap.
    if mechanism and field is not None and field in moved:
        text += f": the slowdown is {mechanism}"
    return text


def setting_effect(ctx: Context) -> list[dict]:
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
            readback = {setting: _readback_facts(ctx.doc, b, key)} if key in _settings.SETTINGS else {}
            evidence = {"counters": _counters(ctx, {"a": b, "b": a}), "readback": readback}
            message = _relation(_label(b, [key]), _label(a, [key]), cmp)
            if key in _settings.SETTINGS:
                message += _readback_text(key, readback[setting])
            out.append(_finding("setting_effect", ctx, b, a, cmp, setting, resolved(cmp),
                                evidence, message))
    return out


RULES: tuple[Callable[[Context], list[dict]], ...] = (gap, closes_gap, setting_effect)


def findings(doc: dict, focus: str | None = None, rules=RULES) -> list[dict]:
    """Run ``rules`` over every phase of ``doc`` (which must have its ``summary``)."""
    if focus is not None and focus not in doc["matrix"]:
        raise ValueError(f"focus {focus!r} is not a matrix key of this document ({', '.join(doc['matrix'])})")
    out = []
    for phase in _summary.phases(doc):
        ctx = Context(doc, phase, focus)
        for rule in rules:
            out += rule(ctx)
        out += not_comparable(ctx)
    return out


def not_comparable(ctx: Context) -> list[dict]:
    """Pairs the rules wanted but stats.compare refused: said, not silently dropped."""
    out = []
    for a, b, reason in ctx.refused.values():
        out.append({"rule": "not_comparable", "phase": ctx.phase, "a": a, "b": b, "ratio": None, "ci95": None,
                    "significant": False, "p_value": None, "setting": None, "explains": False, "evidence": {},
                    "message": f"cannot compare {_settings.cell_label(a)} with {_settings.cell_label(b)}: {reason}"})
    return out
