"""Planted cause (GPU): CUDA's lazy start. Nothing touches the GPU at import; the first call creates the
CUDA context and the cuBLAS handle inside the first timed iteration, as in the reports of a first CUDA
call taking a second or more; every later call is a small matmul. The warm-up cause measures the same
first iteration (``also`` below): it says what the first iterations cost, this cause what they paid for.

A/B outside benchctl: not measured yet (no GPU was lent to the session that wrote this; issue 26:
``bash bench/gpu_plants_ab.sh`` runs every GPU plant's toggle).
The toggle, in fresh processes: ``python tests/planted/gpu_first_call.py lazy`` and ``... eager`` print the
first call's ms without and with the context created first.
"""

import sys
import time

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py);
# "device": the plant runs only where torch sees a CUDA device; "also": causes that judge the same
# evidence and are right to be named with it.
PLANT = {"target": "small_matmul", "cause": "cuda_first_call", "device": "cuda", "also": ["warmup"]}


def small_matmul():
    a = torch.ones(256, 256, device="cuda")
    return (a @ a).sum().item()  # waits for the GPU


if __name__ == "__main__":
    if sys.argv[1:] == ["eager"]:
        torch.ones(8, 8, device="cuda").sum().item()
    began = time.perf_counter()
    small_matmul()
    print(f"{sys.argv[1:]}: first call {(time.perf_counter() - began) * 1e3:.1f} ms")
