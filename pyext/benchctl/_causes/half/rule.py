"""Causes: a dtype costlier than float32 on this CPU: half / bfloat16 measured slower than float32 (here), and
float64 where float32 was meant (arrays from NumPy are float64: :mod:`benchctl._causes.float64.rule`, which
subclasses :class:`CostlyDtype` from here).

No setting can change the dtype the user's code computes in, so these causes run no cell: their
evidence is the probe call's op table (which ops ran in which dtype, and their share of its op
time) and the dtype profile (:mod:`benchctl._studies.dtype_profile`: each of those ops replayed on
this CPU in its dtype and in float32, before any cell runs). A cause is ruled out when its dtypes
hold under :data:`MEANINGFUL_SHARE` of the op time; it is named (``*``) only when ops measured
slower than float32 beyond the repeats' spread hold at least :data:`LARGE_SHARE` of it; open
(``?``) when the share or the profile is weaker; not the cause (``-``) when every replayed op runs
as fast in its dtype as in float32 here. The estimate of the fix scales each replayed op's time by
its measured ratio and leaves the rest of the call (other ops, Python) as it is.
"""

from __future__ import annotations

from ..._results.dtype_profile import DTYPE_WORDS, DtypeProfile, DtypeTiming, OpCall
from ..._results.facts import Facts, OpRow
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause

__all__ = ["MEANINGFUL_SHARE", "LARGE_SHARE", "MIN_OP_SHARE", "MAX_OPS", "CostlyDtype", "HalfPrecision", "HALF",
           "estimated_speedup", "CAUSES"]

#: Under this share of the probe call's op time, a dtype cannot explain the time: ruled out.
MEANINGFUL_SHARE = 0.10
#: The share of op time ops measured slower must hold for the cause to be named (``*``).
LARGE_SHARE = 0.50
#: An op under this share of the op time is not replayed (its ratio could not change the answer).
MIN_OP_SHARE = 0.02
#: The most ops a cause replays (those with the most self time first).
MAX_OPS = 3

#: Said of every finding of these causes: where its evidence comes from.
NO_PROBE = ("no probe can change the dtype your code computes in: this rests on the dtype profile (each op "
            "replayed on this CPU on {threads} thread(s) in its dtype and in float32, min of interleaved repeats, "
            "[the repeats' spread]) and the op table's time share")


def _in(dtypes: tuple[str, ...]):
    return lambda row: bool(set(row.dtypes) & set(dtypes))


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _percent(share: float) -> str:
    return f"{share:.0%}" if share >= 0.01 else "under 1%"


def estimated_speedup(facts: Facts, timings: tuple[DtypeTiming, ...]) -> float | None:
    """How much faster the whole call would be with the measured ops at their float32 time: their share of
    the op time divided by their ratio, the rest of the op time unchanged, and the call's time outside
    ops (its wall time less the ops called from Python) unchanged; None when nothing was measured."""
    measured = [t for t in timings if t.ratio]
    if not measured:
        return None
    op_time = 1.0 - sum(t.share for t in measured) + sum(t.share / t.ratio for t in measured)
    inside = facts.inside_ops_share()
    inside = 1.0 if inside is None else inside
    return 1.0 / ((1.0 - inside) + inside * op_time)


