"""Planted cause: oversubscription. A neighbour process keeps one of the CPUs busy while torch
multiplies matrices on a team of all of them: each product waits at its end for the thread that
shares a CPU with the neighbour (about 30x slower here), where one thread alone never waits."""

import atexit
import subprocess
import sys

import torch

# Says it is ready, then spins until its parent is gone (a killed worker leaves no neighbour behind).
_NEIGHBOUR = """\
import os
parent = os.getppid()
print("spinning", flush=True)
while os.getppid() == parent:
    for _ in range(100_000):
        pass
"""


class Bench:
    @staticmethod
    def setup():
        neighbour = subprocess.Popen([sys.executable, "-c", _NEIGHBOUR], start_new_session=True,
                                     stdout=subprocess.PIPE, text=True)
        atexit.register(neighbour.kill)
        neighbour.stdout.readline()  # timing starts once it spins, not while its interpreter starts
        # Fix the team at its size: left unset, about one process in four here ran the products on one
        # thread (no context switches, nothing waits) and the plant did not take.
        torch.set_num_threads(torch.get_num_threads())
        a = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
        for _ in range(5):  # the team's first start is not what this plants
            torch.mm(a, a)
        return a

    @staticmethod
    def run(a):
        return torch.mm(a, a)
