"""Planted cause: competing thread pools (numpy #29352: ``np.dot`` 8 s -> 33 s once torch was imported
beside it). Each iteration multiplies two 256x256 float32 matrices with numpy (its OpenBLAS pool, loaded
by ``import torch`` itself, one thread per CPU) and then with torch (its OpenMP team, one thread per CPU):
each pool's threads spin after their product while the other pool's need the CPUs.

The reported fix toggled outside benchctl (A/B_FIGURES)
"""

import numpy as np
import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Bench", "cause": "pools"}

_N = 256


class Bench:
    @staticmethod
    def setup():
        rng = np.random.default_rng(0)
        x = rng.standard_normal((_N, _N), dtype=np.float32)
        return x, torch.from_numpy(rng.standard_normal((_N, _N), dtype=np.float32))

    @staticmethod
    def run(state):
        x, t = state
        np.dot(x, x)
        return torch.mm(t, t)
