"""What a workload does on the GPU, from a few more calls in the probe worker: the GPU causes' evidence (this
cause's and the async-clock, cuDNN-autotune and TF32 causes', which import it), typed as :class:`CudaFacts`.

:func:`cuda_census` first asks whether the process initialised CUDA at all (it never does so itself):
a workload that ran no CUDA work gets ``{"initialized": False, ...}`` at the cost of one flag read,
and every GPU cause is ruled out on it. Otherwise, after the profiled call, it runs the call

* once more between a ``torch.cuda.synchronize()`` and two CUDA events, reading the host clock as the
  call returns, without waiting: the host-clocked time of that call against its GPU time;
* :data:`SHAPE_CALLS` more times under the torch profiler with CUDA activity: the convolution shapes
  each call runs (a call whose shapes no earlier probe call ran is a new-shape call, each timed with
  CUDA events), and the share of GPU kernel time spent in float32 matmuls;

and reads the switches the code left: ``torch.backends.cudnn.benchmark`` and the float32 matmul
precision. The result is the ``cuda`` key of the probe note (:class:`CudaProbe` writes it), read as
:class:`CudaFacts`. The GPU causes' pre-checks read it: a workload that never initialised CUDA, or ran where
torch sees no CUDA device, is out of all of them before any cell runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..._probe import Probe, ProbedCall
from ..async_clock import control as cuda_state

__all__ = ["SHAPE_CALLS", "MATMUL_OPS", "CONV_OPS", "by_shapes", "cuda_census", "CudaFacts", "CudaProbe", "PROBE",
           "PROBES"]

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


@dataclass(frozen=True)
class CudaFacts:
    """``initialized``: the workload ran CUDA work; ``available``: torch saw a CUDA device. Where it ran
    CUDA work: ``cudnn_benchmark`` ("on"/"off") and ``matmul_precision`` as the code left them;
    ``host_ms``/``event_ms``: one call on the host clock read as it returned against its CUDA-event
    time; ``new_shape_ms``/``seen_shape_ms``: CUDA-event times of the probe calls after the first that
    ran a convolution shape no earlier one ran, and of those that ran only seen shapes; ``conv_calls``:
    profiled calls that ran a convolution; ``matmul_fp32_share``: the share of GPU kernel time in
    float32 matmuls; ``error``: why a probe call failed. None: not measured."""

    initialized: bool = False
    available: bool | None = None
    cudnn_benchmark: str | None = None
    matmul_precision: str | None = None
    host_ms: float | None = None
    event_ms: float | None = None
    new_shape_ms: tuple[float, ...] = ()
    seen_shape_ms: tuple[float, ...] = ()
    conv_calls: int | None = None
    matmul_fp32_share: float | None = None
    error: str | None = None

    @classmethod
    def from_json(cls, data: dict | None) -> "CudaFacts | None":
        if data is None:
            return None
        return cls(**{**data, "new_shape_ms": tuple(data.get("new_shape_ms", ())),
                      "seen_shape_ms": tuple(data.get("seen_shape_ms", ()))})

    def no_cuda_reason(self) -> str | None:
        """Why no GPU cause can apply (no device, or no CUDA work in the call); None: the workload used CUDA."""
        if self.initialized:
            return None
        if self.available is False:
            return "no CUDA device here (torch.cuda.is_available() is False): the workload ran on the CPU"
        return "the workload ran no CUDA work (CUDA was never initialised in the probe worker)"

    @property
    def host_over_gpu(self) -> float | None:
        """The host-clocked time of one call over its GPU time (under 1: the clock stopped before the GPU did)."""
        return self.host_ms / self.event_ms if self.host_ms is not None and self.event_ms else None

    def clock_text(self) -> str:
        """``"one call read 0.21 ms on the host clock against 48.3 ms on CUDA events"``."""
        return f"one call read {self.host_ms:.3g} ms on the host clock against {self.event_ms:.3g} ms on CUDA events"

    def shapes_text(self) -> str:
        """``"3 of 3 probe calls after the first ran convolution shapes none before them ran (median 180 ms) ..."``."""
        new, seen = self.new_shape_ms, self.seen_shape_ms
        text = (f"{len(new)} of {len(new) + len(seen)} probe calls after the first ran convolution shapes no "
                "earlier one ran")
        if new:
            text += f" (median {float(np.median(new)):.3g} ms on CUDA events, under the profiler)"
        if seen:
            text += f", against {float(np.median(seen)):.3g} ms for the calls whose shapes were seen before"
        return text


#: The probe note's key: written and read here only.
_CUDA = "cuda"


class CudaProbe(Probe):
    """:func:`cuda_census` of the workload's call (the switches alone for a workload that times itself)."""

    key = "cuda"
    fact = CudaFacts

    def record(self, probed: ProbedCall) -> dict:
        return {_CUDA: cuda_census(probed.call)}

    def read(self, note: dict) -> CudaFacts | None:
        return CudaFacts.from_json(note.get(_CUDA))

    def from_json(self, data: dict) -> CudaFacts | None:
        return CudaFacts.from_json(data)


PROBE = CudaProbe()
PROBES = (PROBE,)


def no_cuda_reason(facts) -> str | None:
    """Why no GPU cause can apply to the workload whose probe worker gathered ``facts``
    (:meth:`CudaFacts.no_cuda_reason`); None: it used CUDA."""
    cuda = facts.of(PROBE)
    if cuda is None:
        return "nothing is known of its GPU use (no probe of it ran): no GPU cause is probed"
    return cuda.no_cuda_reason()
