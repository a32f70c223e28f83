"""Planted cause: weights initialised in each call. Each call builds its two blocks anew, and building a block draws
its weights (``nn.Linear``'s own reset, then an orthogonal draw, a QR decomposition, as recurrent and attention
blocks often ask for) before a forward pass over 16 rows that costs a small part of that. The fix is the same
blocks built once in ``setup`` (``Kept``); what it measured in fresh processes is
``bench/plant_toggles.py --only model_each_call``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Rebuilt", "cause": "weight_init", "fixed": {"target": "Kept"}}

WIDTH, ROWS, BLOCKS = 128, 16, 2  # 64 KiB of weights a block: under glibc's mmap threshold, no page faults to time


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(WIDTH, WIDTH)
        torch.nn.init.orthogonal_(self.linear.weight)

    def forward(self, x):
        return torch.tanh(self.linear(x))


def _input():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    return torch.randn(ROWS, WIDTH)


def _forward(blocks, x):
    with torch.no_grad():
        for block in blocks:
            x = block(x)
    return float(x.sum())


class Rebuilt:
    @staticmethod
    def setup():
        return _input()

    @staticmethod
    def run(x):
        return _forward([Block() for _ in range(BLOCKS)], x)  # built, weights drawn, every call


class Kept:
    @staticmethod
    def setup():
        return [Block() for _ in range(BLOCKS)], _input()

    @staticmethod
    def run(state):
        return _forward(*state)
