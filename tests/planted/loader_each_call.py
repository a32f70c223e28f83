"""Planted cause: DataLoader worker processes started in each call. Each iteration walks a small data set through a
``DataLoader`` with two workers built inside it: every call forks two worker processes and stops them again,
for four batches of work. The fix is the same loader built once, its workers kept (``persistent_workers=True``:
``Persistent``); what it measured in fresh processes is ``bench/plant_toggles.py --only loader_each_call``'s to
say."""

import torch
from torch.utils.data import DataLoader, TensorDataset

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Rebuilt", "cause": "loader_workers", "fixed": {"target": "Persistent"}}

ROWS, WIDTH, BATCH, WORKERS = 256, 32, 64, 2


def _data():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    return TensorDataset(torch.randn(ROWS, WIDTH)), torch.nn.Linear(WIDTH, 4)


def _epoch(loader, model):
    total = 0.0
    with torch.no_grad():
        for (x,) in loader:
            total += float(model(x).sum())
    return total


class Rebuilt:
    @staticmethod
    def setup():
        return _data()

    @staticmethod
    def run(state):
        data, model = state
        return _epoch(DataLoader(data, batch_size=BATCH, num_workers=WORKERS), model)  # built, started, stopped


class Persistent:
    @staticmethod
    def setup():
        data, model = _data()
        return DataLoader(data, batch_size=BATCH, num_workers=WORKERS, persistent_workers=True), model

    @staticmethod
    def run(state):
        return _epoch(*state)
