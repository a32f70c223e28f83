"""Planted cause: lazy initialisation. The first call builds a table (about 0.1 s); every
later call only reads from it."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "lookup", "cause": "warmup", "fixed": {"warmup": 1}}

_table = None


def lookup():
    global _table
    if _table is None:
        g = torch.Generator().manual_seed(0)
        _table = torch.randn(1500, 1500, generator=g) @ torch.randn(1500, 1500, generator=g)
    return _table[0, :16].sum()
