"""Verdict rules that answer the two seed questions, over a results document.

The runner's :mod:`benchctl.results.verdict` already says which setting
closes a gap and which counters move with it. The rules here judge the
seeds' matrices with the cause library (:mod:`.causes`: FTZ by the penalty
profile and the census, the allocator by page faults) and add the seed-only
remarks: whether zero weights cost what uniform ones cost on a CPU, and how
far the seed's own timing method (its ``output.backward`` without
parentheses) is from the measurement.

Each rule is a small named function ``rule_*(doc) -> list[Finding]`` over the
runner's results document plus ``doc["evidence"]["penalty"]``, which the
seed runs fill with :func:`penalty_evidence`. Findings are
:class:`benchctl.results.verdict.Finding`, the verdict's own type.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ..results import processes, queries
from ..results.verdict import Finding, ratio_text, resolved
from .causes.denormals import FMA_OPS, penalised_ops, ratios_text, why_ftz_cannot_matter
from .penalty import OP_NAMES

__all__ = ["PENALTY_OPS", "NAIVE_MISLEADS_RATIO", "ftz_precheck",
           "rule_ftz_explained", "rule_values_do_not_matter_on_cpu", "rule_seed_naive_timing",
           "rule_ftz_no_effect_zero_weights", "resnet_order_findings", "zero_weights_findings"]

#: The ops each seed's penalty profile measures: a conv net's multiply-adds for
#: resnet_order; every op for zero_weights, whose answer names which ones
#: special values slow down.
PENALTY_OPS = {"resnet_order": FMA_OPS, "zero_weights": OP_NAMES}
# The seed's naive timing counts as misleading when it is off by more than this.
NAIVE_MISLEADS_RATIO = 1.2


# --- reading the document ---------------------------------------------------

def _cell_with(doc: dict, **fixed: Any) -> dict:
    """The baseline cell with ``fixed`` values for those keys the matrix varies (a value the
    matrix lacks gives a cell with no runs, which the rules then leave alone)."""
    return {**queries.baseline(doc), **{k: v for k, v in fixed.items() if k in doc["matrix"]}}


def _ftz_values(doc: dict) -> tuple[str, str] | None:
    """(off value, flushed value) of the matrix's ftz axis, or None when it does not vary FTZ."""
    values = doc["matrix"].get("ftz") or []
    on = next((v for v in values if v != "off"), None)
    return ("off", on) if "off" in values and on else None


def _compare(doc: dict, phase: str, a: dict, b: dict) -> dict | None:
    """The verdict's comparison of two cells; None if either has fewer than 2 steady samples."""
    if min(len(queries.steady_samples(doc, phase, c)[0]) for c in (a, b)) < 2:
        return None
    return queries.Comparisons(doc).compare(phase, a, b)


def _is_different(cmp: dict | None) -> bool:
    return bool(cmp) and resolved(cmp)


def _no_effect_text(what: str, cmp: dict) -> str:
    """What a comparison that calls no effect says: none beyond the band, unresolved, or one process."""
    outcome = cmp["outcome"]
    if outcome == processes.NO_EFFECT:
        return f"{what} has no effect beyond ±{cmp['band']:.0%} ({ratio_text(cmp)})"
    if outcome == processes.UNRESOLVED:
        return f"{what}'s effect is unresolved ({ratio_text(cmp)} crosses the ±{cmp['band']:.0%} band)"
    return f"{what}'s effect cannot be judged with one process per cell ({ratio_text(cmp)})"


def _penalty(doc: dict) -> dict | None:
    return (doc.get("evidence") or {}).get("penalty")


# --- seed 1: resnet_order ---------------------------------------------------

EVAL, ORDER_SLOW = "eval", "eval_only"


def _ftz_reached(doc: dict, cell: dict) -> dict | None:
    """{"flushed", "threads"} from the runner's ftz readback of ``cell``'s runs."""
    facts = queries.readback_facts(doc, cell, "ftz")
    return facts if facts and facts.get("threads") else None


def _census_total(note: Any, key: str = "subnormal") -> int | None:
    if isinstance(note, dict) and note.get("available", True) and key in note:
        return int(note[key])
    return None


