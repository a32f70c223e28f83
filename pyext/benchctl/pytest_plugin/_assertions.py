"""Statistical assertions: is A faster than B by a factor, is A not slower than B beyond a tolerance?

Both time A and B interleaved, round by round: each round holds a block of
calls of A and a block of B, in random order (seeded by the test), each
block a few calibrated units. A round's per-call median of A over that of B
is one observation of the ratio; iterations inside a round are correlated,
while rounds are close to independent, and pairing A with B inside a round
cancels drift (frequency, other load) that would otherwise land on one side
only. The ratio is the geometric mean of the rounds' ratios, with a t
interval over rounds (k-1 df). The claim is then:

* shown: the whole interval is on the claimed side of the threshold;
* not shown: the whole interval is on the other side (the test fails);
* inconclusive: the interval straddles the threshold (the test is skipped
  with the reason, or fails under ``--benchctl-strict``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import clock
from .._results import wording
from .._results.processes import cell_interval
from .._results.stats import Samples, detect_warmup
from ._timing import Target, calibrate, round_target_ns

__all__ = ["UNITS_PER_BLOCK", "MIN_ROUNDS", "MAX_ROUNDS", "SHOWN", "NOT_SHOWN", "INCONCLUSIVE", "Interleaved",
           "Judgement", "interleave", "judge_faster", "judge_not_slower", "callable_name", "check_threshold"]

#: Calibrated units per block: a block's median needs a few of them (fewer, down to one, when
#: the units are so long that the minimum rounds would not otherwise fit the budget).
UNITS_PER_BLOCK = 5
#: Rounds at least (a t interval on 9 df is usable) and at most (beyond, the interval hardly narrows
#: and the test takes longer).
MIN_ROUNDS = 10
MAX_ROUNDS = 300
SHOWN, NOT_SHOWN, INCONCLUSIVE = "shown", "not_shown", "inconclusive"


def callable_name(fn: Callable) -> str | None:
    """A short name for ``fn`` (its ``__name__``; ``partial(name)``); None for a lambda."""
    inner = getattr(fn, "func", None)  # functools.partial
    if inner is not None and not hasattr(fn, "__name__"):
        name = callable_name(inner)
        return f"partial({name})" if name else None
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return None if name == "<lambda>" else name


@dataclass
class Interleaved:
    """Per-round per-call medians (ns) of A and B, and the ratio A/B with its interval."""

    names: tuple[str, str]
    a_ns: np.ndarray
    b_ns: np.ndarray
    calls_per_unit: tuple[int, int]
    warmup: int
    ratio: float
    ci95: tuple[float, float]
    units_per_block: int = UNITS_PER_BLOCK
    flags: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        return int(self.a_ns.size - self.warmup)


def _names(fn_a: Callable, fn_b: Callable) -> tuple[str, str]:
    """How the sentences call A and B: their names, or fn_a / fn_b (lambdas, or the same name twice)."""
    a, b = callable_name(fn_a), callable_name(fn_b)
    if a is None or b is None or a == b:
        return (f"fn_a ({a})" if a else "fn_a"), (f"fn_b ({b})" if b else "fn_b")
    return a, b


def interleave(target_a: Target, target_b: Target, *, min_round_ns: float, max_time_ns: float,
               seed: int) -> Interleaved:
    """Time A and B in interleaved rounds within about ``max_time_ns``; the ratio of A over B."""
    names = _names(target_a.fn, target_b.fn)
    units, took, ks = [], [], []
    for target in (target_a, target_b):
        clock.time_calls(target.round(1), 1, 0)  # first call: lazy initialisation stays out of the rounds
        k, ns = calibrate(target, round_target_ns(min_round_ns, 0.0))
        units.append(target.repeatable(k))
        took.append(ns)
        ks.append(k)
    pair_ns = took[0] + took[1]
    units_per_block = int(min(UNITS_PER_BLOCK, max(1, max_time_ns // (MIN_ROUNDS * pair_ns))))
    rounds = int(min(MAX_ROUNDS, max(MIN_ROUNDS, max_time_ns // (units_per_block * pair_ns))))
    rng = np.random.default_rng(seed)
    medians = (np.empty(rounds), np.empty(rounds))
    for r in range(rounds):
        for side in rng.permutation(2):
            ticks = clock.time_calls(units[side], units_per_block, 0)
            medians[side][r] = float(np.median(clock.to_ns(ticks))) / ks[side]
    a_ns, b_ns = medians
    if np.any(a_ns <= 0) or np.any(b_ns <= 0):
        raise ValueError("a block measured 0 ns: the work is below the clock's resolution even in calibrated "
                         "units; time more work per call")
    # The later of the two warm-ups ends the warm-up of the pair; keep two rounds at least.
    warmup = min(max(detect_warmup(a_ns), detect_warmup(b_ns)), rounds - 2)
    # Rounds are the unit here, as processes are across processes: the same geometric mean and t interval.
    interval = cell_interval(a_ns[warmup:] / b_ns[warmup:])
    out = Interleaved(names, a_ns, b_ns, (ks[0], ks[1]), warmup, interval["value"], tuple(interval["ci"]),
                      units_per_block=units_per_block)
    for name, series in zip(names, (a_ns, b_ns)):
        summary = Samples(series, warmup=warmup).summary()
        out.flags += [f"{name}: {flag}" for flag in summary["flags"]]
        out.advice += [f"{name}: {text}" for text in summary["advice"]]
    return out


@dataclass
class Judgement:
    """An assertion's outcome (:data:`SHOWN`, :data:`NOT_SHOWN`, :data:`INCONCLUSIVE`), its sentence,
    and the record the results file keeps."""

    outcome: str
    message: str
    record: dict


def _measured(m: Interleaved) -> str:
    a, b = m.names
    how, interval = wording.slower_or_faster(m.ratio, m.ci95)
    return f"{a} is {how} than {b} {interval} over {m.rounds} interleaved rounds"


def _flags_text(m: Interleaved) -> str:
    if not m.flags:
        return ""
    return "\nflags: " + ", ".join(m.flags) + "".join(f"\n  - {a}" for a in m.advice)


def _record(kind: str, m: Interleaved, threshold: dict, outcome: str, message: str) -> dict:
    return {"assertion": kind, "a": m.names[0], "b": m.names[1], **threshold, "ratio": m.ratio,
            "ci95": list(m.ci95), "rounds": m.rounds, "warmup_rounds": m.warmup,
            "calls_per_unit": list(m.calls_per_unit), "units_per_block": m.units_per_block,
            "outcome": outcome, "flags": list(m.flags), "message": message}


def judge_faster(m: Interleaved, by: float) -> Judgement:
    """A is faster than B by at least ``by`` (time B / time A >= by)."""
    a, b = m.names
    speedup, lo, hi = 1.0 / m.ratio, 1.0 / m.ci95[1], 1.0 / m.ci95[0]
    asked = f"{wording.factor(by)}×"
    if lo >= by:
        outcome, text = SHOWN, f"{a} is at least {asked} faster than {b}: {_measured(m)}"
    elif hi < by:
        outcome = NOT_SHOWN
        text = f"{a} is not {asked} faster than {b}: {_measured(m)}; the whole interval falls short of {asked} faster"
    else:
        outcome = INCONCLUSIVE
        text = (f"cannot tell whether {a} is {asked} faster than {b}: the speed-up is {wording.factor(speedup)}× "
                f"with a 95% interval from {wording.factor(lo)}× to {wording.factor(hi)}×, across {asked}. "
                f"Give it more time (--benchctl-max-time), quiet the machine, or claim less than {asked}")
    message = text + _flags_text(m)
    return Judgement(outcome, message, _record("assert_faster", m, {"by": by}, outcome, message))


def judge_not_slower(m: Interleaved, tolerance: float) -> Judgement:
    """A is not slower than B by more than ``tolerance`` (time A / time B <= 1 + tolerance)."""
    a, b = m.names
    limit = 1.0 + tolerance
    lo, hi = m.ci95
    allowed = f"{tolerance:.0%}" if tolerance * 100 == round(tolerance * 100) else f"{tolerance:.1%}"
    if hi <= limit:
        outcome, text = SHOWN, f"{a} is not slower than {b} beyond {allowed}: {_measured(m)}"
    elif lo > limit:
        outcome = NOT_SHOWN
        text = (f"{a} is slower than {b} by more than the {allowed} tolerance: {_measured(m)}; the whole "
                f"interval of time({a})/time({b}) is above {wording.factor(limit)}")
    else:
        outcome = INCONCLUSIVE
        text = (f"cannot tell whether {a} stays within {allowed} of {b}: time({a})/time({b}) is "
                f"{wording.factor(m.ratio)} with a 95% interval from {wording.factor(lo)} to {wording.factor(hi)}, "
                f"across {wording.factor(limit)}. Give it more time (--benchctl-max-time), quiet the machine, "
                f"or allow a larger tolerance")
    message = text + _flags_text(m)
    return Judgement(outcome, message, _record("assert_not_slower", m, {"tolerance": tolerance}, outcome, message))


def check_threshold(name: str, value, minimum: float, inclusive: bool = True) -> float:
    """``value`` as a finite float >= (or >) ``minimum``; else ArgumentError naming it."""
    from .._validate import ArgumentError

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or (
            value < minimum if inclusive else value <= minimum):
        bound = ">=" if inclusive else ">"
        raise ArgumentError(f"{name} must be a finite number {bound} {minimum}, got {value!r}")
    return float(value)
