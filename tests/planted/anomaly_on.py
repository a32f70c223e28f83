"""Planted cause: anomaly detection left on. A small network trains with
``torch.autograd.set_detect_anomaly(True)`` switched on in its setup, as the reports have it (a
debugging aid left on: Lightning #12344, ignite #219): every op autograd records keeps a Python
traceback and backward checks every gradient for NaN. The fix toggled in fresh processes outside
benchctl (an earlier script of `bench/plant_toggles.py`'s kind, 5 pairs, beside other work on this 2-CPU machine):
process medians of 43.0-73.5 ms as written against 9.0-15.1 ms with
``torch.autograd.set_detect_anomaly(False)`` after the setup, 4.26x (medians 48.6 against 11.4 ms)."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Train", "cause": "anomaly", "fixed": {"after_setup": "torch.autograd.set_detect_anomaly(False)"}}

WIDTH, DEPTH, BATCH = 32, 6, 16
STEPS = 4  # optimizer steps per iteration


class Train:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # tiny ops: a second thread only waits (and beside other work oversubscribes)
        torch.autograd.set_detect_anomaly(True)  # left on from a debugging session
        g = torch.Generator().manual_seed(0)
        layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())]
        model = torch.nn.Sequential(*layers)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        x, y = torch.randn(BATCH, WIDTH, generator=g), torch.randn(BATCH, WIDTH, generator=g)
        return model, opt, x, y

    @staticmethod
    def run(state):
        model, opt, x, y = state
        for _ in range(STEPS):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        return loss.detach()
