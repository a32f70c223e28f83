"""Planted cause: denormals. Every iteration divides 1M subnormal float32 values by 3, eight
times: this CPU slows that down (1.6-2.7x here, process to process) and FTZ/DAZ removes it.
At 1M values the work stays in cache; at 4M it is memory-bound and the penalty hides.
It runs on one thread: on a team of two, a process spinning beside it (the timing audit runs the
suite beside one) planted a second cause, oversubscription, and identical processes differed 3.8x."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Bench", "cause": "denormals", "fixed": {"after_setup": "torch.set_flush_denormal(True)"}}

SUBNORMAL_BITS = 0x00100000  # exponent bits all zero: a subnormal float32
DIVISIONS = 8


class Bench:
    @staticmethod
    def setup():
        torch.set_num_threads(1)
        x = torch.full((1 << 20,), SUBNORMAL_BITS, dtype=torch.int32).view(torch.float32)
        out = torch.zeros_like(x)  # the output's pages are touched here, not in the first timed call
        Bench.run((x, out))  # and the first call's start is not what this plants
        return x, out

    @staticmethod
    def run(state):
        x, out = state
        for _ in range(DIVISIONS):
            torch.div(x, 3.0, out=out)
        return out
