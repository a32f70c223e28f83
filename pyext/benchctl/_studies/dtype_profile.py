"""What the workload's costly-dtype ops cost on this CPU in float32 instead: the dtype profile.

Each op that took most of the probe call's time in half, bfloat16 or float64 is replayed here, in
the explain process before any cell runs: its recorded first call (:class:`OpCall`: every input's
type, shape, strides and non-tensor value) on random tensors of that layout, made once, in its own dtype and
once with those tensors in float32 (integer and boolean tensors are zeros, valid indices, in
both), in interleaved repeats on one thread. The min of each side's repeats gives the ratio, and
the spread of the repeats (min against median) bounds it (:class:`DtypeTiming`). The op is called
through ``torch.ops.aten`` with the overload whose schema fits the recorded inputs; an op that
cannot be replayed (not an aten op, a list of tensors, too large) is kept with the reason.

The CPU flags that decide whether half precision has native arithmetic here (``avx512_fp16``,
``amx_fp16``, ``avx512_bf16``, ``amx_bf16``; ``f16c`` converts only) are read with it.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from .. import _procfs, clock
from .._causes.float64 import rule as _float64
from .._causes.half import rule as _half
from .._results.dtype_profile import DtypeProfile, DtypeTiming, OpCall, OpInput
from .._results.facts import Facts

__all__ = ["FLAGS", "BUDGET_S", "ROUNDS", "MAX_ELEMENTS", "DTYPE_CAUSES", "calls_to_profile", "cpu_flags", "replay",
           "measure"]

#: The CPU flags that bear on half-precision arithmetic, read from /proc/cpuinfo.
FLAGS = ("f16c", "avx512_fp16", "amx_fp16", "avx512_bf16", "amx_bf16")
#: Seconds the whole profile aims at (a slow op still gets :data:`MIN_ROUNDS`).
BUDGET_S = 1.5
#: Interleaved rounds per op (each times the dtype's call, then float32's) ...
ROUNDS = 7
#: ... and the fewest an op gets however slow it is (its spread needs more than one): an op of
#: more than ~0.3 s a call makes the profile longer than its budget.
MIN_ROUNDS = 2
#: The most calls one side of a round times (tiny ops: their min needs several).
MAX_CALLS = 50
#: A recorded tensor larger than this many elements is not replayed (memory).
MAX_ELEMENTS = 1 << 26

# The profiler's names of tensor dtypes -> torch's attribute names.
_TORCH_DTYPES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
                 "long int": "int64", "int": "int32", "short int": "int16", "signed char": "int8",
                 "unsigned char": "uint8", "bool": "bool"}


#: Both dtype causes (:mod:`benchctl._causes.half`, :mod:`benchctl._causes.float64`), for the pipeline's choice
#: of what to replay.
DTYPE_CAUSES = (_half.HalfPrecision(), _float64.Float64())


def calls_to_profile(facts: Facts) -> list[tuple[OpCall, str, float]]:
    """The calls the dtype profile replays: those of every dtype cause its precheck keeps."""
    return [c for cause in DTYPE_CAUSES if cause.precheck(facts, None) is None for c in cause.calls(facts)]


def cpu_flags(fields: dict[str, str] | None = None) -> tuple[str, ...]:
    """Those of :data:`FLAGS` this CPU has (``fields``: /proc/cpuinfo's, default read now)."""
    fields = _procfs.cpuinfo_fields() if fields is None else fields
    present = set(fields.get("flags", "").split())
    return tuple(f for f in FLAGS if f in present)


def _tensor(spec: OpInput, dtype: Any, cast: tuple[str, ...]):
    """A random tensor for ``spec``, laid out with its recorded strides (contiguous where none were
    recorded): floating values in [0.5, 1.5) (no NaN, no subnormal), integer and boolean ones zero;
    in float32 where its dtype is one of ``cast``, else in ``dtype``."""
    import torch

    if not all(isinstance(size, int) for size in spec.shape):
        raise ValueError("a list of tensors is not replayed")
    shape = list(spec.shape)
    strides = list(spec.strides) if spec.strides is not None and len(spec.strides) == len(shape) else None
    if strides is None:
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * max(shape[i + 1], 1)
    # The storage the strided view reaches (an expanded input, stride 0, reaches less than it shows).
    storage = 0 if 0 in shape else 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))
    if storage > MAX_ELEMENTS:
        raise ValueError(f"an input of {storage:,} elements is too large to replay")
    target = torch.float32 if spec.type in cast else dtype
    if target.is_floating_point:
        base = torch.rand(storage, dtype=torch.float32).add_(0.5).to(target)
    else:
        base = torch.zeros(storage, dtype=target)
    return base.as_strided(shape, strides)


