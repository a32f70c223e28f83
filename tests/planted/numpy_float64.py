"""Planted cause: float64 where float32 was meant. The batches come from NumPy, whose arrays are
float64, through torch.from_numpy, and the model was made .double() to match them (dingo PR #55:
3-4x from casting such a pipeline to float32; pytorch #4588). An MLP of three 512-wide layers on a
batch of 128 rows; its fix, the model and the batch in float32 (model.float(),
torch.from_numpy(x).float()), measured by `python bench/plant_toggles.py --only numpy_float64`
(3 pairs of fresh processes, 20 calls each, load average 11-17 on the 2 cores): 89.1 ms as written
against 49.6 ms fixed, 2.11x (pairs 0.62-2.79x); again 87.7 against 41.7 ms, 1.80x (pairs 1.22-4.15x);
at 256 rows, 41.6 against 16.4 ms, 1.61x (pairs 1.51-4.16x): less than the report's 3-4x on this
CPU. It runs on one thread, as the other plants do."""

import numpy as np
import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Bench", "cause": "float64", "fixed": {
    "after_setup": "state['model'].float(); state['batch'] = state['batch'].astype('float32')"}}

WIDTH = 512
ROWS = 128


class Bench:
    @staticmethod
    def setup():
        torch.set_num_threads(1)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh(), torch.nn.Linear(WIDTH, WIDTH),
                                    torch.nn.Tanh(), torch.nn.Linear(WIDTH, WIDTH)).double().eval()
        batch = np.random.default_rng(0).standard_normal((ROWS, WIDTH))  # float64, as NumPy makes it
        return {"model": model, "batch": batch}

    @staticmethod
    def run(state):
        with torch.inference_mode():
            return state["model"](torch.from_numpy(state["batch"]))
