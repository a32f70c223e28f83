"""Planted cause: fewer torch threads than the usable CPUs. The code sets torch's count to one thread itself
(a habit carried from a data-loader worker or a one-thread benchmark), then multiplies 768x768 matrices, work
torch would split over every CPU it may use. Measured here (`python -m benchctl explain
/tmp/one_thread.py:step`, a module-level set_num_threads(1) before the same product): 6.7 ms a call on one
thread, and the threads cause's probe (one thread) left nothing to change.
"""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Bench", "cause": "few_threads",
         "fixed": {"after_setup": "torch.set_num_threads(len(__import__('os').sched_getaffinity(0)))"}}


class Bench:
    @staticmethod
    def setup():
        torch.set_num_threads(1)
        return torch.randn(768, 768, generator=torch.Generator().manual_seed(0))

    @staticmethod
    def run(a):
        return a @ a
