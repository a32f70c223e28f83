"""Another thread pool kept busy beside the workload: the oversubscription a shared machine brings.

:func:`start_busy_pool` starts a daemon thread that keeps numpy's BLAS pool
(OpenBLAS or MKL, all allowed CPUs) computing matrix products until the
process ends or :func:`stop_busy_pool` is called, the way another library's
pool competes with torch's OpenMP team in a real program. numpy releases the
GIL inside the products, so the competition is for the CPUs, not the GIL.
"""

from __future__ import annotations

import os
import threading

__all__ = ["start_busy_pool", "stop_busy_pool", "busy_pool_state"]

_SIDE = 256  # a product of this size keeps a BLAS pool busy for ~1 ms at a time
_lock = threading.Lock()
_state: dict = {"thread": None, "stop": None, "products": 0, "pool_threads": None}


def _spin(stop: threading.Event, threads: int) -> None:
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((_SIDE, _SIDE))
    with threadpool_limits(limits=threads, user_api="blas"):
        while not stop.is_set():
            a = np.tanh(a @ a)  # tanh keeps the values finite, so every product costs the same
            _state["products"] += 1


def start_busy_pool(threads: int | None = None) -> dict:
    """Start the competing pool (``threads`` BLAS threads, default all allowed CPUs); returns its state.

    Starting it again while it runs changes nothing.
    """
    threads = len(os.sched_getaffinity(0)) if threads is None else threads
    with _lock:
        if _state["thread"] is None or not _state["thread"].is_alive():
            stop = threading.Event()
            thread = threading.Thread(target=_spin, args=(stop, threads), name="benchctl-busy-pool", daemon=True)
            _state.update(thread=thread, stop=stop, products=0, pool_threads=threads)
            thread.start()
    return busy_pool_state()


def stop_busy_pool(timeout_s: float = 5.0) -> dict:
    """Stop the competing pool and wait for it; returns its state."""
    with _lock:
        thread, stop = _state["thread"], _state["stop"]
        if thread is not None:
            stop.set()
            thread.join(timeout_s)
    return busy_pool_state()


def busy_pool_state() -> dict:
    """``{"running", "pool_threads", "products"}``: whether it runs, its BLAS threads, products done so far."""
    thread = _state["thread"]
    return {"running": bool(thread is not None and thread.is_alive()), "pool_threads": _state["pool_threads"],
            "products": _state["products"]}
