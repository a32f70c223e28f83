"""Verdict rules that answer the two seed questions, over a results document.

The runner's :mod:`benchctl.verdict` already says which setting closes a gap
and which counters move with it. The rules here add what only these seeds
need: *why* FTZ does or does not matter (the CPU's penalty profile for the
ops a conv net runs, the subnormal census of its weights and activations),
why zero weights cost what uniform ones cost on a CPU, and how far the seed's
own timing method is from the measurement.

Each rule is a small named function ``rule_*(doc) -> list[finding]`` over the
runner's results document (``matrix``, ``runs`` with ``phases``/``notes``/
``readback``, ``summary``) plus ``doc["evidence"]["penalty"]``, which the
bench scripts fill with :func:`penalty_evidence`. A finding has the runner's
shape: ``rule``, ``phase``, ``a``, ``b`` (the cells compared), ``ratio``
(median a / median b), ``ci95``, ``significant``, ``setting``, ``explains``,
``evidence`` and ``message``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from . import summary as _summary
from . import verdict as _verdict

# The multiply-add ops a conv net's time is spent in: their subnormal penalty
# decides whether FTZ/DAZ can change a conv net's speed.
FMA_OPS = ("conv2d", "matmul", "addcmul")
# A ratio CI whose bounds are further apart than this factor cannot rule an effect out.
WIDE_CI_FACTOR = 1.5
# The seed's naive timing counts as misleading when it is off by more than this.
NAIVE_MISLEADS_RATIO = 1.2

Finding = dict


# --- reading the document ---------------------------------------------------

def baseline(doc: dict) -> dict:
    """The baseline cell: the first value of every matrix setting."""
    return {key: values[0] for key, values in doc["matrix"].items()}


def cell_with(doc: dict, **fixed: Any) -> dict:
    """The baseline cell with ``fixed`` values for those keys the matrix varies."""
    return {**baseline(doc), **{k: v for k, v in fixed.items() if k in doc["matrix"]}}


def ftz_values(doc: dict) -> tuple[str, str] | None:
    """(off value, flushed value) of the matrix's ftz axis, or None when it does not vary FTZ."""
    values = doc["matrix"].get("ftz") or []
    off = "off" if "off" in values else None
    on = next((v for v in values if v != "off"), None)
    return (off, on) if off and on else None


def _matches(cell: dict, want: dict) -> bool:
    return all(cell.get(k) == v for k, v in want.items())


def ok_runs(doc: dict, want: dict) -> list[dict]:
    return [r for r in doc["runs"] if r.get("status") == "ok" and _matches(r["cell"], want)]


def first_note(doc: dict, want: dict, key: str):
    for run in ok_runs(doc, want):
        if key in run.get("notes", {}):
            return run["notes"][key]
    return None


def compare_cells(doc: dict, phase: str, a: dict, b: dict) -> dict | None:
    """The runner verdict's comparison of two cells (processes resampled when repeated);
    None if either has too few samples or the comparison was refused."""
    if min(len(_summary.steady_samples(doc, phase, c)[0]) for c in (a, b)) < 2:
        return None
    return _verdict.Context(doc, phase, None).compare(a, b)


def _finding(rule: str, phase: str, a: dict | None, b: dict | None, cmp: dict | None, setting: str | None,
             explains: bool, evidence: dict, message: str) -> Finding:
    return {
        "rule": rule,
        "phase": phase,
        "a": a,
        "b": b,
        "ratio": cmp["ratio"] if cmp else None,
        "ci95": cmp["ci95"] if cmp else None,
        "significant": is_different(cmp),
        "p_value": cmp["p_value"] if cmp else None,
        "setting": setting,
        "explains": bool(explains),
        "evidence": evidence,
        "message": message,
    }


def _ratio_text(cmp: dict) -> str:
    return _verdict.ratio_text(cmp["ratio"], cmp["ci95"])


def no_effect_text(what: str, cmp: dict) -> str:
    """"FTZ has no effect (ratio)" or, when the CI is wide, that no effect was resolved."""
    lo, hi = cmp["ci95"]
    if lo > 0 and hi / lo > WIDE_CI_FACTOR:
        return (f"{what} shows no significant effect ({_ratio_text(cmp)}; the CI is too wide to rule one "
                f"out: add repetitions)")
    return f"{what} has no effect ({_ratio_text(cmp)})"


def is_different(cmp: dict | None) -> bool:
    """The runner's test of a difference (:func:`benchctl.verdict.resolved`), None-safe."""
    return bool(cmp) and _verdict.resolved(cmp)


