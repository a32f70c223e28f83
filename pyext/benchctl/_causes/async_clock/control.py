"""The process-wide CUDA switches benchctl's GPU probes set and read back.

Four things a cell can change about how torch uses a GPU, each read without creating a CUDA
context (none of them costs anything in a process that never touches the GPU):

* whether the worker's clock waits for the GPU: :func:`synchronizing` makes every clock read of a
  timed iteration (:func:`wait`, called by :mod:`benchctl._run.recorder`) call
  ``torch.cuda.synchronize()`` first, once CUDA is initialised;
* cuDNN's autotuner: ``torch.backends.cudnn.benchmark`` (:func:`cudnn_benchmark`);
* float32 matmul precision: ``torch.set_float32_matmul_precision`` ("highest": full float32;
  "high"/"medium": TF32 or bfloat16 passes; ``torch.backends.cuda.matmul.allow_tf32`` sets the same);
* creating the CUDA context and library handles before the workload runs (:func:`init_eagerly`).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["PRECISIONS", "initialized", "available", "synchronizing", "wait", "sync_state", "cudnn_benchmark",
           "set_cudnn_benchmark", "matmul_precision", "set_matmul_precision", "init_eagerly"]

#: torch.set_float32_matmul_precision's values, full float32 first.
PRECISIONS = ("highest", "high", "medium")


def _torch():
    """torch if this process imported it (None: nothing here has touched CUDA)."""
    return sys.modules.get("torch")


def initialized() -> bool:
    """Whether this process has initialised CUDA (any CUDA tensor or call did); never initialises it."""
    torch = _torch()
    return bool(torch is not None and torch.cuda.is_initialized())


def available() -> bool:
    """Whether torch sees a CUDA device (counts devices; creates no context)."""
    import torch

    return bool(torch.cuda.is_available())


class _Sync:
    """The clock's wait for the GPU: a synchronize before each read once CUDA is initialised, counted."""

    def __init__(self) -> None:
        self.synced = 0
        self.skipped = 0

    def __call__(self) -> None:
        if initialized():
            _torch().cuda.synchronize()
            self.synced += 1
        else:
            self.skipped += 1  # no CUDA work can be pending: nothing to wait for


_sync: _Sync | None = None


def synchronizing(on: bool) -> dict[str, Any]:
    """Make every clock read of a timed iteration wait for the GPU (``on``), or not; the state after."""
    global _sync
    _sync = _Sync() if on else None
    return sync_state()


def wait() -> None:
    """Wait for the GPU if the clock is synchronising (called before each clock read of an iteration)."""
    if _sync is not None:
        _sync()


def sync_state() -> dict[str, Any]:
    """``{"on", "synced", "skipped"}``: whether clock reads wait for the GPU, and how many did (skipped: CUDA
    was not initialised yet, so nothing was pending)."""
    return {"on": _sync is not None, "synced": _sync.synced if _sync else 0, "skipped": _sync.skipped if _sync else 0}


def cudnn_benchmark() -> str:
    """``"on"`` or ``"off"``: torch.backends.cudnn.benchmark as it is now."""
    import torch

    return "on" if torch.backends.cudnn.benchmark else "off"


def set_cudnn_benchmark(value: str) -> str:
    import torch

    torch.backends.cudnn.benchmark = value == "on"
    return cudnn_benchmark()


def matmul_precision() -> str:
    """torch.get_float32_matmul_precision(): "highest" (full float32), "high" (TF32) or "medium"."""
    import torch

    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:
        # The code mixed the older allow_tf32 flag with the newer precision API, and torch refuses the global
        # read; the matmul backend's own setting still says whether float32 matmuls run as TF32.
        return "high" if torch.backends.cuda.matmul.fp32_precision == "tf32" else "highest"


def set_matmul_precision(value: str) -> str:
    import torch

    torch.set_float32_matmul_precision(value)
    return matmul_precision()


def init_eagerly() -> dict[str, Any]:
    """Create the CUDA context, the cuBLAS handle and the caching allocator's first block now, with one
    small matmul, and wait for it: what a workload's first CUDA call would otherwise pay inside its first
    timed iteration. ``{"initialized": bool, "reason": why not}``."""
    import torch

    if not torch.cuda.is_available():
        return {"initialized": False, "reason": "torch.cuda.is_available() is False: no CUDA device"}
    a = torch.ones(8, 8, device="cuda")
    (a @ a).sum().item()
    torch.cuda.synchronize()
    return {"initialized": initialized(), "reason": None}
