"""Planted cause (GPU): cuDNN autotuning on every new shape. The script sets
``torch.backends.cudnn.benchmark = True`` at import, as training scripts do, and then feeds a small conv
net a new input height every call (variable-size images or audio, as in the forum reports of
benchmark=True making variable-size inputs slow): each call's convolutions are tuned again. The
reported fix: benchmark off.

A/B outside benchctl: not measured yet (no GPU was lent to the session that wrote this; issue 26).
``python bench/plant_toggles.py --only gpu_cudnn_shapes`` on a GPU machine measures it.
"""

import itertools

import torch

# What this file plants, for tests/test_explain.py and the bench scripts (tests/planted/plants.py);
# "device": the plant runs only where torch sees a CUDA device.
PLANT = {"target": "forward", "cause": "cudnn_autotune", "device": "cuda",
         "fixed": {"after_setup": "torch.backends.cudnn.benchmark = False"}}

torch.backends.cudnn.benchmark = True
_heights = itertools.count()
NET = None
if torch.cuda.is_available():
    NET = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(32, 32, 3, padding=1)).cuda().eval()
    with torch.no_grad():
        NET(torch.randn(8, 3, 64, 64, device="cuda")).sum().item()  # context and handles before timing


def forward():
    height = 64 + 4 * (next(_heights) % 500)  # a shape not seen before, call after call
    with torch.no_grad():
        return NET(torch.randn(8, 3, height, 96, device="cuda")).sum().item()  # waits for the GPU