# --- evidence: the CPU's penalty profile ------------------------------------

def penalty_evidence(profile: dict) -> dict:
    """Normalise a :func:`benchctl.denormals.penalty_profile` result to
    {op: {"subnormal_ratio", "zero_ratio", "subnormal_ratio_ftz", "class",
    "penalised_subnormal", "penalised_zero", "ftz_removes", "threads"}}, the
    shape these rules read from ``doc["evidence"]["penalty"]``.

    An op measured at several thread counts is represented by its worst
    (largest subnormal ratio) row: a penalty at any thread count can explain
    a slowdown.
    """
    threshold = profile["penalty_ratio"]
    worst: dict[str, dict] = {}
    for row in profile["ops"]:
        if row["op"] not in worst or row["subnormal_ratio_off"] > worst[row["op"]]["subnormal_ratio_off"]:
            worst[row["op"]] = row
    out = {}
    for op, row in worst.items():
        penalised = row["subnormal_ratio_off"] >= threshold
        out[op] = {
            "subnormal_ratio": row["subnormal_ratio_off"],
            "zero_ratio": row["zero_ratio_off"],
            "subnormal_ratio_ftz": row["subnormal_ratio_on"],
            "class": row["classification"],
            "penalised_subnormal": penalised,
            "penalised_zero": row["zero_ratio_off"] >= threshold,
            "ftz_removes": (row["subnormal_ratio_on"] < threshold) if penalised else None,
            "threads": row["threads"],
        }
    return out


def _penalty(doc: dict) -> dict | None:
    return (doc.get("evidence") or {}).get("penalty")


def penalised_ops(penalty: dict, ops: Iterable[str], kind: str) -> dict[str, float]:
    """{op: ratio} for the ops among ``ops`` penalised on ``kind`` inputs ('subnormal' | 'zero')."""
    return {op: penalty[op][f"{kind}_ratio"] for op in ops
            if op in penalty and penalty[op].get(f"penalised_{kind}")}


def _ratios_text(penalty: dict, ops: Iterable[str], key: str) -> str:
    parts = [f"{op} {penalty[op][key]:.1f}×" for op in ops if op in penalty and penalty[op].get(key) is not None]
    return ", ".join(parts) or "not measured"


# --- seed 1: resnet_order ---------------------------------------------------

EVAL, ORDER_SLOW = "eval", "eval_only"


def _ftz_reached(doc: dict, want: dict) -> dict | None:
    """{"flushed", "threads"} from the runner's ftz readback of the first matching run."""
    for run in ok_runs(doc, want):
        observed = ((run.get("readback") or {}).get("ftz") or {}).get("observed")
        if isinstance(observed, dict) and observed.get("threads"):
            return {"flushed": observed.get("flushed"), "threads": observed["threads"]}
    return None


def _census_total(note: Any, key: str = "subnormal") -> int | None:
    if isinstance(note, dict) and note.get("available", True) and key in note:
        return int(note[key])
    return None


def _why_ftz_cannot_matter(penalty: dict | None, weights_sub: int | None, weights_n: int | None,
                           act_sub: int | None) -> tuple[bool | None, list[str]]:
    """(FTZ expected to matter?, reasons). None when the evidence is missing."""
    reasons = []
    cpu_penalises = None
    if penalty:
        # Only a penalty that FTZ/DAZ removes can make FTZ matter.
        penalised = penalised_ops(penalty, FMA_OPS, "subnormal")
        cpu_penalises = any(penalty[op].get("ftz_removes") for op in penalised)
        ratios = f"{_ratios_text(penalty, FMA_OPS, 'subnormal_ratio')} on subnormal inputs, penalty profile"
        if cpu_penalises:
            reasons.append(f"this CPU penalises subnormal multiply-adds and FTZ/DAZ removes it ({ratios})")
        elif penalised:
            reasons.append(f"this CPU's penalty on subnormal multiply-adds is a slow path FTZ/DAZ does not "
                           f"remove ({ratios})")
        else:
            reasons.append(f"this CPU does not penalise subnormal multiply-adds ({ratios})")
    has_subnormals = None
    if weights_sub is not None:
        has_subnormals = weights_sub > 0 or bool(act_sub)
        of = f" of {weights_n:,}" if weights_n else ""
        act = f", activations {act_sub:,}" if act_sub is not None else ""
        reasons.append(
            f"the values hold subnormals (census: weights {weights_sub:,}{of}{act})" if has_subnormals else
            f"the weights have none (census: 0{of} weights subnormal{act})"
        )
    if cpu_penalises is None or has_subnormals is None:
        return None, reasons
    return cpu_penalises and has_subnormals, reasons