class CostlyDtype(Cause):
    """A dtype costlier than float32: ``dtypes`` (the profiler's names), ``fix`` (what to change)."""

    dtypes: tuple[str, ...] = ()
    fix = ""

    @property
    def words(self) -> str:
        return " / ".join(DTYPE_WORDS[d] for d in self.dtypes)

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def share(self, facts: Facts) -> float | None:
        """The share of the probe call's op time in ops with an input in one of this cause's dtypes."""
        return facts.op_share(_in(self.dtypes))

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        share = self.share(facts)
        if share is None:
            return f"no op time of its call is known ({facts.unprofiled_why()})"
        if share < MEANINGFUL_SHARE:
            found = "no op" if share == 0 else f"ops holding {_percent(share)} of its op time"
            return f"{found} in {self.words} (under {MEANINGFUL_SHARE:.0%})"
        return None

    def calls(self, facts: Facts) -> list[tuple[OpCall, str, float]]:
        """(the recorded call, its dtype, its share of op time) of the ops this cause replays: not the casts between
        dtypes (:attr:`OpCall.casts`), whose float32 replay would cast nothing."""
        rows = {(r.op, r.dtypes): r for r in facts.op_table}
        total = sum(r.self_us for r in facts.op_table)
        out = []
        for call in facts.op_calls:
            row: OpRow | None = rows.get((call.op, call.dtypes))
            dtype = next((d for d in call.dtypes if d in self.dtypes), None)
            if row is None or dtype is None or call.casts or total <= 0 or row.self_us / total < MIN_OP_SHARE:
                continue
            out.append((call, dtype, row.self_us / total))
        return sorted(out, key=lambda c: -c[2])[:MAX_OPS]

    def fix_for(self, facts: Facts) -> str:
        """What to change, as this workload's facts show it (default: :attr:`fix`)."""
        return self.fix

    def _timings(self, profile: DtypeProfile | None) -> tuple[DtypeTiming, ...]:
        return () if profile is None else profile.of(self.dtypes)

    def flags_text(self, profile: DtypeProfile) -> str:
        """What the CPU's flags say of this dtype ("" where they say nothing)."""
        return ""

    def slower(self, facts: Facts) -> list[DtypeTiming]:
        """The replayed ops of this cause's dtypes measured slower than in float32 beyond the repeats' spread."""
        return [t for t in self._timings(facts.dtype_profile) if t.ratio is not None and t.slower]

    def named(self, facts: Facts | None) -> bool:
        """Whether the dtype profile names this cause (``*``): ops measured slower than in float32 hold at least
        :data:`LARGE_SHARE` of the op time."""
        return facts is not None and sum(t.share for t in self.slower(facts)) >= LARGE_SHARE

    def judge_phase(self, ctx: Context) -> Finding | None:
        facts = ctx.facts
        if facts is None or self.share(facts) is None:
            return None
        share = self.share(facts)
        timings = self._timings(facts.dtype_profile)
        measured = [t for t in timings if t.ratio is not None]
        slower = self.slower(facts)
        slower_share = sum(t.share for t in slower)
        speedup = estimated_speedup(facts, tuple(measured))
        flags = self.flags_text(facts.dtype_profile) if facts.dtype_profile else ""
        evidence = {"share": share, "slower_share": slower_share, "estimated_speedup": speedup,
                    "timings": [t.text for t in timings],
                    "cpu_flags": list(facts.dtype_profile.cpu_flags) if facts.dtype_profile else None}
        head = f"{_percent(share)} of its op time is in {self.words}"
        ops = ", ".join(t.text for t in timings) or "no op recorded for replay"
        if not measured:
            why = "the dtype profile was not measured" if facts.dtype_profile is None else \
                f"none of its ops could be replayed on this CPU ({ops})"
            return self.finding(ctx, None, f"{head}, but {why}: whether float32 would be faster is not "
                                           f"measured{flags}", Status.UNCONFIRMED, evidence=evidence)
        basis = NO_PROBE.format(threads=facts.dtype_profile.threads)
        # The fix and what it would do, or (where float32 measured slower) only what float32 would cost.
        remedy = (f"{self.fix_for(facts)}: an estimated {speedup:.2f}× faster on the whole call" if speedup >= 1 else
                  f"in float32 the whole call would be an estimated {1 / speedup:.2f}× slower")
        if slower and self.named(facts):
            return self.finding(ctx, None, f"{_percent(slower_share)} of its op time is {self._ops(slower)}, "
                                           f"{self._slower_text(slower, ops)}{flags}: {remedy}; "
                                           f"{basis}", Status.CAUSE, evidence=evidence)
        if all(t.not_slower for t in measured):
            return self.finding(ctx, None, f"{head}, and it runs as fast as in float32 on this CPU (measured: "
                                           f"{ops}){flags}: not what makes it slow here; {basis}",
                                Status.NOT_CAUSE, evidence=evidence)
        why = (f"the ops measured slower hold only {_percent(slower_share)} of its op time" if slower else
               "the profile cannot tell it from float32 beyond its repeats' spread")
        return self.finding(ctx, None, f"{head} (measured: {ops}){flags}: {why}; {remedy}; "
                                       f"{basis}", Status.UNCONFIRMED, evidence=evidence)

    @staticmethod
    def _slower_text(slower: list[DtypeTiming], ops: str) -> str:
        """``"which runs 4.6× slower than in float32 on this CPU (measured, [4.1, 5.0] over its repeats)"``."""
        if len(slower) == 1:
            t = slower[0]
            return (f"which runs {t.ratio:.1f}× slower than in float32 on this CPU (measured, [{t.low:.1f}, "
                    f"{t.high:.1f}] over its repeats)")
        return f"which run slower than in float32 on this CPU (measured: {ops})"

    def _ops(self, timings: list[DtypeTiming]) -> str:
        """``"aten::addmm and aten::tanh in float64"``, the ops grouped by dtype."""
        by_dtype: dict[str, list[str]] = {}
        for t in timings:
            by_dtype.setdefault(DTYPE_WORDS[t.dtype], []).append(t.op)
        return ", ".join(f"{_and(ops)} in {word}" for word, ops in by_dtype.items())


class HalfPrecision(CostlyDtype):
    name = "half"
    order = 150
    # Measured, not read from the flags: with avx512_fp16, oneDNN's float16 convolution still ran 1.8x slower than
    # in float32 here, and the title called it "without native arithmetic".
    title = "half / bfloat16 slower than float32 on this CPU"
    dtypes = ("c10::Half", "c10::BFloat16")
    fix = "run it in float32 on this CPU (model.float() and float32 inputs)"

    def flags_text(self, profile: DtypeProfile) -> str:
        native = {"c10::Half": ("avx512_fp16", "amx_fp16"), "c10::BFloat16": ("avx512_bf16", "amx_bf16")}
        parts = []
        for dtype in self.dtypes:
            has = [f for f in native[dtype] if f in profile.cpu_flags]
            word = DTYPE_WORDS[dtype]
            parts.append(f"{word}: {', '.join(has)}" if has else f"no native {word} arithmetic "
                                                                 f"({' or '.join(native[dtype])})")
        # F16C converts between float16 and float32 and computes nothing: said only where nothing else does float16.
        half_native = any(f in profile.cpu_flags for f in native["c10::Half"])
        converts = "; f16c converts only" if "f16c" in profile.cpu_flags and not half_native else ""
        return f"; CPU flags: {'; '.join(parts)}{converts}"


HALF = HalfPrecision()
CAUSES = (HALF,)
