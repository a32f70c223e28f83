"""Cause: arithmetic on subnormal (denormal) numbers, which FTZ/DAZ removes.

FTZ/DAZ can change a timing only if this CPU penalises subnormal inputs of
the ops the code runs in a way FTZ/DAZ removes (the penalty profile,
:mod:`benchctl._studies.penalty`; a slowdown under what the profile calls a
penalty counts from :data:`SLOWED_RATIO`) *and* the values the code computes hold
subnormals (the census, :mod:`benchctl.denormals`). Either missing rules the
cause out before any cell runs; otherwise the probe is ``ftz=process``, and
the evidence is FTZ/DAZ read back on every thread.

The seed scripts judge with this same cause on their own matrices (their
``ftz`` axis), and seed 2's own rule quotes the penalty profile through the
helpers here.
"""

from __future__ import annotations

import math
from typing import Iterable

from ..._results.comparison import FLOOR
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from ..omp_wait.probe import waited
from .probe import PROBE as FLUSH_STATE
from .setting import FTZ

__all__ = ["ONE_THREAD_FLUSH", "FLOAT16_UNMEASURED", "OPERANDS", "FMA_OPS", "SLOWED_RATIO", "OP_CLASSES",
           "penalty_evidence", "slowed_ops",
           "penalised_ops", "ratios_text", "ops_of", "cpu_penalty_reason", "Denormals", "CAUSES"]

#: Why a flush the code set in one thread leaves the others computing on subnormals, and what reaches them all.
ONE_THREAD_FLUSH = ("a flush set in one thread (torch.set_flush_denormal(True) sets only the thread that calls it) "
                    "reaches none of torch's other threads, which compute on the subnormals at full cost; "
                    "benchctl.set_flush_denormal(True) sets every thread of the process")

#: Why float16 subnormals say nothing of the penalty profile's ratios (:class:`benchctl.denormals._Tally`).
FLOAT16_UNMEASURED = ("all of them float16 values, whose subnormals (below 6.1e-5) are normal numbers in float32, in "
                      "which the penalty profile times its ops: what they cost here is not measured")
#: The values one arithmetic operation touches: two operands and its result, each of which may take the slow path.
#: With at most a share ``s`` of subnormals in any tensor, at most ``OPERANDS * s`` of any op's operations do.
OPERANDS = 3

