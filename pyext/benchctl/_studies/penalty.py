"""What subnormal numbers cost on this CPU with this torch build, op by op.

Each op runs on normal, zero and subnormal float32 inputs, with FTZ/DAZ off
and then on for every thread of the process (:func:`benchctl.fpenv.flush_denormals`),
on one thread and on all of them. Its slowdown on subnormals relative to
normal inputs classifies it:

* ``no penalty``: subnormals cost less than ``PENALTY_RATIO`` times normals;
* ``hardware penalty that FTZ/DAZ removes``: they cost more, and with FTZ/DAZ
  on the op is back to the speed of normal inputs, within ``REMOVED_RATIO``
  (the CPU's microcode assist for subnormal operands or results, which
  FTZ/DAZ switches off);
* ``slow path FTZ/DAZ does not remove``: a slowdown stays with FTZ/DAZ on,
  even a reduced one (``torch.exp`` here: 2.2x off, 1.5-1.9x on).
  The library branches on the values itself (vector-math special-value
  handling), often slow on zeros too.

Inputs are made from bit patterns (an int32 tensor viewed as float32): making
subnormals by converting small doubles is itself flushed when FTZ is on.
Outputs are preallocated, so that page faults of fresh output buffers, which
are the same for every input, do not dilute the ratios.
"""

from __future__ import annotations

import platform
import statistics
from dataclasses import dataclass
from typing import Callable

from .. import _procfs, _validate, clock, fpenv
from ..denormals import count_subnormal

__all__ = ["PENALTY_RATIO", "REMOVED_RATIO", "NO_PENALTY", "REMOVED", "NOT_REMOVED", "INPUTS", "OP_NAMES",
           "DEFAULT_NUMEL", "MATMUL_SIDE", "CONV_SHAPE", "make_input", "classify", "profile", "format_table"]

# A slowdown of 1.5x or more on subnormals counts as a penalty. The penalties
# seen on the development machine are 1.9x (rsqrt) and more; the min of
# interleaved repeats of identical work on the same data stays within ~1.1x of
# itself even with the 2 cores shared, so 1.5 is clear of both.
PENALTY_RATIO = 1.5
# "Removed" means back within the noise of identical work (~1.1x), not merely
# under PENALTY_RATIO: a partial relief is still a slow path.
REMOVED_RATIO = 1.25

NO_PENALTY = "no penalty"
REMOVED = "hardware penalty that FTZ/DAZ removes"
NOT_REMOVED = "slow path FTZ/DAZ does not remove"

INPUTS = ("normal", "zero", "subnormal")
_NORMAL_BITS = 0x3FC00000     # 1.5, then the next 4095 floats above it
_SUBNORMAL_BITS = 0x00100000  # 2**-129, then the next 4095 subnormals
_PATTERN_PERIOD = 4096

DEFAULT_NUMEL = 1 << 20
MATMUL_SIDE = 256
CONV_SHAPE = (1, 16, 64, 64)  # N, C, H, W; 16 output channels, 3x3 kernel


def _pattern(numel: int, base_bits: int):
    import torch

    return (torch.arange(numel, dtype=torch.int32) % _PATTERN_PERIOD + base_bits).view(torch.float32)


def make_input(kind: str, numel: int):
    """A float32 tensor of ``numel`` normal, zero or subnormal values, built from bits."""
    import torch

    if kind == "normal":
        return _pattern(numel, _NORMAL_BITS)
    if kind == "zero":
        return torch.zeros(numel, dtype=torch.float32)
    if kind == "subnormal":
        return _pattern(numel, _SUBNORMAL_BITS)
    raise ValueError(f"input kind must be one of {', '.join(INPUTS)}; got {kind!r}")


@dataclass(frozen=True)
class _Op:
    """One measured op: ``build(x)`` returns the call to time, on input ``x`` of ``input_numel`` values."""

    name: str
    what: str
    input_numel: Callable[[int], int]
    output_elements: Callable[[int], int]
    build: Callable[[object, int], Callable[[], object]]


def _elementwise(name: str, what: str, fn) -> _Op:
    def build(x, numel):
        import torch

        out = torch.empty_like(x)
        return lambda: fn(x, out)

    return _Op(name, what, lambda n: n, lambda n: n, build)


