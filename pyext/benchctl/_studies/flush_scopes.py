"""Which threads a denormal-flushing method reaches, and what that is worth.

:func:`compare` runs one denormal-bound parallel op (``x / 3`` over subnormal
inputs on every intra-op thread, which this CPU slows down and FTZ/DAZ fixes)
under four methods, side by side:

* ``none``: no flushing;
* ``torch``: ``torch.set_flush_denormal(True)``, which sets the calling thread only;
* ``openmp``: :func:`benchctl.fpenv.flush_denormals` with scope ``"openmp"``;
* ``process``: the same with scope ``"process"``.

For each it reports the fraction of threads flushed (read back from every
thread), the fraction of outputs flushed to zero, and the time relative to
normal inputs. :func:`toggle_cost` times a process-wide toggle while many idle
threads are alive. ``bench/ftz_scope.py`` is the command-line front end.
"""

from __future__ import annotations

import contextlib
import statistics
import threading

from .. import _validate, clock, fpenv
from .penalty import make_input

__all__ = ["METHODS", "compare", "toggle_cost"]

METHODS = ("none", "torch", "openmp", "process")


@contextlib.contextmanager
def _torch_flush():
    import torch

    if not torch.set_flush_denormal(True):
        raise RuntimeError("torch.set_flush_denormal(True) returned False: unsupported on this CPU")
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def _method(name: str):
    if name == "none":
        return contextlib.nullcontext()
    if name == "torch":
        return _torch_flush()
    return fpenv.flush_denormals(True, name)


def _fraction_flushed(records: list[dict]) -> float:
    return sum(1 for r in records if fpenv.is_flushed(r)) / len(records) if records else 0.0


def _min_median_ns(call, repeats: int) -> tuple[float, float]:
    ns = clock.to_ns(clock.time_calls(call, repeats, warmup=1))
    return float(ns.min()), float(statistics.median(ns.tolist()))


def compare(numel: int = 1 << 20, threads: int | None = None, repeats: int = 9) -> dict:
    """Run the four methods; return ``{"numel", "threads", "op", "methods": [...]}``.

    Each method entry: ``method``, ``threads_flushed`` (fraction of the
    process's threads read back with FTZ and DAZ on), ``team_flushed`` (the
    same over torch's OpenMP team), ``outputs_flushed`` (fraction of outputs
    that came out as zero; the exact results are all subnormal),
    ``time_vs_normal`` (min time on subnormals / min time on normal inputs)
    and the raw ``ns`` figures. ``threads`` defaults to torch's count, at
    least 2. Every thread's state and torch's thread count are restored.
    """
    import torch

    numel = _validate.count("numel", numel, 1)
    repeats = _validate.count("repeats", repeats, 1)
    start_threads = torch.get_num_threads()
    threads = _validate.count("threads", max(2, start_threads) if threads is None else threads, 1)
    subnormal, normal = make_input("subnormal", numel), make_input("normal", numel)
    out_sub, out_norm = torch.empty_like(subnormal), torch.empty_like(normal)

    def divide(x, out):
        return lambda: torch.div(x, 3.0, out=out)

    results = []
    try:
        torch.set_num_threads(threads)
        divide(subnormal, out_sub)()  # the team exists before any method runs, as in real programs
        for name in METHODS:
            with _method(name):
                process = fpenv.census("process")
                team = fpenv.census("openmp")
                sub_min, sub_med = _min_median_ns(divide(subnormal, out_sub), repeats)
                norm_min, norm_med = _min_median_ns(divide(normal, out_norm), repeats)
                zeros = int(((out_sub.view(torch.int32) & 0x7FFFFFFF) == 0).sum().item())
            results.append({
                "method": name,
                "threads_flushed": _fraction_flushed(process),
                "threads": len(process),
                "team_flushed": _fraction_flushed(team),
                "team_threads": len(team),
                "outputs_flushed": zeros / numel,
                "time_vs_normal": sub_min / norm_min,
                "ns": {"subnormal_min": sub_min, "subnormal_median": sub_med,
                       "normal_min": norm_min, "normal_median": norm_med},
            })
    finally:
        torch.set_num_threads(start_threads)
    return {"op": "torch.div(x, 3.0, out=...), float32", "numel": numel, "threads": threads,
            "repeats": repeats, "methods": results}


def toggle_cost(idle_threads: int = 64, toggles: int = 40) -> dict:
    """Time process-wide FTZ/DAZ toggles with ``idle_threads`` extra threads parked on an Event.

    Returns min and median milliseconds of one :func:`fpenv.set_flush_denormal`
    call (change plus readback of every thread), the thread count, and whether
    every toggle reached every thread. The process ends with FTZ/DAZ off.
    """
    idle_threads = _validate.count("idle_threads", idle_threads, 0)
    toggles = _validate.count("toggles", toggles, 1)
    release = threading.Event()
    parked = [threading.Thread(target=release.wait, daemon=True, name=f"idle-{i}") for i in range(idle_threads)]
    for t in parked:
        t.start()
    ms, all_reached, tasks = [], True, 0
    try:
        for i in range(toggles):
            with clock.Stopwatch() as sw:
                records = fpenv.set_flush_denormal(i % 2 == 0, "process")
            ms.append(sw.ns / 1e6)
            tasks = len(records)
            all_reached &= all(r["reached"] for r in records)
    finally:
        fpenv.set_flush_denormal(False, "process")
        release.set()
        for t in parked:
            t.join()
    return {"idle_threads": idle_threads, "threads": tasks, "toggles": toggles,
            "ms_min": min(ms), "ms_median": statistics.median(ms), "all_reached": all_reached}