# The multiply-add ops a conv net's time is spent in: their subnormal penalty
# decides whether FTZ/DAZ can change a conv net's speed.
FMA_OPS = ("conv2d", "matmul", "addcmul")
#: The least slowdown on subnormal inputs, under the profile's penalty ratio, that keeps the cause in where FTZ/DAZ
#: takes it away: an AMD EPYC of family 23 divides subnormals 1.3x slower (a row the profile says has no penalty),
#: and FTZ/DAZ took 1.31x off a division-bound call there. The min of interleaved repeats of identical work stays
#: within ~1.1x of itself; a cause kept in by a ratio of noise costs one measured probe cell, one ruled out a miss.
SLOWED_RATIO = 1.2
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
    """Normalise a :func:`benchctl._studies.penalty.profile` result to
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


def slowed_ops(penalty: dict, ops: Iterable[str]) -> dict[str, float]:
    """{op: ratio} for the ops among ``ops`` that run subnormal inputs at least :data:`SLOWED_RATIO` slower and
    that FTZ/DAZ brings back under it, whether or not the profile calls the slowdown a penalty."""
    return {op: penalty[op]["subnormal_ratio"] for op in ops
            if op in penalty and (penalty[op].get("subnormal_ratio") or 0.0) >= SLOWED_RATIO
            and (penalty[op].get("subnormal_ratio_ftz") or math.inf) < SLOWED_RATIO}


def cpu_penalty_reason(penalty: dict, ops: tuple[str, ...] = FMA_OPS) -> tuple[bool, str]:
    """(does FTZ/DAZ remove a penalty of ``ops`` on this CPU?, the reason in words)."""
    # Only a penalty that FTZ/DAZ removes can make FTZ matter.
    penalised = penalised_ops(penalty, ops, "subnormal")
    removes = any(penalty[op].get("ftz_removes") for op in penalised)
    what = "subnormal multiply-adds" if ops == FMA_OPS else "subnormal inputs of the ops it runs"
    ratios = f"{ratios_text(penalty, ops, 'subnormal_ratio')} on subnormal inputs, penalty profile"
    if removes:
        return True, f"this CPU penalises {what} and FTZ/DAZ removes it ({ratios})"
    if slowed_ops(penalty, ops):
        return True, (f"this CPU runs {what} slower, though by less than the profile calls a penalty, and FTZ/DAZ "
                      f"removes it ({ratios})")
    if penalised:
        return False, f"this CPU's penalty on {what} is a slow path FTZ/DAZ does not remove ({ratios})"
    return False, f"this CPU does not penalise {what} ({ratios})"


class Denormals(Cause):
    name = "denormals"
    order = 10
    title = "denormals (subnormal arithmetic)"
    probe = probe_of(FTZ)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        """Out when the CPU has no penalty FTZ/DAZ removes for the ops it runs, its values hold no subnormals, or
        its timed calls mostly waited (no arithmetic to flush); every reason known is given."""
        reasons = []
        if penalty:
            removable, reason = cpu_penalty_reason(penalty, ops_of(facts.ops))
            if not removable:
                reasons.append(reason)
        if facts.subnormals() == 0:
            reasons.append(f"no subnormal values in what it computes (census: {facts.census_text()})")
        if (waits := waited(facts)) is not None:
            reasons.append(waits)
        return " and ".join(reasons) or None

    def _expectation(self, ctx: Context) -> tuple[bool | None, str]:
        """(do the penalty profile and the census say FTZ/DAZ can change the time? None: not known; the reasons)."""
        facts = ctx.facts or Facts()
        reasons, cpu = [], None
        if ctx.penalty:
            cpu, reason = cpu_penalty_reason(ctx.penalty, ops_of(facts.ops))
            reasons.append(reason)
        subnormals = facts.subnormals()
        values = None if subnormals is None else subnormals > 0
        if values is not None:
            reasons.append(f"the census counts {facts.census_text()}")
        if values and facts.subnormals_all_float16():
            values = None
            reasons[-1] += f", {FLOAT16_UNMEASURED}"
        elif values and ctx.penalty and (few := self._too_few(ctx.penalty, facts)) is not None:
            values = False
            reasons[-1] += few
        expected = False if False in (cpu, values) else (True if cpu and values else None)
        return expected, "; ".join(reasons)

    @staticmethod
    def _too_few(penalty: dict, facts: Facts) -> str | None:
        """Where the census's subnormals are too sparse for this CPU's penalty to matter, why in words (to follow the
        census's counts); None otherwise or where not known. The penalty profile times each op on inputs all
        subnormal; at most a share ``s`` of any one tensor makes at most :data:`OPERANDS` x ``s`` of an op's
        operations take the slow path, so at most that share of its time costs the profile's ratio: a bound below
        the no-effect floor cannot be told from no effect (60 subnormals among 802,816 float16 inputs of a conv)."""
        densest = facts.densest_subnormal_share()
        ops = ops_of(facts.ops)
        ratios = {**slowed_ops(penalty, ops),
                  **{op: penalty[op]["subnormal_ratio"] for op in ops
                     if op in penalty and penalty[op].get("ftz_removes") and penalty[op].get("subnormal_ratio")}}
        if densest is None or not ratios:
            return None
        op, ratio = max(ratios.items(), key=lambda item: item[1])
        most = min(1.0, OPERANDS * densest) * (ratio - 1.0)
        if most >= FLOOR:
            return None
        return (f", at most {densest:.3%} of any one tensor: with an op's {OPERANDS} values at that share, the "
                f"penalty profile's largest slowdown ({op} {ratio:.1f}×) adds at most {most:.2%} to its time, "
                f"under the {FLOOR:.0%} floor: too few subnormals to matter")

    @staticmethod
    def _own_flush(ctx: Context) -> str:
        """Where the unchanged workload flushes on some threads and not others: that state, and why it falls short."""
        state = ctx.facts.of(FLUSH_STATE) if ctx.facts is not None else None
        return f"; {state.text()}: {ONE_THREAD_FLUSH}" if state is not None and state.partial else ""

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        reach = ctx.readback(cell, FTZ.name) or {}
        readback = self.readback_suffix(ctx, cell, FTZ)
        expected, why = self._expectation(ctx)
        because = f": {why}" if why else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"penalty": ctx.penalty, "census": ctx.facts.census if ctx.facts else None,
                                "ftz_readback": reach, "expected": expected})
        if cmp.faster and expected is False:
            return self.finding(ctx, cmp, f"with FTZ/DAZ on every thread it is {cmp.effect_text()}{readback}, yet "
                                          f"no penalty FTZ/DAZ removes explains it{because}: the mechanism is not "
                                          "denormals", Status.UNCONFIRMED, **fields)
        if cmp.faster:
            reasons = f"; {why}" if why else ""
            return self.finding(ctx, cmp, f"with FTZ/DAZ on every thread it is {cmp.effect_text()}{readback}: "
                                          f"{mechanism(FTZ)}{reasons}{self._own_flush(ctx)}", Status.CAUSE, **fields)
        if expected and not cmp.beyond_band:
            because += "; both say it should matter: check the readback"
        return self.not_found(ctx, cmp, "FTZ/DAZ", suffix=readback + because, **fields)


CAUSES = (Denormals(),)
