"""No planted cause: a 384x384 float32 matmul of normal values, nothing else."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "matmul", "cause": None}

A = torch.randn(384, 384, generator=torch.Generator().manual_seed(0))


def matmul():
    return A @ A
