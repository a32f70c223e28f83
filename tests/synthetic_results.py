"""Synthetic results documents with known answers, for the verdict and report tests.

Every cell's samples are the same seeded series scaled by a known factor, so
the ratio of medians between two cells is exactly the ratio of their factors
and "no difference" means identical samples.
"""

import itertools

import numpy as np

from benchctl.results import document as results

BASE_NS = 10e6 * (1 + 0.01 * np.random.default_rng(7).standard_normal(16))


def make_doc(matrix, factor, faults=None, readback=None, repeat=2, phase="eval"):
    """A document for ``matrix`` where cell c's samples are ``BASE_NS * factor(c)``.

    ``faults(c)``: minor faults per iteration (None: counters unavailable).
    ``readback(c)``: the run's readback dict.
    """
    doc = results.new_document("synthetic", {}, matrix, repeat, {"hostname": "test"})
    keys = list(matrix)
    for rep in range(repeat):
        for combo in itertools.product(*matrix.values()):
            cell = dict(zip(keys, combo))
            ns = list(np.roll(BASE_NS, rep) * factor(cell))
            counters = {}
            if faults is not None:
                counters = {"minor_faults": [faults(cell)] * len(ns), "cpu_migrations": [0] * len(ns)}
            doc["runs"].append({
                "cell": cell, "repetition": rep, "status": "ok",
                "phases": {phase: {"ticks": [int(v) for v in ns], "ns": ns, "counters": counters, "warmup": 0}},
                "readback": readback(cell) if readback else {}, "notes": {},
                "exit_status": 0, "stderr_tail": None,
            })
    return doc
