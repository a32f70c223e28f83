"""Planted cause: per-op overhead. Each call sums a 4,000-element tensor in a Python loop that reads every
element with ``.item()`` (``x[i].item()``): two torch ops per element (the indexing's select and the
item), each doing one element's work and paying one op's fixed cost (the binding, the dispatch, the
result's wrapping). The fix reads the tensor out once, ``x.tolist()``, and sums the Python floats.

No figure of this machine is quoted here (2 CPUs shared with other work): ``bench/plant_toggles.py``
times the plant against its fix in fresh processes.
"""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "ItemLoop", "cause": "op_overhead", "fixed": {"target": "ToList"}}

ELEMENTS = 4000


class ItemLoop:
    @staticmethod
    def setup():
        return torch.randn(ELEMENTS, generator=torch.Generator().manual_seed(0))

    @staticmethod
    def run(x):
        total = 0.0
        for i in range(x.shape[0]):
            total += x[i].item()
        return total


class ToList(ItemLoop):
    """The fix: the elements read out once (bench/plant_toggles.py times it)."""

    @staticmethod
    def run(x):
        return sum(x.tolist())
