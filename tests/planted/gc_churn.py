"""Planted cause: Python's garbage collector pausing each call. A data-preparation step builds one dict per sample
(each with a tuple and a list inside: three container objects) while an index of 300,000 small lists built in setup
stays alive: the allocations pass the collector's threshold every few hundred objects, the rows, alive until the call
ends, survive into the older generations, and now and then a full pass walks the index too (a call of ~170 ms among
calls of ~11 ms). The fix is ``gc.freeze()`` once setup is done (the index leaves the collector's passes: no more
full passes over it) and a higher first threshold (``gc.set_threshold``: fewer passes over the rows); what it
measured in fresh processes is ``bench/plant_toggles.py --only gc_churn``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# The whole call is Python-side work, which the python cause names with it.
PLANT = {"target": "Rows", "cause": "gc", "also": ["python"],
         "fixed": {"after_setup": "import gc; gc.freeze(); gc.set_threshold(50_000, 10, 10)"}}

INDEX, SAMPLES = 300_000, 30_000


class Rows:
    @staticmethod
    def setup():
        torch.set_num_threads(1)
        return [[i] for i in range(INDEX)]  # a long-lived index of Python objects

    @staticmethod
    def run(index):
        rows = [{"id": i, "span": (i, i + 1), "tags": [i % 7]} for i in range(SAMPLES)]
        return torch.tensor([r["span"][1] for r in rows[:256]]).sum() + len(index)