def rule_ftz_explained(doc: dict) -> list[Finding]:
    """Does FTZ change the eval time, and do the penalty profile and census say why?"""
    if not ftz_values(doc):
        return []
    off, on = ftz_values(doc)
    a, b = cell_with(doc, order=ORDER_SLOW, ftz=on), cell_with(doc, order=ORDER_SLOW, ftz=off)
    cmp = compare_cells(doc, EVAL, a, b)
    weights_note = first_note(doc, b, "weights_census")
    act_note = first_note(doc, b, "activation_census")
    used = (first_note(doc, b, "weights") or {}).get("used")
    expected, reasons = _why_ftz_cannot_matter(
        _penalty(doc), _census_total(weights_note), (weights_note or {}).get("values"), _census_total(act_note))
    reached = _ftz_reached(doc, a)
    evidence = {"penalty": {op: (_penalty(doc) or {}).get(op) for op in FMA_OPS}, "weights_used": used,
                "weights_census": weights_note, "activation_census": act_note, "ftz_readback": reached}
    changed = cmp is not None and is_different(cmp)
    faster = changed and cmp["ratio"] < 1
    because = " and ".join(reasons) if reasons else "no penalty profile or census was recorded"
    reach = f"; ftz={on} flushed {reached['flushed']}/{reached['threads']} threads (readback)" if reached else ""
    if cmp is None:
        message = f"FTZ effect not measurable: too few eval iterations in ftz={on} / ftz={off} cells"
    elif faster and expected:
        message = f"FTZ explains a speed-up: ftz={on}/ftz={off} eval_only is {_ratio_text(cmp)}, because {because}{reach}"
    elif changed:
        message = (f"FTZ changes the eval time ({_ratio_text(cmp)}, ftz={on}/ftz={off}) although {because}: "
                   f"the cause is not explained by denormals{reach}")
    elif expected:
        message = (f"FTZ should matter here ({because}) but shows no effect ({_ratio_text(cmp)}); "
                   f"check the ftz readback{reach}")
    else:
        message = f"{no_effect_text('FTZ', cmp)} because {because}{reach}"
    return [_finding("ftz_explained", EVAL, a, b, cmp, f"ftz={on}", faster and bool(expected), evidence, message)]


def resnet_order_findings(doc: dict) -> list[Finding]:
    return _apply(doc, (rule_ftz_explained,))


# --- seed 2: zero_weights ---------------------------------------------------

ZW_PHASES = ("forward", "forward_backward")


def _init_pair(doc: dict, **fixed: Any) -> tuple[dict, dict]:
    return cell_with(doc, **fixed, init="zero"), cell_with(doc, **fixed, init="uniform")


def _devices(doc: dict) -> list[str]:
    return list(doc["matrix"].get("device") or [doc.get("args", {}).get("device", "cpu")])


def _activation_facts(doc: dict, cell: dict) -> dict | None:
    layers = first_note(doc, cell, "activations")
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