def _matmul_build(x, numel):
    import torch

    a = x.reshape(MATMUL_SIDE, MATMUL_SIDE)
    b = make_input("normal", MATMUL_SIDE * MATMUL_SIDE).reshape(MATMUL_SIDE, MATMUL_SIDE)
    out = torch.empty(MATMUL_SIDE, MATMUL_SIDE)
    return lambda: torch.matmul(a, b, out=out)


def _conv_build(x, numel):
    import torch.nn.functional as F

    inp = x.reshape(CONV_SHAPE)
    channels = CONV_SHAPE[1]
    weight = make_input("normal", channels * channels * 9).reshape(channels, channels, 3, 3) * 0.01
    return lambda: F.conv2d(inp, weight, padding=1)


def _ops() -> list[_Op]:
    import torch

    half = {}

    def addcmul(x, out):
        # x + x * 0.5 in one fused call; the 0.5 tensor is made once per size.
        h = half.get(x.numel())
        if h is None:
            h = half[x.numel()] = torch.full_like(x, 0.5)
        return torch.addcmul(x, x, h, out=out)

    side2 = MATMUL_SIDE * MATMUL_SIDE
    conv_numel = CONV_SHAPE[0] * CONV_SHAPE[1] * CONV_SHAPE[2] * CONV_SHAPE[3]
    return [
        _elementwise("add", "x + x", lambda x, out: torch.add(x, x, out=out)),
        _elementwise("mul", "x * 0.5", lambda x, out: torch.mul(x, 0.5, out=out)),
        _elementwise("addcmul", "addcmul(x, x, 0.5): x + x*0.5 fused", addcmul),
        _elementwise("div", "x / 3", lambda x, out: torch.div(x, 3.0, out=out)),
        _elementwise("sqrt", "sqrt(x)", lambda x, out: torch.sqrt(x, out=out)),
        _elementwise("rsqrt", "rsqrt(x)", lambda x, out: torch.rsqrt(x, out=out)),
        _elementwise("exp", "exp(x)", lambda x, out: torch.exp(x, out=out)),
        _Op("matmul", f"A @ B, {MATMUL_SIDE}x{MATMUL_SIDE}, A of the input kind, B normal",
           lambda n: side2, lambda n: side2, _matmul_build),
        _Op("conv2d", f"conv2d 3x3, input {CONV_SHAPE} of the input kind, weights normal",
           lambda n: conv_numel, lambda n: conv_numel, _conv_build),
    ]


OP_NAMES = ("add", "mul", "addcmul", "div", "sqrt", "rsqrt", "exp", "matmul", "conv2d")


def classify(subnormal_ratio_off: float, subnormal_ratio_on: float) -> str:
    """Class of an op from its subnormal/normal time ratios with FTZ/DAZ off and on."""
    if subnormal_ratio_off < PENALTY_RATIO:
        return NO_PENALTY
    if subnormal_ratio_on < REMOVED_RATIO:
        return REMOVED
    return NOT_REMOVED


# Median over min of a cell's repeats above which the machine was too busy
# for the ratios to be trusted (quiet runs stay well under 1.3).
UNSTABLE_SPREAD = 2.0


def _note(zero_ratio_off: float, subnormal_ratio_off: float, subnormal_ratio_on: float, spread: float) -> str:
    notes = []
    if spread > UNSTABLE_SPREAD:
        notes.append(f"unstable timings (a median {spread:.1f}x its min): busy machine, rerun on a quiet one")
    if zero_ratio_off >= PENALTY_RATIO:
        notes.append(f"zeros are {zero_ratio_off:.1f}x slower too: the library special-cases values")
    if min(zero_ratio_off, subnormal_ratio_off) <= 1 / PENALTY_RATIO:
        notes.append("normal inputs measured slower than zeros or subnormals: noise, rerun on a quiet machine")
    if subnormal_ratio_off < PENALTY_RATIO <= subnormal_ratio_on:
        notes.append("slower only with FTZ/DAZ on: noise, rerun on a quiet machine")
    return "; ".join(notes)


def _time_kinds(calls: dict, target_s: float, rounds: int, min_reps: int, max_reps: int) -> dict:
    """Time each input kind's call in interleaved rounds; return ns samples per kind.

    Interleaving spreads any slow period of a shared machine over all kinds
    instead of landing on one of them. The repeat count of each round follows
    the mean call time seen so far (the real cost, long stalls included), so
    that a busy machine, where a parallel region waits for a descheduled
    worker, stretches the run only a little.
    """
    def reps_for(per_call_ns: float) -> int:
        return max(min_reps, min(max_reps, int(target_s * 1e9 / rounds / max(per_call_ns, 1.0))))

    samples: dict = {kind: [] for kind in calls}
    # First estimate: the fastest of a few calls, after one warm-up call.
    estimate = {kind: clock.to_ns(int(clock.time_calls(call, 3, warmup=1).min())) for kind, call in calls.items()}
    for _ in range(rounds):
        for kind, call in calls.items():
            ns = clock.to_ns(clock.time_calls(call, reps_for(estimate[kind]), warmup=0))
            samples[kind].extend(ns.tolist())
            estimate[kind] = statistics.fmean(samples[kind])
    return samples


