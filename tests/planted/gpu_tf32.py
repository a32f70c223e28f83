"""Planted cause (GPU): float32 matmuls at full float32 precision. Eight 4096x4096 float32 matmuls a call
at torch's default precision ("highest": TF32 off for matmuls since torch 1.12), the shape of the reports
of float32 training on an A100/H100 far below its TF32 throughput.

A/B outside benchctl: not measured yet (no GPU was lent to the session that wrote this; issue 26:
``bash bench/gpu_plants_ab.sh`` runs every GPU plant's toggle).
The toggle, in fresh processes: ``python tests/planted/gpu_tf32.py highest`` and ``... high`` print the mean
ms of 20 calls at each precision.
"""

import sys
import time

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py);
# "device": the plant runs only where torch sees a CUDA device.
PLANT = {"target": "matmuls", "cause": "tf32", "device": "cuda"}

A = None
if torch.cuda.is_available():
    A = torch.randn(4096, 4096, device="cuda")
    (A @ A).sum().item()  # context and cuBLAS handle before timing


def matmuls():
    out = A
    for _ in range(8):
        out = A @ out
    return out.sum().item()  # waits for the GPU


if __name__ == "__main__":
    torch.set_float32_matmul_precision(sys.argv[1])
    matmuls()
    began = time.perf_counter()
    for _ in range(20):
        matmuls()
    print(f"{sys.argv[1]}: {(time.perf_counter() - began) / 20 * 1e3:.2f} ms a call")
