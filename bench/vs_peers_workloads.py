"""The workloads of ``bench/vs_peers.py``: one per A/B, and each A/B's two arms for the tools that set them in
their own process.

benchctl runs the classes as user workloads (``bench/vs_peers_workloads.py:SubnormalMul``, a class with
``setup()`` and ``run(state)``: phase ``run``) and applies each arm through its own settings (``AB[name].matrix``);
torch.utils.benchmark and pyperf call :func:`prepare`, which applies an arm in the calling process
(``torch.set_num_threads``, ``torch.set_flush_denormal``, ``torch.inference_mode()`` around each call) and
returns the same call benchctl times.

Only torch is imported here, and nothing runs at import: the same file is a benchctl target, a pyperf worker's
import and a torch.utils.benchmark global.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

#: A float32 subnormal (the smallest normal float32 is about 1.18e-38).
SUBNORMAL = 1e-39


class SubnormalMul:
    """65,536 float32 subnormal inputs multiplied by 0.5 into a preallocated output (subnormal too): the
    penalty FTZ/DAZ removes."""

    def setup(self) -> tuple:
        x = torch.full((1 << 16,), SUBNORMAL, dtype=torch.float32)
        return x, torch.empty_like(x)

    def run(self, state: tuple) -> torch.Tensor:
        x, out = state
        return torch.mul(x, 0.5, out=out)


class Matmul:
    """A 384x384 float32 matrix product into a preallocated output: what a second thread can halve."""

    def setup(self) -> tuple:
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(384, 384, generator=g), torch.randn(384, 384, generator=g)
        return a, b, torch.empty(384, 384)

    def run(self, state: tuple) -> torch.Tensor:
        a, b, out = state
        return torch.mm(a, b, out=out)


class SmallModel:
    """Four Linear(256, 256)+ReLU layers on a batch of 8, parameters requiring grad (as a freshly built model
    has them): what autograd records per call, which inference mode leaves out."""

    def setup(self) -> tuple:
        torch.manual_seed(0)
        layers = [m for _ in range(4) for m in (torch.nn.Linear(256, 256), torch.nn.ReLU())]
        return torch.nn.Sequential(*layers), torch.randn(8, 256)

    def run(self, state: tuple) -> torch.Tensor:
        model, x = state
        return model(x)


@dataclass(frozen=True)
class Arm:
    """One arm as the in-process tools apply it: torch's thread count, FTZ/DAZ on the calling thread, each call
    under ``torch.inference_mode()``."""

    threads: int
    flush_denormal: bool = False
    inference: bool = False


@dataclass(frozen=True)
class AB:
    """One A/B: the workload class, benchctl's matrix (its first cell is A, its second B), the two arms as the
    other tools apply them, and what it compares, in words."""

    name: str
    target: str
    matrix: dict = field(hash=False)
    a: Arm
    b: Arm
    what: str

    def arm(self, which: str) -> Arm:
        return {"A": self.a, "B": self.b}[which]


# One thread for the FTZ and inference A/Bs, in every tool: torch.set_flush_denormal covers the calling thread
# only, so with more threads the in-process tools would leave torch's other threads without FTZ/DAZ where
# benchctl's ftz=process sets every thread; and torch.utils.benchmark's Timer runs one thread unless told.
ABS = {
    "ftz": AB("ftz", "SubnormalMul", {"threads": [1], "ftz": ["off", "process"]}, Arm(1), Arm(1, flush_denormal=True),
              "FTZ/DAZ on a float32 multiply of subnormal inputs (1 thread; B/A: with FTZ/DAZ over without)"),
    "threads": AB("threads", "Matmul", {"threads": [1, 2]}, Arm(1), Arm(2),
                  "two threads against one on a 384x384 matmul (B/A: 2 threads over 1)"),
    "inference": AB("inference", "SmallModel", {"threads": [1], "inference": ["off", "on"]}, Arm(1),
                    Arm(1, inference=True),
                    "inference mode on a 4-layer MLP, batch 8 (1 thread; B/A: under torch.inference_mode() over "
                    "without)"),
}


def apply(name: str, which: str) -> Arm:
    """Set arm ``which`` ("A" or "B") of A/B ``name`` in this process: torch's thread count and FTZ/DAZ on the
    calling thread (off for an arm without it). Returns the arm."""
    arm = ABS[name].arm(which)
    torch.set_num_threads(arm.threads)
    torch.set_flush_denormal(arm.flush_denormal)
    return arm


def prepare(name: str, which: str) -> Callable[[], Any]:
    """Arm ``which`` of A/B ``name`` set in this process (:func:`apply`), its workload set up, and the call to
    time: the workload's ``run(state)``, under ``torch.inference_mode()`` for an arm that asks for it."""
    arm = apply(name, which)
    target = globals()[ABS[name].target]()
    state = target.setup()
    if arm.inference:
        def call() -> Any:
            with torch.inference_mode():
                return target.run(state)
    else:
        def call() -> Any:
            return target.run(state)
    return call


def reset() -> None:
    """FTZ/DAZ off again on the calling thread (the thread count is each tool's to set)."""
    torch.set_flush_denormal(False)