def _ftz_message(cmp: dict | None, on: str, off: str, expected: bool | None, because: str, reach: str) -> str:
    if cmp is None:
        return f"FTZ effect not measurable: too few eval iterations in ftz={on} / ftz={off} cells"
    changed = _is_different(cmp)
    if changed and cmp["ratio"] < 1 and expected:
        return (f"FTZ explains a speed-up: ftz={on}/ftz={off} eval_only is {ratio_text(cmp)}, "
                f"because {because}{reach}")
    if changed:
        return (f"FTZ changes the eval time ({ratio_text(cmp)}, ftz={on}/ftz={off}) although {because}: "
                f"the cause is not explained by denormals{reach}")
    if expected:
        return (f"FTZ should matter here ({because}) but shows no effect ({ratio_text(cmp)}); "
                f"check the ftz readback{reach}")
    return f"{_no_effect_text('FTZ', cmp)} because {because}{reach}"


def rule_ftz_explained(doc: dict) -> list[Finding]:
    """Does FTZ change the eval time, and do the penalty profile and census say why?"""
    if not _ftz_values(doc):
        return []
    off, on = _ftz_values(doc)
    a, b = _cell_with(doc, order=ORDER_SLOW, ftz=on), _cell_with(doc, order=ORDER_SLOW, ftz=off)
    cmp = _compare(doc, EVAL, a, b)
    weights_note = queries.first_note(doc, b, "weights_census")
    act_note = queries.first_note(doc, b, "activation_census")
    used = (queries.first_note(doc, b, "weights") or {}).get("used")
    expected, reasons = why_ftz_cannot_matter(
        _penalty(doc), _census_total(weights_note), (weights_note or {}).get("values"), _census_total(act_note))
    reached = _ftz_reached(doc, a)
    evidence = {"penalty": {op: (_penalty(doc) or {}).get(op) for op in FMA_OPS}, "weights_used": used,
                "weights_census": weights_note, "activation_census": act_note, "ftz_readback": reached}
    because = " and ".join(reasons) if reasons else "no penalty profile or census was recorded"
    reach = f"; ftz={on} flushed {reached['flushed']}/{reached['threads']} threads (readback)" if reached else ""
    explains = _is_different(cmp) and cmp["ratio"] < 1 and bool(expected)
    return [Finding.of("ftz_explained", EVAL, cmp, _ftz_message(cmp, on, off, expected, because, reach),
                       a=a, b=b, setting=f"ftz={on}", explains=explains, evidence=evidence)]


def ftz_precheck(matrix: dict, penalty: dict | None, weights_census: dict | None,
                 activation_subnormal: int | None) -> dict | None:
    """FTZ ruled out before any cell runs, as a finding (JSON), or None when it may matter.

    FTZ/DAZ can change a timing only if this CPU penalises subnormal
    multiply-adds in a way they remove (the penalty profile) *and* the values
    hold subnormals (the census of the weights and of one forward's
    activations, taken in this process before the matrix runs). Missing
    evidence rules nothing out.
    """
    ftz = _ftz_values({"matrix": matrix})
    if ftz is None:
        return None
    expected, reasons = why_ftz_cannot_matter(
        penalty, _census_total(weights_census), (weights_census or {}).get("values"), activation_subnormal)
    if expected is not False:
        return None
    off, on = ftz
    message = (f"FTZ ruled out before any cell ran: {' and '.join(reasons)}; so the ftz={on} cells were not run "
               f"(--set ftz={off},{on} runs them anyway)")
    return Finding("ftz_ruled_out", None, message, setting=f"ftz={on}", explains=False, significant=None,
                   evidence={"penalty": {op: (penalty or {}).get(op) for op in FMA_OPS},
                             "weights_census": weights_census, "activation_subnormal": activation_subnormal,
                             "dropped": {"ftz": [on]}}).to_json()


def resnet_order_findings(doc: dict) -> list[dict]:
    return _apply(doc, (rule_ftz_explained,))


# --- seed 2: zero_weights ---------------------------------------------------

ZW_PHASES = ("forward", "forward_backward")


def _devices(doc: dict) -> list[str]:
    return list(doc["matrix"].get("device") or [doc.get("args", {}).get("device", "cpu")])


