"""Planted cause: a CPU mask cut below the thread count (#125547: 30x slower once the mask was cut below
the thread count). Its own setup() cuts the mask to one CPU and then sizes torch's team to the machine's
CPUs, as code that reads os.cpu_count() does: two threads on one CPU, each 256x256 product waiting for a
descheduled thread at its barrier. A ``threads=1`` probe set before the workload runs is undone by that
call; only a probe that holds the count against the code's own calls measures the fix.

Measured outside benchctl (`python bench/plant_toggles.py --pairs 3 --calls 20 --only mask_below_threads`,
load average 10-12 from other sessions): median call 44.0 ms as written, 0.37 ms with the count sized to
the mask after setup(), 112.9x (pairs 95.0-129.6x).
"""

import os

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Bench", "cause": "cpu_fit",
         "fixed": {"after_setup": "torch.set_num_threads(len(__import__('os').sched_getaffinity(0)))"}}


class Bench:
    @staticmethod
    def setup():
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        torch.set_num_threads(os.cpu_count())
        return torch.randn(256, 256, generator=torch.Generator().manual_seed(0))

    @staticmethod
    def run(a):
        return torch.mm(a, a)
