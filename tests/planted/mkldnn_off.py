"""Planted cause: torch's mkldnn (oneDNN) kernels turned off. A small context network (dilated 3x3
convolutions, as in segmentation heads) runs inference on a batch of 48x48 crops, eval mode, no_grad, with
``torch.backends.mkldnn.enabled = False`` set in its setup, as a workaround left in: every dilated
convolution then runs torch's own fallback kernel (``aten::slow_conv_dilated2d``: im2col and a matrix
product) where mkldnn's would. The fix is the flag on again after the setup; what it measured in fresh processes is
``bench/plant_toggles.py --only mkldnn_off``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Infer", "cause": "mkldnn", "fixed": {"after_setup": "torch.backends.mkldnn.enabled = True"}}

WIDTH = 32  # channels of every layer
DILATIONS = (1, 2, 4, 8)  # one 3x3 convolution each: the context grows with each layer
# A batch, not one image: with one, glibc mapped and faulted in the fallback's buffers again on every call here
# (the allocator a second cause of this plant); with a batch it did not.
CROPS, SIZE = 4, 48


class Infer:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # small convolutions: a second thread beside other work only oversubscribes
        torch.backends.mkldnn.enabled = False  # left in from a workaround
        torch.manual_seed(0)
        layers = [torch.nn.Conv2d(3, WIDTH, 3, padding=1), torch.nn.ReLU()]
        for d in DILATIONS:
            layers += [torch.nn.Conv2d(WIDTH, WIDTH, 3, padding=d, dilation=d), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers).eval(), torch.randn(CROPS, 3, SIZE, SIZE)

    @staticmethod
    def run(state):
        model, x = state
        with torch.no_grad():
            return model(x)
