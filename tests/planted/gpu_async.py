"""Planted cause (GPU): asynchronous launches timed by a host clock. Each call queues twenty 2048x2048
float32 matmuls on the GPU and returns without waiting, the shape of the reports where ``model(x)`` "takes
0.1 ms" on ``time.time()`` while training is slow: the clock stops when the launches are queued, long
before the GPU has done them.

A/B outside benchctl: not measured yet (no GPU was lent to the session that wrote this; issue 26:
``bash bench/gpu_plants_ab.sh`` runs every GPU plant's toggle).
The toggle, in fresh processes: ``python tests/planted/gpu_async.py`` prints the host-clocked time of one call
without and with ``torch.cuda.synchronize()`` before the clock is read.
"""

import time

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py);
# "device": the plant runs only where torch sees a CUDA device.
PLANT = {"target": "launch", "cause": "async_clock", "device": "cuda"}

A = torch.randn(2048, 2048, device="cuda") if torch.cuda.is_available() else None
if A is not None:
    (A @ A).sum().item()  # the context and cuBLAS handle exist before timing: only the clock is planted


def launch():
    out = A
    for _ in range(20):
        out = A @ A
    return out  # not waited for


if __name__ == "__main__":
    for synchronise in (False, True):
        launch()
        torch.cuda.synchronize()
        began = time.perf_counter()
        launch()
        if synchronise:
            torch.cuda.synchronize()
        print(f"synchronize before the clock read: {synchronise}: {(time.perf_counter() - began) * 1e3:.3f} ms")
