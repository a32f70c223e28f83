"""Planted cause: kernel ISA dispatch. The script keeps a debugging line that pins torch to its
scalar kernels (``ATEN_CPU_CAPABILITY=default`` unless the shell sets it: a left-over from
comparing results across machines), then computes a language model's loss: the cross-entropy of
32 positions over a 32,000-word vocabulary, whose log-softmax is one of torch's own vectorised
kernels; at ``default`` it runs the scalar fallback.

Measured outside benchctl, the toggle alone in fresh processes (`OMP_NUM_THREADS=1
ATEN_CPU_CAPABILITY=$c python tests/planted/scalar_kernels.py`, c = default, avx512, default,
avx512, ...; 20 timed calls after 3 warm-up ones, median per process), on a machine whose load
average was 12 on its 2 CPUs: default 9.22, 16.82, 12.83 ms; avx512 1.04, 0.76, 1.02 ms (9-22x).
With both threads under that load every parallel op waited ~24 ms for a descheduled thread,
either way (the loss alone: default 24.0, 24.0 ms; avx512 31.1, 28.0 ms).
"""

import os

os.environ.setdefault("ATEN_CPU_CAPABILITY", "default")  # before torch's first kernel, which reads it

import torch  # noqa: E402

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Loss", "cause": "isa"}

_POSITIONS, _VOCABULARY = 32, 32_000


class Loss:
    @staticmethod
    def setup():
        g = torch.Generator().manual_seed(0)
        return (torch.randn(_POSITIONS, _VOCABULARY, generator=g),
                torch.randint(0, _VOCABULARY, (_POSITIONS,), generator=g))

    @staticmethod
    def run(state):
        logits, targets = state
        return torch.nn.functional.cross_entropy(logits, targets)


if __name__ == "__main__":
    import time

    state = Loss.setup()
    for _ in range(3):
        Loss.run(state)
    times = []
    for _ in range(20):
        started = time.perf_counter()
        Loss.run(state)
        times.append(time.perf_counter() - started)
    print(f"{torch.backends.cpu.get_cpu_capability()}: median {sorted(times)[10] * 1e3:.2f} ms")
