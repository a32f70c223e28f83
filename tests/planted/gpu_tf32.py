"""Planted cause (GPU): float32 matmuls at full float32 precision. Eight 4096x4096 float32 matmuls a call
at torch's default precision ("highest": TF32 off for matmuls since torch 1.12), the shape of the reports
of float32 training on an A100/H100 far below its TF32 throughput. The reported fix:
``torch.set_float32_matmul_precision("high")``.

A/B outside benchctl: not measured yet (no GPU was lent to the session that wrote this; issue 26).
``python bench/plant_toggles.py --only gpu_tf32`` on a GPU machine measures it.
"""

import torch

# What this file plants, for tests/test_explain.py and the bench scripts (tests/planted/plants.py);
# "device": the plant runs only where torch sees a CUDA device.
PLANT = {"target": "matmuls", "cause": "tf32", "device": "cuda",
         "fixed": {"after_setup": "torch.set_float32_matmul_precision('high')"}}

A = None
if torch.cuda.is_available():
    A = torch.randn(4096, 4096, device="cuda")
    (A @ A).sum().item()  # context and cuBLAS handle before timing


def matmuls():
    out = A
    for _ in range(8):
        out = A @ out
    return out.sum().item()  # waits for the GPU