def _activation_facts(doc: dict, cell: dict) -> dict | None:
    layers = queries.first_note(doc, cell, "activations")
    if not layers:
        return None
    peak = max((r["max_abs"] for r in layers if r.get("max_abs") is not None), default=None)
    counts = [r.get("subnormal") for r in layers]
    return {
        "max_abs": peak,
        "nonfinite": sum(r.get("nonfinite", 0) for r in layers),
        "subnormal": None if any(c is None for c in counts) else sum(counts),
        "values": sum(r["numel"] for r in layers),
    }


def _special_value_parts(penalty: dict) -> list[str]:
    """What the penalty profile measured on zeros and subnormals, for the seed-2 answer."""
    conv_like = ("conv2d", "matmul")
    parts = [f"the penalty profile measures {ratios_text(penalty, conv_like, 'zero_ratio')} on zeros and "
             f"{ratios_text(penalty, conv_like, 'subnormal_ratio')} on subnormals"]
    slow_on_zero = penalised_ops(penalty, sorted(penalty), "zero")
    slow_on_sub = penalised_ops(penalty, sorted(penalty), "subnormal")
    conv_slow = {k: r for k, r in {**slow_on_sub, **slow_on_zero}.items() if k == "conv2d"}
    others_zero = {k: r for k, r in slow_on_zero.items() if k != "conv2d"}
    others_sub = {k: r for k, r in slow_on_sub.items() if k != "conv2d" and k not in slow_on_zero}
    if others_zero or others_sub:
        listed = [f"{op} {r:.1f}× on zeros" for op, r in others_zero.items()]
        listed += [f"{op} {r:.1f}× on subnormals" for op, r in others_sub.items()]
        parts.append("special values do slow some ops on this machine (" + ", ".join(listed)
                     + "), but this net runs only convolutions and ReLU")
    if conv_slow:
        parts.append(f"conv2d itself is {conv_slow['conv2d']:.1f}× slower on special values here, so "
                     "the activations' census below decides whether this net meets them")
    elif "conv2d" in penalty:
        parts.append("conv2d is not slower on zero or subnormal inputs on this CPU, so the weights' values "
                     "cannot change this net's convolution time")
    return parts


def _activation_parts(acts: dict) -> list[str]:
    parts = []
    u, z = acts["uniform"], acts["zero"]
    if u and u["max_abs"] is not None:
        sub = f", {u['subnormal']:,} subnormal of {u['values']:,}" if u["subnormal"] is not None else ""
        parts.append(f"uniform weights grow activations to {u['max_abs']:.1e}{sub}")
    if z and z["max_abs"] is not None:
        parts.append(f"zero weights make every activation {z['max_abs']:g}" if z["max_abs"] == 0 else
                     f"zero weights leave activations up to {z['max_abs']:.1e}")
    return parts


def rule_values_do_not_matter_on_cpu(doc: dict) -> list[Finding]:
    """Do zero and uniform weights cost the same on the CPU, and what did the penalty profile measure?"""
    if "cpu" not in _devices(doc) or "init" not in doc["matrix"]:
        return []
    a, b = _cell_with(doc, device="cpu", init="zero"), _cell_with(doc, device="cpu", init="uniform")
    cmps = {phase: _compare(doc, phase, a, b) for phase in ZW_PHASES}
    if any(c is None for c in cmps.values()):
        return []
    outcomes = {c["outcome"] for c in cmps.values()}
    same = outcomes == {processes.NO_EFFECT}
    differ = processes.EFFECT in outcomes
    penalty = _penalty(doc)
    acts = {"zero": _activation_facts(doc, a), "uniform": _activation_facts(doc, b)}
    evidence = {"penalty": penalty, "activations": acts,
                "weights_census": {"zero": queries.first_note(doc, a, "weights_census"),
                                   "uniform": queries.first_note(doc, b, "weights_census")}}
    timings = "; ".join(
        f"{phase} {c['median_a'] / 1e6:.2f} vs {c['median_b'] / 1e6:.2f} ms, zero/uniform {ratio_text(c)}"
        for phase, c in cmps.items())
    if differ:
        message = f"on cpu, zero and uniform weights differ in time ({timings})"
    elif same:
        message = (f"on cpu, zero and uniform weights show no difference beyond ±{cmps['forward']['band']:.0%}, "
                   f"this run's resolution ({timings})")
    else:
        message = (f"on cpu, whether zero and uniform weights differ is unresolved ({timings}): "
                   "more processes would settle it")
    parts = (_special_value_parts(penalty) if penalty else ["no penalty profile was measured to say why"])
    message += ": " + "; ".join(parts + _activation_parts(acts))
    return [Finding.of("values_do_not_matter_on_cpu", "forward", cmps["forward"], message, a=a, b=b,
                       setting="init", explains=differ, evidence=evidence)]


