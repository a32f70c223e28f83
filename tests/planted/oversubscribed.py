"""Planted cause: oversubscription. torch multiplies matrices on a team of all the CPUs, one thread
placed on each (as OMP_PROC_BIND would), while a neighbour process spins on the last CPU: the team
member there is descheduled now and then, and the product waits for it at its end, where one thread
alone (on the first CPU) never waits. Measured here (`benchctl run
tests/planted/oversubscribed.py:Bench --set threads=1,2 --repeat 6`): process medians of
10.2-12.1 ms on 2 threads, 3.7-5.3 ms on 1.

Tried and dropped, each for processes that did not agree: an unplaced team beside the neighbour
(the scheduler moved torch's threads: some processes waited 16 ms on every product, about one in
three never waited, and a neighbour in the workload's own session left medians of 3.8-5.7 ms on
1 thread against 6.1-7.8 ms on 2, too close to resolve reliably), and numpy's BLAS pool busy in a
thread of the workload (waits of 50 ms to 1.7 s in some processes, none in others).
"""

import atexit
import os
import subprocess
import sys

import torch

from benchctl import omp  # the team's thread ids, to place it (not to time anything)

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# The neighbour is the workload's own child: a team thread spinning on its CPU takes what it needs, so the
# OpenMP wait cause's passive policy helps too (1.41x [1.18, 1.69] on a quiet machine here) and is named beside.
PLANT = {"target": "Bench", "cause": "threads", "also": ["omp_wait"],
         "fixed": {"after_setup": "torch.set_num_threads(1)"}}

# Says it is ready, then spins on its CPU until its parent is gone (a killed worker leaves no
# neighbour behind). In a session of its own it slows the team more than in the workload's
# (process medians of 10.2-12.1 ms against 6.2-6.9 ms on 2 threads here).
_NEIGHBOUR = """\
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
parent = os.getppid()
print("spinning", flush=True)
while os.getppid() == parent:
    for _ in range(100_000):
        pass
"""
# One iteration is this many products (~8 ms of work on 1 thread): one product waits or not, so its
# median says little; among forty, some wait in nearly every iteration. Ten were enough where waits were
# frequent and short (Zen 4, above); on a 6.18 kernel (EEVDF) here they are rare and long: with ten, medians of
# 0.97-1.01 ms on 2 threads against 1.87-1.96 ms on 1, but means of 3.0-3.2 ms against 1.9-2.0 (a tenth of
# the iterations 9-13 ms); with forty, medians of 12.2-12.3 ms against 7.8-8.0 ms, and means alike (60 and
# 30 iterations outside benchctl, each twice).
_PRODUCTS = 40


def _place_team(cpus: list[int]) -> None:
    """torch's OpenMP team one thread a CPU: thread 0 (the calling thread) on the first, thread i on the
    (i+1)th in turn. Only the team: numpy's BLAS workers (loaded with torch) are left where they are."""
    for member in omp.team_census():
        os.sched_setaffinity(member["tid"], {cpus[member["omp_thread"] % len(cpus)]})


class Bench:
    @staticmethod
    def setup():
        a = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
        torch.mm(a, a)  # starts torch's team, whose threads are placed next
        cpus = sorted(os.sched_getaffinity(0))
        _place_team(cpus)
        neighbour = subprocess.Popen([sys.executable, "-c", _NEIGHBOUR, str(cpus[-1])], start_new_session=True,
                                     stdout=subprocess.PIPE, text=True)
        atexit.register(neighbour.kill)
        neighbour.stdout.readline()  # timing starts once it spins, not while its interpreter starts
        return a

    @staticmethod
    def run(a):
        for _ in range(_PRODUCTS):
            out = torch.mm(a, a)
        return out
