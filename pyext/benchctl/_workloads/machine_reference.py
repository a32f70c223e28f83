"""``machine_reference``: fixed pure-Python work that measures the machine, not any code under test.

Each iteration sorts a shuffled list of 20,000 integers, builds a dict of
them and joins their strings: interpreter dispatch, allocation and memory
traffic, the kind of work a Python test suite does. Nothing about it
changes between releases of the code under test, so when two sessions time
it differently, the machine (its load, clock, neighbours) moved between
them. The pytest plugin runs it in every session with an isolated test
that writes or compares results (:mod:`benchctl.pytest_plugin._reference`).
No torch: a worker starts in well under a second.
"""

from __future__ import annotations

import random

from . import register

__all__ = ["NAME", "PHASE", "machine_reference_workload"]

NAME = "machine_reference"
PHASE = "reference"
_SIZE = 20_000
_SEED = 20261201  # the same list in every process and every session


@register(
    NAME,
    params={"iterations": 40},
    help="fixed pure-Python work (sort, dict, join of 20,000 integers) per iteration (phase 'reference'): "
    "how fast the machine itself runs, for comparisons between sessions",
    phases=(PHASE,),
)
def machine_reference_workload(args: dict, rec) -> None:
    values = list(range(_SIZE))
    random.Random(_SEED).shuffle(values)
    for _ in range(int(args["iterations"])):
        with rec.iteration(PHASE):
            ordered = sorted(values)
            index = {v: i for i, v in enumerate(ordered)}
            text = ",".join(map(str, ordered))
        if len(index) != _SIZE or not text:
            raise RuntimeError("machine_reference: the reference work came out wrong")
