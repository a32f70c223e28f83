"""Small built-in workloads: quick to run, for trying the runner and for its tests.

* ``sleep``: no torch at all (a worker that starts in well under a second);
  its ``pause_file`` and ``fail_with`` parameters exist so tests can stop or
  break a worker at a known point.
* ``matmul``: one square float32 matmul per iteration, with normal, zero or
  subnormal inputs (subnormals made from bit patterns: converting a tiny
  double is itself flushed when FTZ is on).
* ``conv``: one 3x3 conv2d forward per iteration.
"""

from __future__ import annotations

import math
import numbers
import os
import time

from .. import _validate
from . import register

__all__ = ["sleep_workload", "matmul_workload", "conv_workload"]

_INITS = ("normal", "zero", "subnormal")
# float32 bit pattern 0x00100000 is a subnormal (exponent bits all zero).
_SUBNORMAL_BITS = 0x00100000


def _check_sleep(args: dict) -> None:
    ms = args["ms"]
    if isinstance(ms, bool) or not isinstance(ms, numbers.Real) or not 0 <= ms < math.inf:
        raise _validate.ArgumentError(f"ms must be a finite number of milliseconds >= 0, got {ms!r}")
    _validate.count("iterations", args["iterations"], 1)


def _check_tensor_workload(*sizes: str):
    """The check of a workload whose ``sizes`` and ``iterations`` are counts and whose ``init`` is one of
    :data:`_INITS`: a bad value fails before any worker, not in each."""
    def check(args: dict) -> None:
        for name in (*sizes, "iterations"):
            _validate.count(name, args[name], 1)
        if "init" in args and args["init"] not in _INITS:
            raise _validate.ArgumentError(f"init={args['init']!r}: choose one of {', '.join(_INITS)}")
    return check


@register(
    "sleep",
    params={"ms": 1.0, "iterations": 5, "pause_file": "", "fail_with": ""},
    help="time.sleep(ms) per iteration (phase 'sleep'); pause_file: block while that file exists, "
    "after writing this worker's pid into it; fail_with: raise RuntimeError(text) after one iteration",
    check=_check_sleep,
    phases=("sleep",),
)
def sleep_workload(args: dict, rec) -> None:
    if args["pause_file"] and os.path.exists(args["pause_file"]):
        with open(args["pause_file"], "w") as f:
            f.write(str(os.getpid()))
        while os.path.exists(args["pause_file"]):
            time.sleep(0.02)
    for i in range(int(args["iterations"])):
        with rec.iteration("sleep"):
            time.sleep(float(args["ms"]) / 1e3)
        if args["fail_with"]:
            raise RuntimeError(args["fail_with"])
    rec.note("pid", os.getpid())


def _tensor(torch, shape, init: str, seed: int):
    if init not in _INITS:
        raise ValueError(f"init={init!r}: choose one of {', '.join(_INITS)}")
    if init == "zero":
        return torch.zeros(shape)
    if init == "subnormal":
        return torch.full(shape, _SUBNORMAL_BITS, dtype=torch.int32).view(torch.float32)
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


@register(
    "matmul",
    params={"n": 64, "iterations": 20, "init": "normal"},
    help="n x n float32 matmul per iteration (phase 'matmul'); init: normal | zero | subnormal",
    check=_check_tensor_workload("n"),
    preload=("torch",),
    phases=("matmul",),
)
def matmul_workload(args: dict, rec) -> None:
    import torch

    a = _tensor(torch, (args["n"], args["n"]), args["init"], seed=1)
    b = _tensor(torch, (args["n"], args["n"]), args["init"], seed=2)
    for _ in range(int(args["iterations"])):
        with rec.iteration("matmul"):
            torch.mm(a, b)
    rec.note("torch_num_threads", torch.get_num_threads())


@register(
    "conv",
    params={"batch": 1, "channels": 8, "size": 16, "iterations": 10, "init": "normal"},
    help="3x3 conv2d forward (channels -> channels, size x size) per iteration (phase 'forward')",
    check=_check_tensor_workload("batch", "channels", "size"),
    preload=("torch",),
    phases=("forward",),
)
def conv_workload(args: dict, rec) -> None:
    import torch

    c = int(args["channels"])
    x = _tensor(torch, (args["batch"], c, args["size"], args["size"]), "normal", seed=1)
    w = _tensor(torch, (c, c, 3, 3), args["init"], seed=2)
    with torch.no_grad():
        for _ in range(int(args["iterations"])):
            with rec.iteration("forward"):
                torch.nn.functional.conv2d(x, w, padding=1)
    rec.note("torch_num_threads", torch.get_num_threads())