def _fits(schema: Any, inputs: tuple[OpInput, ...]) -> bool:
    """Whether an overload's schema takes the recorded inputs: one argument each, a tensor where a tensor was."""
    if len(schema.arguments) != len(inputs):
        return False
    return all(("Tensor" in str(arg.type)) == (spec.type in _TORCH_DTYPES)
               for arg, spec in zip(schema.arguments, inputs))


def replay(call: OpCall, cast: tuple[str, ...] = ()) -> Callable[[], Any]:
    """A no-argument function that runs ``call`` once on fresh random tensors of its shapes, with the
    tensors of a dtype in ``cast`` in float32. Raises ValueError when it cannot be replayed."""
    import torch

    name = call.op.removeprefix("aten::")
    if not call.op.startswith("aten::") or not hasattr(torch.ops.aten, name):
        raise ValueError("not an aten op")
    packet = getattr(torch.ops.aten, name)
    overloads = [getattr(packet, o) for o in packet.overloads()]
    fitting = [o for o in overloads if _fits(o._schema, call.inputs)]
    if not fitting:
        raise ValueError("no overload of it takes the recorded inputs")
    failure = "no overload ran"
    for overload in fitting:
        args, kwargs = [], {}
        try:
            for arg, spec in zip(overload._schema.arguments, call.inputs):
                if spec.type in _TORCH_DTYPES:
                    value = _tensor(spec, getattr(torch, _TORCH_DTYPES[spec.type]), cast)
                elif spec.value is None and arg.has_default_value():
                    if arg.kwarg_only:
                        continue
                    value = arg.default_value
                else:
                    value = spec.value
                if arg.kwarg_only:
                    kwargs[arg.name] = value
                else:
                    args.append(value)
            run = _bound(overload, args, kwargs)
            run()  # the first call: it fails here if it fails, and primitives are made before timing
            return run
        except (RuntimeError, TypeError, ValueError, IndexError) as exc:
            failure = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    raise ValueError(failure)


def _bound(overload: Any, args: list, kwargs: dict) -> Callable[[], Any]:
    return lambda: overload(*args, **kwargs)


def _rounds(runs: dict[str, tuple[Callable[[], Any], float]], budget_s: float) -> dict[str, list[float]]:
    """Microseconds per call of each side (its run and the seconds of its first call), in interleaved
    rounds sized to ``budget_s``: :data:`ROUNDS` of them, or as many as fit and :data:`MIN_ROUNDS`."""
    per_side = budget_s / ROUNDS / len(runs)
    samples: dict[str, list[float]] = {side: [] for side in runs}
    started = time.perf_counter()
    for done in range(ROUNDS):
        if done >= MIN_ROUNDS and time.perf_counter() - started > budget_s:
            break
        for side, (run, first_s) in runs.items():
            calls = max(1, min(MAX_CALLS, int(per_side / max(first_s, 1e-7))))
            ticks = clock.time_calls(run, calls, warmup=0)
            samples[side] += [v / 1e3 for v in clock.to_ns(ticks).tolist()]
    return samples


def _first(call: OpCall, cast: tuple[str, ...]) -> tuple[Callable[[], Any], float]:
    """``call``'s replay and the seconds its first call took (an upper estimate: it makes the primitives)."""
    started = time.perf_counter()
    run = replay(call, cast)
    return run, time.perf_counter() - started


def _timing(call: OpCall, dtype: str, share: float, budget_s: float) -> DtypeTiming:
    try:
        runs = {"dtype": _first(call, ()), "float32": _first(call, (dtype,))}
    except ValueError as exc:
        return DtypeTiming(call.op, dtype, share, error=str(exc))
    samples = _rounds(runs, budget_s)
    mins = {side: min(v) for side, v in samples.items()}
    medians = {side: sorted(v)[len(v) // 2] for side, v in samples.items()}
    floor = 1e-3  # a microsecond's thousandth: a call timed at zero ticks divides by this, not by 0
    return DtypeTiming(call.op, dtype, share, dtype_us=mins["dtype"], float32_us=mins["float32"],
                       low=mins["dtype"] / max(medians["float32"], floor),
                       high=medians["dtype"] / max(mins["float32"], floor),
                       repeats=min(len(v) for v in samples.values()))


def measure(calls: Iterable[tuple[OpCall, str, float]], threads: int = 1) -> DtypeProfile:
    """The dtype profile of ``calls``: each ``(call, its costly dtype, its share of the op time)``
    timed against float32 on ``threads`` torch threads (restored afterwards)."""
    import torch

    calls = list(calls)
    started = time.perf_counter()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            timings = tuple(_timing(call, dtype, share, BUDGET_S / max(1, len(calls)))
                            for call, dtype, share in calls)
    finally:
        torch.set_num_threads(before)
    return DtypeProfile(timings=timings, cpu_flags=cpu_flags(), threads=threads,
                        seconds=time.perf_counter() - started)
