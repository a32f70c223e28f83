#!/usr/bin/env bash
# The prepared GPU check: on a machine with an NVIDIA GPU, install benchctl,
# run its CUDA tests and the zero-weights GPU benchmark, and print a short
# table last. Every step runs under `timeout` against one overall deadline,
# so the whole check ends inside GPU_CHECK_BUDGET_S (default 450 s, < 8 min).
#
#   bash bench/gpu_check.sh              # logs in a fresh temporary folder
#   GPU_CHECK_LOGS=DIR bash bench/gpu_check.sh
#
# Works offline: the package is built with the Python that already holds
# torch (PYTHON, default python3), in a venv that sees that Python's packages,
# without build isolation; pip reaches for an index only if something is
# missing. Exit status 0 only when every step that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
BUDGET=${GPU_CHECK_BUDGET_S:-450}
LOGS=${GPU_CHECK_LOGS:-$(mktemp -d)}
VENV_ROOT=$(mktemp -d)
VENV=$VENV_ROOT/venv
trap 'rm -rf "$VENV_ROOT"' EXIT
DEADLINE=$(($(date +%s) + BUDGET))
mkdir -p "$LOGS"

ROWS=()
FAILED=0

# run_step NAME CAP_SECONDS CMD...: run under timeout (the smaller of CAP and
# what is left before the deadline), log to $LOGS/NAME.log, add a table row.
run_step() {
  local name=$1 cap=$2 left status rc t0 secs
  shift 2
  left=$((DEADLINE - $(date +%s) - 5))
  ((left < cap)) && cap=$left
  if ((cap < 10)); then
    ROWS+=("$name|SKIPPED|0|no time left in the ${BUDGET}s budget")
    FAILED=1
    return 1
  fi
  echo "=== $name (timeout ${cap}s): $*"
  t0=$(date +%s)
  # bash -c so that a step can be one of the functions below (exported).
  timeout --kill-after=10 "$cap" bash -c '"$@"' "$name" "$@" 2>&1 | tee "$LOGS/$name.log"
  rc=${PIPESTATUS[0]}
  secs=$(($(date +%s) - t0))
  if ((rc == 0)); then
    status=PASS
  elif ((rc == 124 || rc == 137)); then
    status="TIMEOUT"
    FAILED=1
  else
    status="FAIL(rc=$rc)"
    FAILED=1
  fi
  ROWS+=("$name|$status|$secs|$(tail -n 1 "$LOGS/$name.log" | cut -c1-90)")
  return "$rc"
}

# A venv over the packages of $PY (torch included): a .pth file adds its
# site-packages, which also works when $PY is itself a venv's interpreter.
make_venv() {
  "$PY" -m venv "$VENV" || return 1
  local site
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$PY" -c 'import site; print("\n".join(site.getsitepackages()))' >"$site/base-python.pth"
  "$VENV/bin/python" -c 'import torch, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda)'
}

# Offline first: resolve '.[test]' against what is installed. When that
# resolution fails (torch's own pins can name packages an image lacks), build
# benchctl alone and check that what it imports is there. No index is asked:
# GPU machines here have no network, and pip's retries would eat the budget.
install_package() {
  make_venv || return 1
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  # Without an index the build backend must already be there: say so plainly.
  if ! "$VENV/bin/python" -c 'import scikit_build_core, pybind11' 2>/dev/null; then
    echo "offline build needs scikit-build-core and pybind11 beside torch:"
    echo "  pip install scikit-build-core pybind11 ninja   (or bring their wheels to this machine)"
    return 1
  fi
  if ! command -v cmake >/dev/null && ! "$VENV/bin/python" -c 'import cmake' 2>/dev/null; then
    echo "offline build needs cmake >= 3.18 (apt-get install cmake, or pip install cmake)"
    return 1
  fi
  "$VENV/bin/pip" install -q --no-build-isolation --no-index '.[test]' && return 0
  echo "full offline resolution failed; installing benchctl with --no-deps"
  "$VENV/bin/pip" install -q --no-build-isolation --no-index --no-deps . &&
    "$VENV/bin/python" -c 'import torch, torchvision, numpy, pytest, benchctl; print("benchctl", benchctl.__version__, "installed")'
}

# One line on the GPU for the table, and a non-zero exit when CUDA timing
# cannot work here (then the CUDA tests would only be skipped).
probe() {
  "$VENV/bin/python" - <<'EOF'
import json, sys
import benchctl.cuda as c
ok, reason = c.available()
print("available:", ok, "-", reason)
if not ok:
    sys.exit(1)
i = c.device_info()
print(json.dumps(i, indent=1, default=str))
print(f"{i['name']} | driver {i['driver_version']} | SM {i['sm_clock_mhz']} MHz"
      f" (max {i['max_sm_clock_mhz']}) | {i['temperature_c']} C | L2 {i['l2_cache_bytes']} B")
EOF
}

export PY VENV
export -f make_venv install_package probe

run_step nvidia-smi 30 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
run_step install 200 install_package
if [ -x "$VENV/bin/python" ] && run_step probe 60 probe; then
  # BENCHCTL_REQUIRE_GPU turns the GPU tests' skip into a failure.
  run_step pytest-cuda 180 env BENCHCTL_REQUIRE_GPU=1 "$VENV/bin/python" -m pytest -m "cuda and not slow" -q -rs tests
  if [ -f bench/zero_weights.py ]; then
    run_step zero_weights 240 "$VENV/bin/python" bench/zero_weights.py --device cuda
  else
    ROWS+=("zero_weights|SKIPPED|0|bench/zero_weights.py does not exist yet")
  fi
fi

echo
echo "logs: $LOGS"
printf '%-13s %-12s %6s  %s\n' step status secs "last line"
printf '%-13s %-12s %6s  %s\n' ------------- ------------ ------ ---------
for row in "${ROWS[@]}"; do
  IFS='|' read -r name status secs note <<<"$row"
  printf '%-13s %-12s %6s  %s\n' "$name" "$status" "$secs" "$note"
done
exit "$FAILED"
