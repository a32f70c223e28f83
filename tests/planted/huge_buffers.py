"""Planted cause: large buffers faulted in one 4 KiB page at a time. Each call makes two 5000×5000
float32 buffers (100 MB each) and frees them, as the report's loop over 5000×5000 buffers did (candle
#2149: 22 → 63 it/s with huge pages; torch's own switch is THP_MEM_ALLOC_ENABLE, #115990): glibc maps
each fresh and the kernel faults it in 4 KiB at a time. With THP_MEM_ALLOC_ENABLE=1 torch aligns them
to 2 MiB and advises huge pages, so each costs 50 faults instead of 24,000. alloc=retain (glibc keeps
the freed memory) removes the same faults another way: the allocator cause is named beside it.
Outside benchctl (`python bench/plant_toggles.py`, quiet machine): 72.36 ms as written, 21.49 ms with
THP_MEM_ALLOC_ENABLE=1, 3.45x (pairs 3.28-4.01x)."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# Its fix: torch's huge-page switch, timed by bench/plant_toggles.py.
PLANT = {"target": "step", "cause": "thp", "also": ["allocator"], "fixed": {"env": {"THP_MEM_ALLOC_ENABLE": "1"}}}

N = 5000


def step():
    a = torch.full((N, N), 0.5)
    b = a * a
    return float(b[0, 0])