@dataclass(frozen=True)
class _Plan:
    """A validated request: which ops, at which sizes, on which thread counts, timed how long."""

    ops: list
    numel: int
    thread_counts: list[int]
    target_s: float
    rounds: int
    min_reps: int
    max_reps: int


def _plan(threads, numel, ops, target_s, rounds, min_reps, max_reps, torch_threads: int) -> _Plan:
    """Check every argument before anything is measured (nothing half-done on bad input)."""
    numel = _validate.count("numel", numel, 1)
    rounds = _validate.count("rounds", rounds, 1)
    min_reps = _validate.count("min_reps", min_reps, 1)
    max_reps = _validate.count("max_reps", max_reps, min_reps)
    target_s = _validate.seconds("target_s", target_s)
    all_ops = {op.name: op for op in _ops()}
    names = list(OP_NAMES if ops is None else ops)
    unknown = [n for n in names if n not in all_ops]
    if unknown or not names:
        raise _validate.ArgumentError(f"unknown ops {unknown}; choose from {', '.join(OP_NAMES)}")
    threads = _validate.count("threads", torch_threads if threads is None else threads, 1)
    return _Plan([all_ops[n] for n in names], numel, sorted({1, threads}), target_s, rounds, min_reps, max_reps)


def _inputs(plan: _Plan) -> dict[int, dict]:
    """Normal, zero and subnormal inputs for each input size the ops need, checked by census."""
    inputs: dict[int, dict] = {}
    for op in plan.ops:
        size = op.input_numel(plan.numel)
        if size not in inputs:
            inputs[size] = {kind: make_input(kind, size) for kind in INPUTS}
            # A real check, not an assert: python -O must not skip it, as
            # every ratio would silently compare normal with normal.
            found = count_subnormal(inputs[size]["subnormal"])
            if found != size:
                raise RuntimeError(f"the subnormal input holds {found} subnormals out of {size} values")
    return inputs


def _measure(plan: _Plan, inputs: dict, n_threads: int, measurements: list, flushed: list) -> dict:
    """Time every op on every input kind, FTZ/DAZ off then on, at ``n_threads``.

    Appends the raw figures to ``measurements`` and the FTZ readback to
    ``flushed``; returns ``{(op, ftz, kind): (min, median/min)}`` of ns per element.
    """
    per_cell: dict = {}
    for ftz in (False, True):
        with fpenv.flush_denormals(ftz, "process") as census:
            reached = [r for r in census if r["reached"]]
            flushed.append({
                "threads": n_threads, "ftz_daz": ftz, "tasks": len(census),
                "tasks_with_requested_state": sum(1 for r in reached if r["ftz"] == ftz),
            })
            for op in plan.ops:
                size = op.input_numel(plan.numel)
                calls = {kind: op.build(inputs[size][kind], size) for kind in INPUTS}
                samples = _time_kinds(calls, plan.target_s, plan.rounds, plan.min_reps, plan.max_reps)
                for kind in INPUTS:
                    per_el = [v / op.output_elements(plan.numel) for v in samples[kind]]
                    best, median = min(per_el), statistics.median(per_el)
                    per_cell[(op.name, ftz, kind)] = (best, median / best)
                    measurements.append({
                        "op": op.name, "threads": n_threads, "ftz_daz": ftz, "input": kind,
                        "ns_per_element_min": best, "ns_per_element_median": median, "repeats": len(per_el),
                    })
    return per_cell


