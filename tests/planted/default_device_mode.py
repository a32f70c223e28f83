"""Planted cause: a torch function mode left on. The program sets a default device at import
(``torch.set_default_device("cpu")``, as scripts written for a GPU do with ``"cuda"``), which leaves
torch's ``DeviceContext`` mode on: every torch call of every step runs its ``__torch_function__`` in
Python first. The step is four forward passes of a small MLP and a few elementwise ops, many torch calls
of a few microseconds each. The fix takes the mode off after the setup (``torch.set_default_device(None)``);
what it measured in fresh processes is ``bench/plant_toggles.py --only default_device_mode``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Step", "cause": "modes", "fixed": {"after_setup": "torch.set_default_device(None)"}}

WIDTH, DEPTH, BATCH = 32, 8, 4
CALLS = 4  # forward passes per iteration: a call long enough that a first call's start is an ordinary warm-up

torch.set_default_device("cpu")  # left on for the whole program


class Step:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
        torch.manual_seed(0)
        layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU())]
        return torch.nn.Sequential(*layers).eval(), torch.randn(BATCH, WIDTH)

    @staticmethod
    def run(state):
        model, x = state
        with torch.no_grad():
            for _ in range(CALLS):
                out = (model(x) * 0.5 + torch.ones(BATCH, WIDTH)).clamp(min=0)
            return out.sum()
