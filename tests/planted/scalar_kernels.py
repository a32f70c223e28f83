"""Planted cause: kernel ISA dispatch. The script keeps a debugging line that pins torch to its
scalar kernels (``ATEN_CPU_CAPABILITY=default`` unless the shell sets it: a left-over from
comparing results across machines), then computes a language model's loss: the cross-entropy of
128 positions over a 32,000-word vocabulary, whose log-softmax is one of torch's own vectorised
kernels; at ``default`` it runs the scalar fallback.

Measured outside benchctl, the toggle alone in fresh processes (`ATEN_CPU_CAPABILITY=$c python
tests/planted/scalar_kernels.py`, c = default, avx512, default, avx512, ...; 20 timed calls after
3 warm-up ones, median per process, torch's 2 threads), on a machine whose load average was 12
on its 2 CPUs: default 95.98, 80.01, 98.01, 89.18 ms; avx512 28.01, 31.85, 32.03, 32.86 ms (2.5-3.4x). Under
that load each parallel op also waits ~24 ms for a descheduled thread whatever its kernels; on
one thread (`OMP_NUM_THREADS=1`), with 32 positions: default 9.22, 16.82, 12.83 ms, avx512 1.04,
0.76, 1.02 ms (9-22x). With 32 positions on 2 threads the waits hid it (`benchctl explain` once:
isa=avx512 1.025x [0.76, 1.39]), so the loss is over 128.
"""

import os

os.environ.setdefault("ATEN_CPU_CAPABILITY", "default")  # before torch's first kernel, which reads it

import torch  # noqa: E402

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# Its fix: the capability this CPU's flags allow (AVX-512 here; avx2 on a CPU without it).
# Named `*` in three quiet runs (CI's slow tier, then bench/explain_planted.py twice on 2026-12-02).
PLANT = {"target": "Loss", "cause": "isa", "fixed": {"env": {"ATEN_CPU_CAPABILITY": "avx512"}}}

_POSITIONS, _VOCABULARY = 128, 32_000


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
