#!/usr/bin/env bash
# The A/B figure of each GPU plant (tests/planted/gpu_*.py), measured outside benchctl: each plant's own
# toggle (its __main__), each side in a fresh process, three times. On a machine with an NVIDIA GPU:
#
#   bash bench/gpu_plants_ab.sh          # about a minute; PYTHON=... picks the interpreter
#
# Prints one line per process; the figures go in each plant's docstring.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "no CUDA device: nothing to measure")' || exit 3
for round in 1 2 3; do
  echo "--- round $round"
  timeout 60 "$PY" tests/planted/gpu_async.py
  for side in on off; do timeout 120 "$PY" tests/planted/gpu_cudnn_shapes.py "$side"; done
  for side in lazy eager; do timeout 60 "$PY" tests/planted/gpu_first_call.py "$side"; done
  for side in highest high; do timeout 60 "$PY" tests/planted/gpu_tf32.py "$side"; done
done
