"""Planted cause: the allocator. Every call allocates, touches and frees 64 MiB: glibc maps
it fresh and returns it to the OS on free, so every iteration page-faults it in again."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# Its fix: glibc told to keep freed memory (alloc=retain's tunables), timed by bench/plant_toggles.py.
# Huge pages (thp=on) fault the same block in 2 MiB at a time: that cause is named beside it.
PLANT = {"target": "realloc", "cause": "allocator", "also": ["thp"], "fixed": {"env": {
    "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=17179869184"}}}


def realloc():
    block = torch.empty(64 << 20, dtype=torch.uint8)
    block.fill_(1)
