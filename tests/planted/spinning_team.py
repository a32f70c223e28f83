"""Planted cause: the OpenMP wait policy. Each step alternates ten times between a small product on
torch's team and a batch compressed by the workload's own two-thread pool (zlib, which releases the
GIL): right after each parallel region torch's idle libgomp thread spins on a CPU one of the pool's
threads needs, and the step waits for both of them.

Measured outside benchctl, in fresh processes on a quiet machine (2026-12-02, the same shape run as
a script: 20 timed steps after 3, median): unchanged 58.69, 71.62, 68.30, 72.40, 58.70 ms;
``OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=0`` 40.02, 40.63, 45.94, 43.36, 47.58 ms: 1.23-1.67x
(`python bench/plant_toggles.py --only spinning_team`, 3 pairs: 1.03x (0.98-1.09x) at 07:55, 1.42x
(1.28-1.43x) two minutes later: the effect moves with this VM's state). One
thread removes the spinning thread too (the thread-count cause's probe; 28.5 ms on the 64 KiB
shape where passive took 29.5-30.5 ms), so explain names both. The shape this file first had (a
prefetching thread beside ten products, 9.2-9.6x at load 11-14) was 1.17x on a quiet machine: a
single thread that runs beside the team is seldom kept waiting there; a pool that needs every CPU
at once is (as numpy's is on competing_pools.py). Heavier variants of that first shape (256 KiB
batches, 100-300 tiny regions beside a zlib producer) and a pool overlapped with the products
instead of alternating with them gained nothing from the passive policy.
"""

import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# One thread removes the spinning thread as well (see above): the thread-count cause is named beside it.
PLANT = {"unverified": ("named `*` in all three quiet explains of this shape (1.59x, 1.55x, then in the final "
                       "run), but bench/plant_toggles.py measured its fix 1.03x (pairs 0.98-1.09x) once and 1.42x "
                       "(1.28-1.43x) minutes later: the effect moves with this VM's state"),
         "target": "Step", "cause": "omp_wait", "also": ["threads"],
         "fixed": {"env": {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}}}

_CHUNK_BYTES, _ROUNDS = 256 << 10, 10


def _compress(chunk: bytes) -> bytes:
    return zlib.compress(chunk, 1)


class Step:
    @staticmethod
    def setup():
        g = torch.Generator().manual_seed(0)
        rng = np.random.default_rng(0)
        chunks = [rng.integers(0, 4, _CHUNK_BYTES, dtype=np.uint8).tobytes() for _ in range(2)]
        return ThreadPoolExecutor(2), chunks, torch.randn(64, 512, generator=g), torch.randn(512, 512, generator=g)

    @staticmethod
    def run(state):
        pool, chunks, x, w = state
        for _ in range(_ROUNDS):
            x = torch.relu(x @ w) / 512 ** 0.5
            list(pool.map(_compress, chunks))
        return x
