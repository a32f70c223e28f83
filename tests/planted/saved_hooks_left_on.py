"""Planted cause: saved-tensor hooks left on. A training step of a small MLP runs after its setup entered
``torch.autograd.graph.saved_tensors_hooks`` with a pack hook that copies every tensor autograd saves (as an
activation-offloading hook does) and never exited it: autograd calls the hook in Python on every saved tensor of
every later step. The fix is the same step without the hooks (``Plain``); what it measured in fresh processes is
``bench/plant_toggles.py --only saved_hooks_left_on``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Hooked", "cause": "saved_hooks", "fixed": {"target": "Plain"}}

WIDTH, DEPTH, BATCH = 32, 8, 32


def _model():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.LayerNorm(WIDTH),
                                                torch.nn.GELU())]
    return torch.nn.Sequential(*layers), torch.randn(BATCH, WIDTH)


def _step(state):
    model, x = state
    model.zero_grad(set_to_none=True)
    loss = model(x).square().mean()
    loss.backward()
    return loss.detach()


def _copy(tensor):  # what an offloading hook does: a copy of each saved tensor, kept instead of it
    return tensor.detach().clone()


def _same(tensor):
    return tensor


class Hooked:
    @staticmethod
    def setup():
        torch.autograd.graph.saved_tensors_hooks(_copy, _same).__enter__()  # entered, never exited
        return _model()

    run = staticmethod(_step)


class Plain:
    setup = staticmethod(_model)
    run = staticmethod(_step)
