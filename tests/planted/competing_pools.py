"""Planted cause: competing thread pools (numpy #29352: ``np.dot`` 8 s -> 33 s once torch was imported
beside it). Each iteration multiplies two 256x256 float32 matrices with numpy (its OpenBLAS pool, loaded
by ``import torch`` itself, one thread per CPU) and then with torch (its OpenMP team, one thread per CPU):
each pool's threads spin after their product while the other pool's need the CPUs.

Measured outside benchctl (`python bench/plant_toggles.py --pairs 3 --calls 20 --only competing_pools`,
load average 10-12 on this 2-CPU machine from other sessions): median call 141.9 ms as written, 48.0 ms
with the reported fix (OPENBLAS_NUM_THREADS=1; torch keeps its 2 threads), 2.96x (pairs 2.92-3.15x).
On this loaded machine torch's own two-thread team costs more still: with OMP_NUM_THREADS=1 as well the
call takes 0.8-1.1 ms (4 processes, /tmp script toggling both variables): here the thread count is a
cause beside the pools, each for its own share (the threads cause judges one thread against that cell).
"""

import numpy as np
import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# torch's team spinning after its product while numpy's pool needs the CPUs is the OpenMP wait cause's
# mechanism too: its passive policy was as fast as the cap on a quiet machine (17.91x [11.63, 27.58] against
# 17.92x [14.65, 21.92]), so it is named beside. So is the thread count (the docstring's last paragraph): on an AMD
# EPYC of family 23, one thread was 3.97x faster [2.22, 7.11], 2.13x [1.84, 2.45] beyond the cap on the pools.
PLANT = {"target": "Bench", "cause": "pools", "also": ["omp_wait", "threads"],
         "fixed": {"env": {"OPENBLAS_NUM_THREADS": "1"}}}

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
