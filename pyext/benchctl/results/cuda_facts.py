"""What the probe worker learnt of a workload's GPU use (:mod:`benchctl.workloads.probe_cuda`), typed.

The GPU causes' pre-checks read it: a workload that never initialised CUDA, or ran where torch sees no
CUDA device, is out of all of them before any cell runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CudaFacts"]


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
