"""The device a vision workload runs on: checking it, waiting for it, describing it.

CUDA launches are asynchronous: a host clock stopped right after a launch
measures the launch. Workloads therefore wait for the device (:func:`synchronizer`)
before starting and before stopping each timed iteration, and on a GPU also
record per-call device times from CUDA events (:func:`cuda_event_ms`) and what
the GPU was (:func:`gpu_info`).
"""

from __future__ import annotations

from typing import Any, Callable

from .._validate import ArgumentError

__all__ = ["DEVICES", "check_device", "synchronizer", "cuda_event_ms", "gpu_info"]

DEVICES = ("cpu", "cuda")


def check_device(device: str) -> None:
    """Reject an unknown device name, or cuda where torch sees no GPU."""
    if device not in DEVICES:
        raise ArgumentError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if device == "cuda":
        import torch

        from ..cuda import CudaUnavailable

        if not torch.cuda.is_available():
            raise CudaUnavailable("device=cuda but torch sees no CUDA device (torch.cuda.is_available() is False)")


def synchronizer(device: str) -> Callable[[], None]:
    """A call that waits until the device has finished the work queued so far (a no-op on the CPU)."""
    if device != "cuda":
        return lambda: None
    import torch

    return torch.cuda.synchronize


def cuda_event_ms(fn: Callable[[], Any], n: int, warmup: int = 10) -> dict[str, Any]:
    """Per-call GPU milliseconds of ``fn`` from CUDA events (benchctl.cuda), or why not."""
    from .. import cuda

    ok, reason = cuda.available()
    if not ok:
        return {"available": False, "reason": reason}
    return {"available": True, "warmup": warmup, "ms": [float(v) for v in cuda.time_calls(fn, n, warmup=warmup)]}


def gpu_info() -> dict[str, Any]:
    """benchctl.cuda.device_info() (name, driver, clocks, temperature), or why not."""
    from .. import cuda

    try:
        return cuda.device_info()
    except cuda.CudaUnavailable as exc:
        return {"available": False, "reason": str(exc)}
