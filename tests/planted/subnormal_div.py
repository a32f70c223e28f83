"""Planted cause: denormals. Every iteration divides 1M subnormal float32 values by 3,
which this CPU slows down (about 2.6x here) and FTZ/DAZ fixes."""

import torch

SUBNORMAL_BITS = 0x00100000  # exponent bits all zero: a subnormal float32


class Bench:
    @staticmethod
    def setup():
        x = torch.full((1 << 20,), SUBNORMAL_BITS, dtype=torch.int32).view(torch.float32)
        return x, torch.zeros_like(x)  # the output's pages are touched here, not in the first timed call

    @staticmethod
    def run(state):
        x, out = state
        return torch.div(x, 3.0, out=out)
