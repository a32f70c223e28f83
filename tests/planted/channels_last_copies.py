"""Planted cause: memory-format conversions. A convolution converted to channels_last (as the
memory-format tutorial converts a model) is fed the loader's contiguous batch, so it copies its
input to channels_last every call, and its output is made ``.contiguous()`` again for the code
after it: pytorch #172205 (``tensor.contiguous()`` of a channels_last tensor, "100x slower due to
the cache misses") and #26812 (13-27 ms a conversion). One thread, as a data-loader worker runs.

Measured outside benchctl (an earlier script of ``bench/plant_toggles.py``'s kind: each variant 5
fresh processes, 20 calls each; 2026-12-02, this 2-CPU machine loaded by other work): process medians
of 0.85-2.79 ms, 0.58-0.83 ms with the fix (one memory format through: the batch converted to
channels_last once, no ``.contiguous()``): about 1.6x. Dropping channels_last instead (the layer
left contiguous) was slower here, 2.65-6.28 ms: this CPU's channels_last convolution is the faster
one, the conversions around it are what costs.
"""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# Each conversion allocates a fresh 800 KB tensor that glibc maps and unmaps (556 faults a call): the
# allocator is a second cause, named beside it (alloc=tcmalloc 2.79x [2.59, 3.01] on a quiet machine).
# thp=on removes the same faults in some processes (a fresh-clone CI run of 2026-12-03 on the AMD VM:
# 556 -> 0 faults, 1.67x [1.20, 2.33], processes 64% apart), so that cause judges the same evidence too.
PLANT = {"target": "Net", "cause": "memory_format", "also": ["allocator", "thp"],
         "fixed": {"target": "OneFormat"}}

# 112x112 images (56x56 before 2026-12-08): on an AMD EPYC of family 23 the 56x56 copies held 14-23% of the op
# time beside its slower convolution, on both sides of the cause's 20% (named in bench/explain_planted.py, open in a
# fresh-clone CI run); at 112x112, 3.2 MB a copy (0.8 MB before), past its 512 KB L2, they hold 23-31% (the fix
# 1.37x faster there, pairs 1.28-1.38x).
BATCH, CHANNELS, SIZE = 4, 16, 112


class Net:
    @staticmethod
    def setup():
        torch.set_num_threads(1)
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1).to(memory_format=torch.channels_last)
        batch = torch.randn(BATCH, CHANNELS, SIZE, SIZE)  # contiguous, as a loader makes it
        return conv, batch

    @staticmethod
    @torch.no_grad()
    def run(state):
        conv, batch = state
        return conv(batch).contiguous()


class OneFormat:
    """The fix: one memory format through, the batch converted once as the layer is, no .contiguous()
    (bench/plant_toggles.py times it)."""

    @staticmethod
    def setup():
        conv, batch = Net.setup()
        return conv, batch.contiguous(memory_format=torch.channels_last)

    @staticmethod
    @torch.no_grad()
    def run(state):
        conv, batch = state
        return conv(batch)
