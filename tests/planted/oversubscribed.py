"""Planted cause: oversubscription. A neighbour process keeps one of the CPUs busy while torch
multiplies matrices on a team of all of them: each product waits at its end for the thread that
shares a CPU with the neighbour (about 30x slower here), where one thread alone never waits."""

import atexit
import statistics
import subprocess
import sys
import time

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
# A product that takes this many times its time without the neighbour shows the plant took.
_TAKEN = 5.0
_TRIES = 5


def _product_ms(a) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        torch.mm(a, a)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _start_neighbour() -> subprocess.Popen:
    neighbour = subprocess.Popen([sys.executable, "-c", _NEIGHBOUR], start_new_session=True,
                                 stdout=subprocess.PIPE, text=True)
    atexit.register(neighbour.kill)
    neighbour.stdout.readline()  # timing starts once it spins, not while its interpreter starts
    return neighbour


class Bench:
    @staticmethod
    def setup():
        # Fix the team at its size: left unset, about one process in four here ran the products on one
        # thread (no context switches, nothing waits) and the plant did not take.
        torch.set_num_threads(torch.get_num_threads())
        a = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
        alone = _product_ms(a)  # also the team's first start, which is not what this plants
        # Even so, about one process in ten here kept its team off the neighbour's CPU and never
        # waited: a team that does not slow down gets a new neighbour. A single thread has no one
        # to wait for, so it keeps the first.
        for _ in range(_TRIES):
            neighbour = _start_neighbour()
            if torch.get_num_threads() == 1 or _product_ms(a) > _TAKEN * alone:
                break
            neighbour.kill()
            neighbour.wait()
        return a

    @staticmethod
    def run(a):
        return torch.mm(a, a)
