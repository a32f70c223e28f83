"""Planted cause (GPU): CUDA's lazy start. Nothing touches the GPU at import; the first call creates the
CUDA context and the cuBLAS handle inside the first timed iteration, as in the reports of a first CUDA
call taking a second or more; every later call is a small matmul. The reported fix: a warm-up call (or
an early CUDA op) before timing. The warm-up cause measures the same first iteration (``also`` below):
it says what the first iterations cost, this cause what they paid for.

A/B outside benchctl: not measured yet (no GPU was lent to the session that wrote this; issue 26).
``python bench/plant_toggles.py --only gpu_first_call`` on a GPU machine measures it.
"""

import torch

# What this file plants, for tests/test_explain.py and the bench scripts (tests/planted/plants.py);
# "device": the plant runs only where torch sees a CUDA device; "also": causes that judge the same
# evidence and are right to be named with it.
PLANT = {"target": "small_matmul", "cause": "cuda_first_call", "device": "cuda", "also": ["warmup"],
         "fixed": {"warmup": 1}}


def small_matmul():
    a = torch.ones(256, 256, device="cuda")
    return (a @ a).sum().item()  # waits for the GPU
