"""What a workload does on the GPU, from a few more calls in the probe worker: the GPU causes' evidence.

:func:`cuda_census` first asks whether the process initialised CUDA at all (it never does so itself):
a workload that ran no CUDA work gets ``{"initialized": False, ...}`` at the cost of one flag read,
and every GPU cause is ruled out on it. Otherwise, after the profiled call, it runs the call

* once more between a ``torch.cuda.synchronize()`` and two CUDA events, reading the host clock as the
  call returns, without waiting: the host-clocked time of that call against its GPU time;
* :data:`SHAPE_CALLS` more times under the torch profiler with CUDA activity: the convolution shapes
  each call runs (a call whose shapes no earlier probe call ran is a new-shape call, each timed with
  CUDA events), and the share of GPU kernel time spent in float32 matmuls;

and reads the switches the code left: ``torch.backends.cudnn.benchmark`` and the float32 matmul
precision. The result is the ``cuda`` key of the probe note, read as
:class:`benchctl.results.cuda_facts.CudaFacts`.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from .. import cuda_state

__all__ = ["SHAPE_CALLS", "MATMUL_OPS", "CONV_OPS", "by_shapes", "cuda_census"]

#: Profiled calls after the clock check: the first is the reference, each later one is new-shape or seen-shape.
SHAPE_CALLS = 4
#: The profiler's matmul ops (TF32 applies to their float32 kernels).
MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::matmul",
                        "aten::linear", "aten::_addmm_activation", "aten::addmv", "aten::mv"})
#: The op every convolution goes through (its first two inputs: the input and the weight shapes).
CONV_OPS = frozenset({"aten::convolution"})
_FLOAT32 = "float"  # the profiler's name of torch.float32 among input dtypes


def _events_ms(call: Callable[[], Any]) -> tuple[float, float]:
    """(host-clock ms as the call returns, without waiting; CUDA-event ms of the same call)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    began = time.perf_counter()
    call()
    host_ms = (time.perf_counter() - began) * 1e3
    end.record()
    torch.cuda.synchronize()
    return host_ms, float(start.elapsed_time(end))


def _device_us(event: Any) -> float:
    return float(getattr(event, "self_device_time_total", None) or getattr(event, "self_cuda_time_total", 0.0) or 0.0)


def _profiled(call: Callable[[], Any]) -> tuple[float, set, float, float]:
    """One call under the profiler: (its CUDA-event ms, its convolution shapes, GPU µs in float32 matmuls,
    GPU µs in all ops)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        _, event_ms = _events_ms(call)
    shapes, matmul_us, total_us = set(), 0.0, 0.0
    for event in prof.events():
        device_us = _device_us(event)
        total_us += device_us
        if event.name in MATMUL_OPS and _FLOAT32 in (getattr(event, "input_dtypes", None) or []):
            matmul_us += device_us
        if event.name in CONV_OPS:
            shapes.add(tuple(tuple(s) for s in (event.input_shapes or [])[:2]))
    return event_ms, shapes, matmul_us, total_us


def by_shapes(calls: list[tuple[float, set]]) -> tuple[list[float], list[float]]:
    """(times of the calls after the first that ran a convolution shape no earlier call ran, times of those
    that ran only shapes seen before), from each call's (ms, convolution shapes); calls without a
    convolution are in neither."""
    seen: set = set()
    new_ms, seen_ms = [], []
    for i, (ms, shapes) in enumerate(calls):
        if i and shapes:
            (new_ms if shapes - seen else seen_ms).append(ms)
        seen |= shapes
    return new_ms, seen_ms


def cuda_census(call: Callable[[], Any] | None) -> dict[str, Any]:
    """``{"initialized", "available"}`` alone when the process ran no CUDA work; otherwise also
    ``cudnn_benchmark``, ``matmul_precision``, ``host_ms``/``event_ms`` (one call), ``new_shape_ms``/
    ``seen_shape_ms`` (the calls after the first reference call, by whether they ran convolution shapes no
    earlier call ran), ``conv_calls`` (profiled calls that ran a convolution), ``matmul_fp32_share`` (of GPU
    kernel time; None when the profiler saw none), or ``error`` when a call failed under the probe. With no
    ``call`` (a workload that times itself cannot be called again) only the switches are read."""
    if not cuda_state.initialized():
        return {"initialized": False, "available": cuda_state.available()}
    out: dict[str, Any] = {"initialized": True, "available": True, "cudnn_benchmark": cuda_state.cudnn_benchmark(),
                           "matmul_precision": cuda_state.matmul_precision()}
    if call is None:
        return out
    try:
        out["host_ms"], out["event_ms"] = _events_ms(call)
        profiled = [_profiled(call) for _ in range(SHAPE_CALLS)]
    except Exception as e:  # the call ran fine unprobed; under the probe it did not: say so, the run goes on
        out["error"] = f"{type(e).__name__}: {e}"[:300]
        return out
    new_ms, seen_ms = by_shapes([(ms, shapes) for ms, shapes, _, _ in profiled])
    matmul_us, total_us = sum(p[2] for p in profiled), sum(p[3] for p in profiled)
    out.update(new_shape_ms=new_ms, seen_shape_ms=seen_ms, conv_calls=sum(bool(p[1]) for p in profiled),
               matmul_fp32_share=matmul_us / total_us if total_us > 0 else None)
    return out
