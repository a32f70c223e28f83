"""Planted cause: a CPU mask cut below the thread count (#125547: 30x slower once the mask was cut below
the thread count). Its own setup() cuts the mask to one CPU and then sizes torch's team to the machine's
CPUs, as code that reads os.cpu_count() does: two threads on one CPU, each 256x256 product waiting for a
descheduled thread at its barrier. A ``threads=1`` probe set before the workload runs is undone by that
call; only a probe that holds the count against the code's own calls measures the fix.

The reported fix toggled outside benchctl (A/B_FIGURES)
"""

import os

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Bench", "cause": "cpu_fit"}


class Bench:
    @staticmethod
    def setup():
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        torch.set_num_threads(os.cpu_count())
        return torch.randn(256, 256, generator=torch.Generator().manual_seed(0))

    @staticmethod
    def run(a):
        return torch.mm(a, a)