def _row(op: _Op, n_threads: int, per_cell: dict) -> dict:
    """One op's ratios at one thread count, its class and notes."""
    def ratio(ftz, kind):
        return per_cell[(op.name, ftz, kind)][0] / per_cell[(op.name, ftz, "normal")][0]

    sub_off, sub_on = ratio(False, "subnormal"), ratio(True, "subnormal")
    zero_off, zero_on = ratio(False, "zero"), ratio(True, "zero")
    worst_spread = max(spread for key, (_, spread) in per_cell.items() if key[0] == op.name)
    return {
        "op": op.name, "what": op.what, "threads": n_threads,
        "normal_ns_per_element": per_cell[(op.name, False, "normal")][0],
        "zero_ratio_off": zero_off, "subnormal_ratio_off": sub_off,
        "zero_ratio_on": zero_on, "subnormal_ratio_on": sub_on,
        "classification": classify(sub_off, sub_on),
        "spread": worst_spread,
        "note": _note(zero_off, sub_off, sub_on, worst_spread),
    }


def profile(
    threads: int | None = None,
    numel: int = DEFAULT_NUMEL,
    ops: list[str] | tuple[str, ...] | None = None,
    target_s: float = 0.025,
    rounds: int = 5,
    min_reps: int = 3,
    max_reps: int = 20,
) -> dict:
    """Measure the penalty profile; return a JSON-serialisable dict.

    ``threads``: the "all threads" count (default: torch's current count);
    single-thread is always measured too. ``numel``: elements of the
    elementwise ops (matmul and conv2d have fixed sizes: ``MATMUL_SIDE``,
    ``CONV_SHAPE``).
    ``target_s``: time spent per (op, input, FTZ, threads) cell, split in
    ``rounds`` interleaved rounds. torch's thread count and every thread's
    FTZ/DAZ state are restored afterwards.
    """
    import torch

    ok, reason = fpenv.supported()
    if not ok:
        raise RuntimeError(f"cannot measure with FTZ/DAZ on: {reason}")
    start_threads = torch.get_num_threads()
    plan = _plan(threads, numel, ops, target_s, rounds, min_reps, max_reps, start_threads)
    inputs = _inputs(plan)
    measurements, rows, flushed = [], [], []
    try:
        for n_threads in plan.thread_counts:
            torch.set_num_threads(n_threads)
            per_cell = _measure(plan, inputs, n_threads, measurements, flushed)
            rows += [_row(op, n_threads, per_cell) for op in plan.ops]
    finally:
        torch.set_num_threads(start_threads)

    return {
        "schema": "benchctl.penalty",
        "version": 1,
        "cpu": _procfs.cpu_model() or platform.machine(),
        "machine": platform.machine(),
        "torch": torch.__version__,
        "fp_control": reason,
        "dtype": "float32",
        "numel": plan.numel,
        "matmul_side": MATMUL_SIDE,
        "conv_input_shape": list(CONV_SHAPE),
        "threads": plan.thread_counts,
        "flush_scope": "process",
        "penalty_ratio": PENALTY_RATIO,
        "removed_ratio": REMOVED_RATIO,
        "method": (
            "benchctl.clock.time_calls; per cell the min (and median) of repeats in "
            f"{plan.rounds} rounds interleaved over the input kinds; ratios use the min; "
            "outputs preallocated where the op allows"
        ),
        "flush_readback": flushed,
        "measurements": measurements,
        "ops": rows,
    }


def format_table(result: dict) -> str:
    """Human-readable table of :func:`profile`'s result."""
    lines = [
        f"denormal penalty profile: {result['cpu']} ({result['machine']}), torch {result['torch']}, "
        f"float32, {result['numel']} elements",
        f"ratios = time on zero/subnormal inputs / time on normal inputs (min of repeats); "
        f"penalty when >= {result['penalty_ratio']}, removed by FTZ/DAZ when back under {result['removed_ratio']}",
        "",
        f"{'op':8} {'thr':>3} {'normal ns/el':>12} | {'off: zero':>9} {'subn':>7} | "
        f"{'on: zero':>8} {'subn':>7} | class",
    ]
    for r in result["ops"]:
        lines.append(
            f"{r['op']:8} {r['threads']:>3} {r['normal_ns_per_element']:>12.4f} | "
            f"{r['zero_ratio_off']:>8.2f}x {r['subnormal_ratio_off']:>6.2f}x | "
            f"{r['zero_ratio_on']:>7.2f}x {r['subnormal_ratio_on']:>6.2f}x | {r['classification']}"
            + (f"  ({r['note']})" if r["note"] else "")
        )
    for f in result["flush_readback"]:
        if f["ftz_daz"]:
            lines.append(
                f"FTZ/DAZ on, {f['threads']} thread(s): {f['tasks_with_requested_state']}/{f['tasks']} "
                f"threads of the process read back flushed"
            )
    return "\n".join(lines)
