"""Planted cause: the allocator. Every call allocates, touches and frees 64 MiB: glibc maps
it fresh and returns it to the OS on free, so every iteration page-faults it in again."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "realloc", "cause": "allocator"}


def realloc():
    block = torch.empty(64 << 20, dtype=torch.uint8)
    block.fill_(1)
