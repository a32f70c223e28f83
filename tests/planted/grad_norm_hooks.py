"""Planted cause: gradient hooks on tensors run on every backward. A training step of a small MLP whose setup
registered a hook on every parameter that logs its gradient's norm (``grad.norm().item()`` appended to a list, as
gradient monitoring is written) and left it there: every backward calls a Python hook per parameter, each a
reduction and a sync. The fix is the same step without the hooks (``Plain``); what it measured in fresh processes is
``bench/plant_toggles.py --only grad_norm_hooks``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Hooked", "cause": "grad_hooks", "fixed": {"target": "Plain"}}

WIDTH, DEPTH, BATCH = 32, 24, 16


def _model():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(DEPTH)]), torch.randn(BATCH, WIDTH)


def _step(state):
    model, x = state[:2]
    model.zero_grad(set_to_none=True)
    loss = model(x).square().mean()
    loss.backward()
    return loss.detach()


class Hooked:
    @staticmethod
    def setup():
        model, x = _model()
        norms = []

        def log_norm(grad):  # gradient monitoring, left on
            norms.append(grad.norm().item())

        for p in model.parameters():
            p.register_hook(log_norm)
        return model, x, norms

    run = staticmethod(_step)


class Plain:
    setup = staticmethod(_model)
    run = staticmethod(_step)
