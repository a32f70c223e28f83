"""Planted cause: oversubscription. A torch matmul on all CPUs while another thread keeps
numpy's BLAS pool busy on the same CPUs."""

import os
import threading

import numpy as np
import torch
from threadpoolctl import threadpool_limits


def _spin():
    a = np.random.default_rng(0).standard_normal((256, 256))
    with threadpool_limits(limits=len(os.sched_getaffinity(0)), user_api="blas"):
        while True:
            a = np.tanh(a @ a)


class Bench:
    @staticmethod
    def setup():
        threading.Thread(target=_spin, daemon=True).start()
        return torch.randn(256, 256, generator=torch.Generator().manual_seed(0))

    @staticmethod
    def run(a):
        return torch.mm(a, a)
