"""Cause: arithmetic on subnormal (denormal) numbers, which FTZ/DAZ removes.

FTZ/DAZ can change a timing only if this CPU penalises subnormal inputs of
the ops the code runs in a way FTZ/DAZ removes (the penalty profile,
:mod:`benchctl.studies.penalty`) *and* the values the code computes hold
subnormals (the census, :mod:`benchctl.denormals`). Either missing rules the
cause out before any cell runs; otherwise the probe is ``ftz=process``, and
the evidence is FTZ/DAZ read back on every thread.

The helpers here are shared with the seed rules (:mod:`..seed_rules`), which
judge the same cause on the seeds' own matrices.
"""

from __future__ import annotations

from typing import Iterable

from ...results import processes, queries
from ...results.verdict import Finding, ratio_text
from .base import CAUSE, Cause, Context, Facts, effect_text

__all__ = ["FMA_OPS", "OP_CLASSES", "penalty_evidence", "penalised_ops", "ratios_text", "ops_of",
           "cpu_penalty_reason", "why_ftz_cannot_matter", "Denormals"]

# The multiply-add ops a conv net's time is spent in: their subnormal penalty
# decides whether FTZ/DAZ can change a conv net's speed.
FMA_OPS = ("conv2d", "matmul", "addcmul")
#: torch profiler op names -> the penalty profile's op that behaves like them.
OP_CLASSES = {
    "aten::add": "add", "aten::add_": "add", "aten::sub": "add", "aten::sub_": "add",
    "aten::mul": "mul", "aten::mul_": "mul", "aten::addcmul": "addcmul", "aten::addcmul_": "addcmul",
    "aten::div": "div", "aten::div_": "div", "aten::sqrt": "sqrt", "aten::rsqrt": "rsqrt", "aten::exp": "exp",
    "aten::mm": "matmul", "aten::matmul": "matmul", "aten::addmm": "matmul", "aten::bmm": "matmul",
    "aten::linear": "matmul", "aten::conv1d": "conv2d", "aten::conv2d": "conv2d", "aten::conv3d": "conv2d",
    "aten::convolution": "conv2d", "aten::_convolution": "conv2d", "aten::mkldnn_convolution": "conv2d",
}


def ops_of(profiler_ops: Iterable[str]) -> tuple[str, ...]:
    """The penalty profile's ops that the profiled code runs (the multiply-adds when nothing is known)."""
    found = sorted({OP_CLASSES[name] for name in profiler_ops if name in OP_CLASSES})
    return tuple(found) or FMA_OPS


def penalty_evidence(profile: dict) -> dict:
    """Normalise a :func:`benchctl.studies.penalty.profile` result to
    {op: {"subnormal_ratio", "zero_ratio", "subnormal_ratio_ftz", "class",
    "penalised_subnormal", "penalised_zero", "ftz_removes", "threads"}}, the
    shape the rules read from ``doc["evidence"]["penalty"]``.

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


def penalised_ops(penalty: dict, ops: Iterable[str], kind: str) -> dict[str, float]:
    """{op: ratio} for the ops among ``ops`` penalised on ``kind`` inputs ('subnormal' | 'zero')."""
    return {op: penalty[op][f"{kind}_ratio"] for op in ops
            if op in penalty and penalty[op].get(f"penalised_{kind}")}


def ratios_text(penalty: dict, ops: Iterable[str], key: str) -> str:
    parts = [f"{op} {penalty[op][key]:.1f}×" for op in ops if op in penalty and penalty[op].get(key) is not None]
    return ", ".join(parts) or "not measured"


def cpu_penalty_reason(penalty: dict, ops: tuple[str, ...] = FMA_OPS) -> tuple[bool, str]:
    """(does FTZ/DAZ remove a penalty of ``ops`` on this CPU?, the reason in words)."""
    # Only a penalty that FTZ/DAZ removes can make FTZ matter.
    penalised = penalised_ops(penalty, ops, "subnormal")
    removes = any(penalty[op].get("ftz_removes") for op in penalised)
    what = "subnormal multiply-adds" if ops == FMA_OPS else "subnormal inputs of the ops it runs"
    ratios = f"{ratios_text(penalty, ops, 'subnormal_ratio')} on subnormal inputs, penalty profile"
    if removes:
        return True, f"this CPU penalises {what} and FTZ/DAZ removes it ({ratios})"
    if penalised:
        return False, f"this CPU's penalty on {what} is a slow path FTZ/DAZ does not remove ({ratios})"
    return False, f"this CPU does not penalise {what} ({ratios})"


def why_ftz_cannot_matter(penalty: dict | None, weights_sub: int | None, weights_n: int | None,
                          act_sub: int | None, ops: tuple[str, ...] = FMA_OPS) -> tuple[bool | None, list[str]]:
    """(FTZ expected to matter?, reasons). None when the evidence is missing."""
    reasons = []
    cpu_penalises = None
    if penalty:
        cpu_penalises, reason = cpu_penalty_reason(penalty, ops)
        reasons.append(reason)
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


def _census_text(census: dict) -> str:
    return ", ".join(f"{part} {v['subnormal']:,} subnormal of {v['values']:,}" for part, v in census.items()
                     if v["values"])


class Denormals(Cause):
    name = "denormals"
    title = "denormals (subnormal arithmetic)"
    probe = {"ftz": "process"}

    def probes(self, facts: Facts) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        ops = ops_of(facts.ops)
        if penalty:
            removable, reason = cpu_penalty_reason(penalty, ops)
            if not removable:
                return reason
        if facts.subnormals() == 0:
            return f"no subnormal values in what it computes (census: {_census_text(facts.census)})"
        return None

    def judge(self, ctx: Context, phase: str) -> Finding | None:
        cmp = ctx.compare(phase, self.probe)
        if cmp is None:
            return None
        cell = ctx.cell(self.probe)
        reach = queries.readback_facts(ctx.doc, cell, "ftz") or {}
        readback = (f"; FTZ/DAZ read back on {reach['flushed']}/{reach['threads']} threads"
                    if reach.get("threads") else "")
        evidence = {"comparison": ratio_text(cmp), "penalty": ctx.penalty, "census": ctx.facts.census,
                    "ftz_readback": reach}
        if cmp["outcome"] == processes.EFFECT and cmp["ratio"] < 1:
            _, reason = cpu_penalty_reason(ctx.penalty or {}, ops_of(ctx.facts.ops))
            census = f"; the census counts {_census_text(ctx.facts.census)}" if ctx.facts.census else ""
            text = f"with FTZ/DAZ on every thread it is {effect_text(cmp)}{readback}: {reason}{census}"
            return self.finding(phase, cmp, text, CAUSE, a=cell, b=ctx.baseline, setting="ftz=process",
                                evidence=evidence)
        return self.not_found(phase, cmp, "FTZ/DAZ", suffix=readback, a=cell, b=ctx.baseline, setting="ftz=process",
                              evidence=evidence)
