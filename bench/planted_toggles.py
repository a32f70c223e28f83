"""The A/B of each evidence-only plant's reported fix, outside benchctl: each variant in fresh processes.

    python bench/planted_toggles.py [tensor_from_list|channels_last_copies|recompile_each_step ...]

prints, per plant and variant, the median call time of each process (and its fastest call), in ms.
The planted workloads' docstrings quote what it printed here.
"""

import os
import subprocess
import sys

PLANTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "planted")
PROCESSES, CALLS = 5, 20

# Each child: the plant's setup, the variant's change, one untimed call, then CALLS timed ones.
_CHILD = r'''
import statistics, sys, time
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
plant, variant = sys.argv[2], sys.argv[3]
if plant == "tensor_from_list":
    import tensor_from_list as p
    rows, weight = p.Batches.setup()
    convert = (lambda: torch.from_numpy(np.stack(rows))) if variant == "fix" else (lambda: torch.tensor(rows))
    call = lambda: convert() @ weight
elif plant == "channels_last_copies":
    import channels_last_copies as p
    conv, batch = p.Net.setup()
    call = lambda: p.Net.run((conv, batch))
    if variant == "fix":  # one memory format through: the batch converted once, as the layer is; no .contiguous()
        batch = batch.contiguous(memory_format=torch.channels_last)
        call = torch.no_grad()(lambda: conv(batch))
else:
    import recompile_each_step as p
    if variant == "fix":  # the loop over the changing bound left uncompiled
        p.accumulate = p.accumulate._torchdynamo_orig_callable
    state = p.Steps.setup()
    call = lambda: p.Steps.run(state)
call()
times = []
for _ in range(int(sys.argv[4])):
    started = time.perf_counter()
    call()
    times.append(time.perf_counter() - started)
print(statistics.median(times) * 1e3, min(times) * 1e3)
'''


def main(plants):
    for plant in plants:
        for variant in ("plant", "fix"):
            runs = [tuple(map(float, subprocess.run(
                [sys.executable, "-W", "ignore", "-c", _CHILD, PLANTED, plant, variant, str(CALLS)],
                capture_output=True, text=True, check=True).stdout.split())) for _ in range(PROCESSES)]
            medians = " ".join(f"{m:.3g}" for m, _ in sorted(runs))
            fastest = " ".join(f"{f:.3g}" for _, f in sorted(runs, key=lambda r: r[1]))
            print(f"{plant} {variant}: process medians {medians} ms; fastest calls {fastest} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["tensor_from_list", "channels_last_copies", "recompile_each_step"])
