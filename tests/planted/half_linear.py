"""Planted cause: half precision on a CPU without native float16 arithmetic. A float16 nn.Linear
MLP (two 1024x1024 layers, a batch of 32) runs inference on the CPU, as in pytorch #70492 (an fp16
linear 8.3 s against 0.065 s in float32). This Zen 4 has avx512_bf16 but neither avx512_fp16 nor
amx_fp16 (f16c only converts): float16's matmuls run ~4-5x slower than float32's, while bfloat16's
run faster than float32's (measured outside benchctl, one thread, min of 9 calls: 512x512 batch 32,
float32 0.40 ms, float16 1.85-2.01 ms, bfloat16 0.24-0.30 ms), so the plant is float16.
Its fix, model.float() and float32 inputs, measured by `python bench/plant_toggles.py --only
half_linear` (3 pairs of fresh processes, 20 calls each, load average 11-17 on the 2 cores): 23.8 ms
as written against 10.3 ms fixed, 2.31x (pairs 1.06-2.60x); again 107.9 against 26.9 ms, 2.32x (pairs
1.24-4.09x); at a batch of 64, 51.6 against 16.6 ms, 3.48x (pairs 2.18-3.94x).
It runs on one thread, as the other plants do, so that no second cause (oversubscription) is planted."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# A CPU with avx512_fp16 (or amx_fp16) multiplies float16 natively: there this file plants nothing (an Intel
# Xeon with avx512_fp16 here: float32 1.31 ms, float16 1.11 ms, bfloat16 0.40 ms, as below).
PLANT = {"target": "Bench", "cause": "half", "cpu_lacks": ["avx512_fp16", "amx_fp16"], "fixed": {
    "after_setup": "state['model'].float(); state['x'] = state['x'].float()"}}

FEATURES = 1024
BATCH = 32


class Bench:
    @staticmethod
    def setup():
        torch.set_num_threads(1)
        generator = torch.Generator().manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(FEATURES, FEATURES), torch.nn.ReLU(),
                                    torch.nn.Linear(FEATURES, FEATURES)).half().eval()
        return {"model": model, "x": torch.randn(BATCH, FEATURES, generator=generator).half()}

    @staticmethod
    def run(state):
        with torch.inference_mode():
            return state["model"](state["x"])
