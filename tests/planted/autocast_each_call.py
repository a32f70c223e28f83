"""Planted cause: autocast casting the weights anew in every call. An MLP served in bfloat16 by wrapping each
call in ``torch.autocast``: autocast caches its casts of the parameters only until its outermost block exits, so
every call casts every weight matrix again before its matmuls. The fix is the model cast to bfloat16 once
(``CastOnce``); what it measured in fresh processes is ``bench/plant_toggles.py --only autocast_each_call``'s to
say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# "also": half judges the same bfloat16 ops, and is right where the CPU has no native bfloat16 arithmetic (an AMD
# EPYC VM with AVX2 and no AVX-512: its bfloat16 addmm ran 7.5x slower than in float32, 83% of the op time).
PLANT = {"target": "Autocast", "cause": "autocast_cache", "also": ["half"], "fixed": {"target": "CastOnce"}}

# A few requests a call: the casts of the weights then weigh on the call also where the CPU computes bfloat16 slowly
# (an AMD EPYC VM with AVX2, one thread: kept across calls against cast in each, 1.36x at a batch of 4, 1.10x at 32).
WIDTH, DEPTH, BATCH = 512, 3, 4


def _model():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU())]
    return torch.nn.Sequential(*layers).eval(), torch.randn(BATCH, WIDTH)


class Autocast:
    @staticmethod
    def setup():
        return _model()

    @staticmethod
    def run(state):
        model, x = state
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x)


class CastOnce:
    @staticmethod
    def setup():
        model, x = _model()
        return model.to(torch.bfloat16), x.to(torch.bfloat16)

    @staticmethod
    def run(state):
        model, x = state
        with torch.no_grad():
            return model(x)
