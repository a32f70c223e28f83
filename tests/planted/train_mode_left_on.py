"""Planted cause: modules left in training mode. A small conv net, each block a convolution, batch norm, ReLU and
dropout, built and then timed for inference (under ``torch.no_grad()``) without ``model.eval()``: every call
draws the dropout masks and computes each batch's statistics (and updates the running ones). The fix is the same
model in eval mode (``Evaluated``); what it measured in fresh processes is ``bench/plant_toggles.py --only
train_mode_left_on``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Training", "cause": "train_mode", "fixed": {"target": "Evaluated"}}

# A batch of 4 keeps every buffer under glibc's mmap threshold (at 8, 1,920 page faults a call planted the
# allocator too).
CHANNELS, SIDE, BATCH, BLOCKS = 16, 32, 4, 4


def _model():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    blocks = [m for _ in range(BLOCKS) for m in (torch.nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1),
                                                 torch.nn.BatchNorm2d(CHANNELS), torch.nn.ReLU(),
                                                 torch.nn.Dropout(0.2))]
    return torch.nn.Sequential(*blocks), torch.randn(BATCH, CHANNELS, SIDE, SIDE)


def _forward(state):
    model, x = state
    with torch.no_grad():
        return model(x)


class Training:
    @staticmethod
    def setup():
        return _model()  # as built: in training mode

    run = staticmethod(_forward)


class Evaluated:
    @staticmethod
    def setup():
        model, x = _model()
        return model.eval(), x

    run = staticmethod(_forward)
