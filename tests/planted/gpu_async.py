"""Planted cause (GPU): asynchronous launches timed by a host clock. Each call queues twenty 2048x2048
float32 matmuls on the GPU and returns without waiting, the shape of the reports where ``model(x)`` "takes
0.1 ms" on ``time.time()`` while training is slow: the clock stops when the launches are queued, long
before the GPU has done them. The reported fix is to wait for the GPU before reading the clock
(``launch_waited``).

A/B outside benchctl: not measured yet (no GPU was lent to the session that wrote this; issue 26).
``python bench/plant_toggles.py --only gpu_async`` on a GPU machine measures it.
"""

import torch

# What this file plants, for tests/test_explain.py and the bench scripts (tests/planted/plants.py);
# "device": the plant runs only where torch sees a CUDA device.
PLANT = {"target": "launch", "cause": "async_clock", "device": "cuda", "fixed": {"target": "launch_waited"}}

A = torch.randn(2048, 2048, device="cuda") if torch.cuda.is_available() else None
if A is not None:
    (A @ A).sum().item()  # the context and cuBLAS handle exist before timing: only the clock is planted


def launch():
    out = A
    for _ in range(20):
        out = A @ A
    return out  # not waited for


def launch_waited():
    out = launch()
    torch.cuda.synchronize()  # the clock read after this sees the GPU's work
    return out
