"""Planted cause: autograd recording where no gradient is needed. A hand-written recurrent cell is
stepped one token at a time, as a decoder is, without torch.no_grad(): its parameters require grad
(the default), so each of its tiny ops records a graph nobody differentiates (pytorch #41383: ~7 µs
against ~5 µs per tiny op). Measured outside benchctl (5 processes, 200 steps a call, calls
alternating within each process): as written against each call under ``torch.inference_mode()``
1.53-1.75x; process medians of the same side differ up to 1.7x between processes here (this VM's
speed switches between two levels within a second), which is why an earlier shape (a Linear/ReLU
stack, 1.3x) stayed `?` against a ±21% band."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"unverified": ("named `*` in five quiet runs on 2026-12-02, `?` in a sixth (1.35x against a ±32% band: "
                       "its process medians move with this VM's speed, which switches between two levels)"),
         "target": "Infer", "cause": "recording", "fixed": {"target": "InferenceMode"}}

WIDTH, STEPS = 8, 200


class Cell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w_ih = torch.nn.Parameter(torch.randn(WIDTH, WIDTH) / WIDTH ** 0.5)
        self.w_hh = torch.nn.Parameter(torch.randn(WIDTH, WIDTH) / WIDTH ** 0.5)
        self.bias = torch.nn.Parameter(torch.zeros(WIDTH))

    def forward(self, x, h):
        return torch.tanh(x @ self.w_ih + h @ self.w_hh + self.bias)


class Infer:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # tiny ops: a second thread only waits (and beside other work oversubscribes)
        torch.manual_seed(0)
        return Cell().eval(), torch.randn(1, WIDTH)

    @staticmethod
    def run(state):
        cell, x = state
        h = x
        for _ in range(STEPS):
            h = cell(x, h)
        return h


class InferenceMode(Infer):
    """The fix: the same calls under torch.inference_mode() (bench/plant_toggles.py times it)."""

    @staticmethod
    def run(state):
        with torch.inference_mode():
            return Infer.run(state)