def rule_values_do_not_matter_on_cpu(doc: dict) -> list[Finding]:
    """Why zero and uniform weights cost the same on the CPU (or what the evidence says if not)."""
    if "cpu" not in _devices(doc):
        return []
    if "init" not in doc["matrix"]:
        return []
    a, b = _init_pair(doc, device="cpu")
    cmps = {phase: compare_cells(doc, phase, a, b) for phase in ZW_PHASES}
    if any(c is None for c in cmps.values()):
        return []
    same = not any(is_different(c) for c in cmps.values())
    wide = any(c["ci95"][0] > 0 and c["ci95"][1] / c["ci95"][0] > WIDE_CI_FACTOR for c in cmps.values())
    penalty = _penalty(doc)
    acts = {"zero": _activation_facts(doc, a), "uniform": _activation_facts(doc, b)}
    evidence = {"penalty": penalty, "activations": acts,
                "weights_census": {"zero": first_note(doc, a, "weights_census"),
                                   "uniform": first_note(doc, b, "weights_census")}}
    parts = []
    if penalty:
        parts.append(f"the penalty profile measures {_ratios_text(penalty, ('conv2d', 'matmul'), 'zero_ratio')} "
                     f"on zeros and {_ratios_text(penalty, ('conv2d', 'matmul'), 'subnormal_ratio')} on subnormals")
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
    u = acts["uniform"]
    if u and u["max_abs"] is not None:
        sub = f", {u['subnormal']:,} subnormal of {u['values']:,}" if u["subnormal"] is not None else ""
        parts.append(f"uniform weights grow activations to {u['max_abs']:.1e}{sub}")
    z = acts["zero"]
    if z and z["max_abs"] is not None:
        parts.append(f"zero weights make every activation {z['max_abs']:g}" if z["max_abs"] == 0 else
                     f"zero weights leave activations up to {z['max_abs']:.1e}")
    timings = "; ".join(
        f"{phase} {c['median_a'] / 1e6:.2f} vs {c['median_b'] / 1e6:.2f} ms, zero/uniform {_ratio_text(c)}"
        for phase, c in cmps.items())
    if same and wide:
        message = (f"on cpu, no difference between zero and uniform weights is resolved ({timings}), but "
                   "the CI is too wide to rule one out: add repetitions")
    elif same:
        message = (f"on cpu, zero weights cost the same as uniform ({timings}) because dense GEMM convolution "
                   "kernels do the same multiply-adds whatever the values; data-dependent speed on a CPU needs "
                   "special values on a slow path (subnormals in hardware, zeros in some library paths)")
    else:
        message = (f"on cpu, zero and uniform weights differ in time ({timings}); dense GEMM kernels do not "
                   "look at values, so look for special values on a slow path")
    if parts:
        message += ": " + "; ".join(parts)
    return [_finding("values_do_not_matter_on_cpu", "forward", a, b, cmps["forward"], "init", not same, evidence, message)]


def rule_seed_naive_timing(doc: dict) -> list[Finding]:
    """How far the seed's own method (cold host timer, backward never called) is from the measurement."""
    findings = []
    for device in _devices(doc):
        for init in doc["matrix"].get("init", [doc.get("args", {}).get("init", "uniform")]):
            cell = cell_with(doc, device=device, init=init)
            naive = [r["notes"]["naive_seed_timing"] for r in ok_runs(doc, cell)
                     if "naive_seed_timing" in r.get("notes", {})]
            fwd, fb = (_summary.find(doc.get("summary", []), phase, cell) for phase in ("forward", "forward_backward"))
            if not naive or not fwd or not fb:
                continue
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
            findings.append({
                "rule": "seed_naive_timing", "phase": "forward_backward", "a": cell, "b": cell,
                "ratio": ratio, "ci95": None, "significant": None, "p_value": None,
                "setting": "method", "explains": misleads,
                "evidence": {"naive_forward_ms": naive_fwd, "naive_seed_forward_backward_ms": naive_fb,
                             "median_forward_ms": real_fwd, "median_forward_backward_ms": real_fb,
                             "trials": naive[0]["trials"], "repetitions": len(naive)},
                "message": message,
            })
    return findings


def rule_ftz_no_effect_zero_weights(doc: dict) -> list[Finding]:
    """zero_weights: does FTZ change the uniform net's forward time, and would the census predict it?"""
    if not ftz_values(doc):
        return []
    off, on = ftz_values(doc)
    a, b = cell_with(doc, init="uniform", device="cpu", ftz=on), cell_with(doc, init="uniform", device="cpu", ftz=off)
    cmp = compare_cells(doc, "forward", a, b)
    if cmp is None:
        return []
    acts = _activation_facts(doc, b)
    expected, reasons = _why_ftz_cannot_matter(_penalty(doc), _census_total(first_note(doc, b, "weights_census")),
                                               None, acts["subnormal"] if acts else None)
    because = " and ".join(reasons) or "no penalty profile or census was recorded"
    if is_different(cmp):
        message = f"ftz={on} changes the forward time ({_ratio_text(cmp)}); evidence: {because}"
    else:
        message = f"{no_effect_text('FTZ on this net', cmp)} because {because}"
    return [_finding("ftz_no_effect_zero_weights", "forward", a, b, cmp, f"ftz={on}", is_different(cmp) and bool(expected),
                     {"activations": acts, "ftz_readback": _ftz_reached(doc, a)}, message)]


def zero_weights_findings(doc: dict) -> list[Finding]:
    return _apply(doc, (rule_values_do_not_matter_on_cpu,
                        rule_ftz_no_effect_zero_weights, rule_seed_naive_timing))


def _apply(doc: dict, rules: Iterable[Callable[[dict], list[Finding]]]) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        findings += rule(doc)
    return findings
