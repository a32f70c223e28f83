"""Planted cause: the OpenMP wait policy. A prefetching thread compresses the next batch (zlib,
which releases the GIL) while the main thread runs a small model on torch's team; after each of
its many short parallel regions torch's idle libgomp thread spins, on a CPU the prefetching
thread needs, and each step waits for that batch.

Measured outside benchctl, in fresh processes (`python tests/planted/spinning_team.py`: 20 timed
steps after 3, median), twice each, on a machine whose load average was 11-14 on its 2 CPUs:
unchanged 516.20, 475.93 ms (32 context switches/iter); `OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=0`
53.99, 51.63 ms (62-63 switches/iter: the team sleeps and is woken): 9.2-9.6x. One thread
(`OMP_NUM_THREADS=1`) is as fast here (43.48, 48.45 ms, 8-9 switches/iter): on this loaded
machine the team's second thread buys the small products nothing, so the thread-count cause's
probe removes the spinning thread as well (explain then names both). Whether passive beats one
thread where the products gain from two threads was not measured: no quiet machine was at hand.
`benchctl explain` here (once, load ~12): a 243 ms step in the probe left one process per cell;
1 thread 0.13x and omp_wait=passive 0.14x, both "?" (one process per cell calls nothing).
The same step with a 256 KiB batch and 30 layers (a scratch copy, the first shape tried) gave
0.98, 1.16 s unchanged, 0.18, 0.15 s passive, 0.20, 0.16 s on one thread.

On a quiet machine (2026-12-02, nothing else running) the effect is small: `python
bench/plant_toggles.py` 10.33 ms as written, 8.10 ms passive, 1.17x (pairs 1.03-1.32x); this
file's own main twice each: 11.21, 13.01 ms against 8.20, 7.89 ms passive. Heavier shapes did not
help there (256 KiB batches: passive 27-41 ms against 7-32 ms spinning; 100-300 tiny regions a step
beside a zlib producer: passive no faster): without other load, a sleeping team's wake-ups cost
about what its spinning took.
"""

import os
import queue
import threading

import numpy as np
import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# One thread removes the spinning thread as well (see above): the thread-count cause is named beside it.
PLANT = {"unverified": ("the slowdown needs a loaded machine: on a quiet one the passive policy was 1.17x "
                       "(pairs 1.03-1.32x) outside benchctl, and explain named it `*` once (1.38x), `?` once and "
                       "ruled it out once (a precheck since fixed) in three quiet runs"),
         "target": "Step", "cause": "omp_wait", "also": ["threads"],
         "fixed": {"env": {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}}}

_BATCH_BYTES, _LAYERS = 64 << 10, 10


def _prefetch(batches: queue.Queue, raw: bytes) -> None:
    import zlib

    while True:
        batches.put(zlib.compress(raw, 6))


class Step:
    @staticmethod
    def setup():
        g = torch.Generator().manual_seed(0)
        raw = np.random.default_rng(0).integers(0, 4, _BATCH_BYTES, dtype=np.uint8).tobytes()
        batches = queue.Queue(maxsize=2)
        threading.Thread(target=_prefetch, args=(batches, raw), daemon=True).start()
        return batches, torch.randn(64, 512, generator=g), torch.randn(512, 512, generator=g)

    @staticmethod
    def run(state):
        batches, x, w = state
        batches.get()
        for _ in range(_LAYERS):
            x = torch.relu(x @ w) / 512 ** 0.5
        return x


if __name__ == "__main__":
    import resource
    import time

    state = Step.setup()
    for _ in range(3):
        Step.run(state)
    times, before = [], resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(20):
        started = time.perf_counter()
        Step.run(state)
        times.append(time.perf_counter() - started)
    after = resource.getrusage(resource.RUSAGE_SELF)
    switches = (after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw) / 20
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')} threads={torch.get_num_threads()}: "
          f"median {sorted(times)[10] * 1e3:.2f} ms, {switches:.0f} context switches/iter")