def _naive_finding(doc: dict, device: str, init: str) -> Finding | None:
    cell = _cell_with(doc, device=device, init=init)
    naive = [r["notes"]["naive_seed_timing"] for r in queries.ok_runs(doc, cell)
             if "naive_seed_timing" in r.get("notes", {})]
    fwd, fb = (queries.summary_entry(doc, phase, cell) for phase in ZW_PHASES)
    if not naive or not fwd or not fb:
        return None
    naive_fwd = sum(n["forward_ms"] for n in naive) / len(naive)
    naive_fb = sum(n["seed_forward_backward_ms"] for n in naive) / len(naive)
    real_fwd, real_fb = fwd["median_ms"], fb["median_ms"]
    ratio = naive_fb / real_fb
    misleads = not (1 / NAIVE_MISLEADS_RATIO <= ratio <= NAIVE_MISLEADS_RATIO)
    message = (f"{device}, init={init}: the seed's method reports forward {naive_fwd:.2f} ms and "
               f"'forward + backward' {naive_fb:.2f} ms; measured medians are {real_fwd:.2f} ms and "
               f"{real_fb:.2f} ms ({real_fb / real_fwd:.1f}× forward): its 'forward + backward' is "
               f"a second forward, because `output.backward` (no parentheses) never runs")
    if device == "cuda":
        message += "; on cuda its host timer without synchronize times kernel launches, not kernels"
    return Finding("seed_naive_timing", "forward_backward", message, a=cell, b=cell, ratio=ratio,
                   significant=None, setting="method", explains=misleads,
                   evidence={"naive_forward_ms": naive_fwd, "naive_seed_forward_backward_ms": naive_fb,
                             "median_forward_ms": real_fwd, "median_forward_backward_ms": real_fb,
                             "trials": naive[0]["trials"], "repetitions": len(naive)})


def rule_seed_naive_timing(doc: dict) -> list[Finding]:
    """How far the seed's own method (cold host timer, backward never called) is from the measurement."""
    inits = doc["matrix"].get("init", [doc.get("args", {}).get("init", "uniform")])
    found = (_naive_finding(doc, device, init) for device in _devices(doc) for init in inits)
    return [f for f in found if f is not None]


def rule_ftz_no_effect_zero_weights(doc: dict) -> list[Finding]:
    """zero_weights: does FTZ change the uniform net's forward time, and would the census predict it?"""
    if not _ftz_values(doc):
        return []
    off, on = _ftz_values(doc)
    a = _cell_with(doc, init="uniform", device="cpu", ftz=on)
    b = _cell_with(doc, init="uniform", device="cpu", ftz=off)
    cmp = _compare(doc, "forward", a, b)
    if cmp is None:
        return []
    acts = _activation_facts(doc, b)
    expected, reasons = why_ftz_cannot_matter(
        _penalty(doc), _census_total(queries.first_note(doc, b, "weights_census")), None,
        acts["subnormal"] if acts else None)
    because = " and ".join(reasons) or "no penalty profile or census was recorded"
    if _is_different(cmp):
        message = f"ftz={on} changes the forward time ({ratio_text(cmp)}); evidence: {because}"
    else:
        message = f"{_no_effect_text('FTZ on this net', cmp)} because {because}"
    return [Finding.of("ftz_no_effect_zero_weights", "forward", cmp, message, a=a, b=b, setting=f"ftz={on}",
                       explains=_is_different(cmp) and bool(expected),
                       evidence={"activations": acts, "ftz_readback": _ftz_reached(doc, a)})]


def zero_weights_findings(doc: dict) -> list[dict]:
    return _apply(doc, (rule_values_do_not_matter_on_cpu, rule_ftz_no_effect_zero_weights, rule_seed_naive_timing))


def _apply(doc: dict, rules: Iterable[Callable[[dict], list[Finding]]]) -> list[dict]:
    """Every rule's findings, as the results document stores them."""
    return [f.to_json() for rule in rules for f in rule(doc)]
