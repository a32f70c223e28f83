"""Planted cause: the autograd profiler left around the work. A small network trains with its loop
wrapped in ``torch.profiler.profile()``, as the reports have it (a profiling session added to look at
the steps once, then left around them): every op's event, inputs and time are recorded on every step.
The fix is the same step without the context (``TrainPlain``); what it measured in fresh processes is
``bench/plant_toggles.py --only profiler_on``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Train", "cause": "profiler", "fixed": {"target": "TrainPlain"}}

WIDTH, DEPTH, BATCH = 32, 6, 16
STEPS = 8  # optimizer steps per iteration


def _setup():
    torch.set_num_threads(1)  # tiny ops: a second thread only waits (and beside other work oversubscribes)
    g = torch.Generator().manual_seed(0)
    layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(BATCH, WIDTH, generator=g), torch.randn(BATCH, WIDTH, generator=g)
    return model, opt, x, y


def _step(state):
    model, opt, x, y = state
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


class Train:
    setup = staticmethod(_setup)

    @staticmethod
    def run(state):
        with torch.profiler.profile():  # left around the loop from a profiling session
            for _ in range(STEPS):
                loss = _step(state)
        return loss


class TrainPlain:
    setup = staticmethod(_setup)

    @staticmethod
    def run(state):
        for _ in range(STEPS):
            loss = _step(state)
        return loss
