"""Planted cause: autograd recording where no gradient is needed. A small network's parameters
require grad (the default), and its inference runs without torch.no_grad(): every tiny op records
a graph nobody differentiates (pytorch #41383: ~7 µs against ~5 µs per tiny op). The fix toggled in
fresh processes outside benchctl (an earlier script of `bench/plant_toggles.py`'s kind, 5 pairs, beside other work
on this 2-CPU machine): process medians of 32.0-56.7 ms as written against 22.8-40.1 ms with each
call under ``torch.inference_mode()``, 1.47x (medians 42.1 against 28.6 ms)."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"unverified": "`?` in both runs so far (at load 10-18, one process per cell): not yet seen named here",
         "target": "Infer", "cause": "recording", "fixed": {"target": "InferenceMode"}}

WIDTH, DEPTH = 8, 8
CALLS = 100  # forward passes of one sample per iteration


class Infer:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # tiny ops: a second thread only waits (and beside other work oversubscribes)
        torch.manual_seed(0)
        layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU())]
        return torch.nn.Sequential(*layers).eval(), torch.randn(1, WIDTH)

    @staticmethod
    def run(state):
        model, x = state
        for _ in range(CALLS):
            out = model(x)
        return out


class InferenceMode(Infer):
    """The fix: the same calls under torch.inference_mode() (bench/plant_toggles.py times it)."""

    @staticmethod
    def run(state):
        with torch.inference_mode():
            return Infer.run(state)
