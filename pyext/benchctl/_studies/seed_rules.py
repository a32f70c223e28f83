"""The seeds' own rules: what only the two seed questions ask, as rules of the engine.

Everything the seeds share with ``benchctl explain`` is judged by the same rules: FTZ by the
denormal cause (the penalty profile and the census), the allocator by its cause (page faults),
the order gap and what closes it by the generic :class:`~benchctl._results.verdict.Gap` and
:class:`~benchctl._results.verdict.GapUnderSetting`. What is left is seed 2's:

* :class:`ZeroVsUniformOnCpu`: do zero and uniform conv weights cost the same on the CPU, and
  what did the penalty profile measure for conv2d and matmul on zeros and subnormals?
* :class:`SeedNaiveTiming`: how far the seed's own timing method (a cold host timer, and an
  ``output.backward`` without parentheses) is from the measurement.

:func:`resnet_order_rules` and :func:`zero_weights_rules` list each seed's rules, in the order
its answer gives them.
"""

from __future__ import annotations

from typing import Any

from .._results import queries
from .._results.comparison import Outcome
from .._results.findings import Finding, Status
from .._results.rules import Context, Rule
from .._results.verdict import Gap, GapUnderSetting, SettingEffect
from .._causes.allocator.rule import Allocator
from .._causes.denormals.rule import FMA_OPS, Denormals, penalised_ops, ratios_text
from .._cause import Cause
from .penalty import OP_NAMES

__all__ = ["PENALTY_OPS", "NAIVE_MISLEADS_RATIO", "ZeroVsUniformOnCpu", "SeedNaiveTiming", "resnet_order_rules",
           "zero_weights_rules"]

#: The ops each seed's penalty profile measures: a conv net's multiply-adds for
#: resnet_order; every op for zero_weights, whose answer names which ones
#: special values slow down.
PENALTY_OPS = {"resnet_order": FMA_OPS, "zero_weights": OP_NAMES}
# The seed's naive timing counts as misleading when it is off by more than this.
NAIVE_MISLEADS_RATIO = 1.2
ZW_PHASES = ("forward", "forward_backward")


def _devices(doc: dict) -> list[str]:
    return list(doc["matrix"].get("device") or [doc.get("args", {}).get("device", "cpu")])


def _cell_with(ctx: Context, **fixed: Any) -> dict:
    """The baseline cell with ``fixed`` values for those keys the matrix varies."""
    return ctx.cell(**{k: v for k, v in fixed.items() if k in ctx.matrix})


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


class ZeroVsUniformOnCpu(Rule):
    """Do zero and uniform weights cost the same on the CPU, and what did the penalty profile measure?"""

    name = "values_do_not_matter_on_cpu"

    def judge(self, ctx: Context) -> list[Finding]:
        if ctx.phase != ZW_PHASES[0] or "cpu" not in _devices(ctx.doc) or "init" not in ctx.matrix:
            return []
        a, b = _cell_with(ctx, device="cpu", init="zero"), _cell_with(ctx, device="cpu", init="uniform")
        cmps = {phase: ctx.comparisons.compare(phase, a, b) for phase in ZW_PHASES}
        if any(c is None for c in cmps.values()):
            return []
        outcomes = {c.outcome for c in cmps.values()}
        acts = {"zero": _activation_facts(ctx.doc, a), "uniform": _activation_facts(ctx.doc, b)}
        evidence = {"penalty": ctx.penalty, "activations": acts,
                    "weights_census": {"zero": queries.first_note(ctx.doc, a, "weights_census"),
                                       "uniform": queries.first_note(ctx.doc, b, "weights_census")}}
        timings = "; ".join(f"{phase} {c.median_a / 1e6:.2f} vs {c.median_b / 1e6:.2f} ms, zero/uniform "
                            f"{c.ratio_text()}" for phase, c in cmps.items())
        if Outcome.EFFECT in outcomes:
            status, message = Status.MEASURED, f"on cpu, zero and uniform weights differ in time ({timings})"
        elif outcomes == {Outcome.NO_EFFECT}:
            status = Status.NOT_CAUSE
            message = (f"on cpu, zero and uniform weights show no difference beyond "
                       f"{cmps['forward'].band_text()}, this run's resolution ({timings})")
        else:
            status = Status.UNRESOLVED
            message = f"on cpu, whether zero and uniform weights differ is open ({timings})"
        parts = _special_value_parts(ctx.penalty) if ctx.penalty else ["no penalty profile was measured to say why"]
        message += ": " + "; ".join(parts + _activation_parts(acts))
        return [Finding(self.name, ctx.phase, status, message, cmps["forward"], a=a, b=b, setting="init",
                        evidence=evidence)]


class SeedNaiveTiming(Rule):
    """How far the seed's own method (cold host timer, backward never called) is from the measurement."""

    name = "seed_naive_timing"

    def judge(self, ctx: Context) -> list[Finding]:
        if ctx.phase != ZW_PHASES[1]:
            return []
        inits = ctx.matrix.get("init", [ctx.doc.get("args", {}).get("init", "uniform")])
        found = (self._finding(ctx, device, init) for device in _devices(ctx.doc) for init in inits)
        return [f for f in found if f is not None]

    def _finding(self, ctx: Context, device: str, init: str) -> Finding | None:
        cell = _cell_with(ctx, device=device, init=init)
        naive = [r["notes"]["naive_seed_timing"] for r in queries.ok_runs(ctx.doc, cell)
                 if "naive_seed_timing" in r.get("notes", {})]
        fwd, fb = (queries.summary_entry(ctx.doc, phase, cell) for phase in ZW_PHASES)
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
        return Finding(self.name, ctx.phase, Status.CAUSE if misleads else Status.NOT_CAUSE, message, a=cell, b=cell,
                       setting="method", evidence={"naive_over_measured": ratio, "naive_forward_ms": naive_fwd,
                                                   "naive_seed_forward_backward_ms": naive_fb,
                                                   "median_forward_ms": real_fwd, "median_forward_backward_ms": real_fb,
                                                   "trials": naive[0]["trials"], "repetitions": len(naive)})


def _probed_by(causes: tuple[Cause, ...]) -> list[tuple[str, Any]]:
    """The (setting, value) pairs these causes judge, so that no other rule judges them again."""
    return [(k, v) for cause in causes for probe in cause.probes(None) for k, v in probe.items()]


def resnet_order_rules() -> tuple[Rule, ...]:
    causes = (Allocator(), Denormals())
    return (*causes, Gap(), GapUnderSetting(), SettingEffect(_probed_by(causes)))


def zero_weights_rules() -> tuple[Rule, ...]:
    causes = (Denormals(),)
    return (ZeroVsUniformOnCpu(), SeedNaiveTiming(), *causes, GapUnderSetting(), SettingEffect(_probed_by(causes)))
