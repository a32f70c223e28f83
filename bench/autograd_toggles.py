"""The reported fix of each autograd plant toggled in fresh processes, without benchctl.

    python bench/autograd_toggles.py anomaly|recording [ROUNDS]

``anomaly`` (tests/planted/anomaly_on.py): the training step as written (its setup switches anomaly
detection on) against ``torch.autograd.set_detect_anomaly(False)`` after the setup. ``recording``
(tests/planted/grad_inference.py): the inference as written against each call under
``torch.inference_mode()``. Each round runs both arms in a fresh process each, interleaved; a process
gives the median of 15 calls after one untimed call. Prints every process's median and the ratio of
the arms' medians.
"""

import os
import statistics
import subprocess
import sys

PLANTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "planted")
CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
import torch
plant, fixed = sys.argv[1], sys.argv[2] == "fixed"
if plant == "anomaly":
    import anomaly_on as m
    state = m.Train.setup()
    if fixed:
        torch.autograd.set_detect_anomaly(False)
    call = lambda: m.Train.run(state)
else:
    import grad_inference as m
    state = m.Infer.setup()
    def call():
        if not fixed:
            return m.Infer.run(state)
        with torch.inference_mode():
            return m.Infer.run(state)
call()
times = []
for _ in range(15):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
print(sorted(times)[len(times) // 2] * 1e3)
"""


def main() -> None:
    plant, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    if plant not in ("anomaly", "recording"):
        sys.exit("usage: python bench/autograd_toggles.py anomaly|recording [ROUNDS]")
    medians = {"as written": [], "fixed": []}
    for _ in range(rounds):
        for arm in medians:
            out = subprocess.run([sys.executable, "-c", CHILD, plant, arm.replace(" ", "_"), PLANTED],
                                 capture_output=True, text=True, check=True)
            medians[arm].append(float(out.stdout))
    for arm, values in medians.items():
        print(f"{arm}: process medians {' '.join(f'{v:.1f}' for v in values)} ms")
    a, b = statistics.median(medians["as written"]), statistics.median(medians["fixed"])
    print(f"{plant}: {a:.1f} ms as written, {b:.1f} ms fixed: {a / b:.2f}x")


if __name__ == "__main__":
    main()
