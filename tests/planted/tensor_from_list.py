"""Planted cause: time outside torch's ops. Each call builds a batch with ``torch.tensor`` from a
list of 1,000 NumPy rows, as in pytorch #13918 (6.0 s against 0.9 s from one array): torch walks
the list element by element outside any op, and warns "Creating a tensor from a list of
numpy.ndarrays is extremely slow". Then one small product, the model's share of the call.

Measured outside benchctl (an earlier script of ``bench/plant_toggles.py``'s kind: each variant 5 fresh
processes, 20 calls each; 2026-12-02, this 2-CPU machine loaded by other work): process medians of
19.5-27.4 ms from the list, 0.52-0.66 ms with the fix (``torch.from_numpy(np.stack(rows))``): about 40x.
"""

import numpy as np
import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Batches", "cause": "python", "fixed": {"target": "Stacked"}}

ROWS, WIDTH = 1000, 64


class Batches:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # a data-loader worker's one thread
        rng = np.random.default_rng(0)
        rows = [rng.standard_normal(WIDTH).astype(np.float32) for _ in range(ROWS)]
        weight = torch.randn(WIDTH, 16, generator=torch.Generator().manual_seed(0))
        return rows, weight

    @staticmethod
    def run(state):
        rows, weight = state
        batch = torch.tensor(rows)
        return batch @ weight


class Stacked(Batches):
    """The fix: the rows stacked by NumPy first, one conversion (bench/plant_toggles.py times it)."""

    @staticmethod
    def run(state):
        rows, weight = state
        return torch.from_numpy(np.stack(rows)) @ weight
