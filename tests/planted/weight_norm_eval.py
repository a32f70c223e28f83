"""Planted cause: parametrized weights recomputed on every access. A small MLP whose layers carry
``torch.nn.utils.parametrizations.orthogonal`` (kept from training) is stepped several times per call
in eval mode, as a decoder or a recurrent policy is: each step reads every weight again, and each read
recomputes it from its original (a matrix exponential here). The fix is the same steps under
``torch.nn.utils.parametrize.cached()`` (``Cached``: each weight computed once per call); what it
measured in fresh processes is ``bench/plant_toggles.py --only weight_norm_eval``'s to say."""

import torch
from torch.nn.utils import parametrizations, parametrize

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Steps", "cause": "parametrize", "fixed": {"target": "Cached"}}

WIDTH, DEPTH, BATCH = 64, 4, 16
STEPS = 8  # forward steps per iteration, each reading every weight


class Steps:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
        torch.manual_seed(0)
        layers = []
        for _ in range(DEPTH):
            layers += [parametrizations.orthogonal(torch.nn.Linear(WIDTH, WIDTH)), torch.nn.Tanh()]
        return torch.nn.Sequential(*layers).eval(), torch.randn(BATCH, WIDTH)

    @staticmethod
    def run(state):
        model, x = state
        with torch.no_grad():
            h = x
            for _ in range(STEPS):
                h = model(h)
        return h


class Cached(Steps):
    """The fix: the same steps under parametrize.cached() (bench/plant_toggles.py times it)."""

    @staticmethod
    def run(state):
        with parametrize.cached():
            return Steps.run(state)
