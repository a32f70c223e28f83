"""Planted cause: the allocator. Every call allocates, touches and frees 64 MiB: glibc maps
it fresh and returns it to the OS on free, so every iteration page-faults it in again."""

import torch


def realloc():
    block = torch.empty(64 << 20, dtype=torch.uint8)
    block.fill_(1)
