"""Another thread pool kept busy beside the workload: the oversubscription a shared machine brings.

:func:`start_busy_pool` starts a daemon thread that keeps numpy's BLAS pool
(OpenBLAS or MKL, all allowed CPUs) computing matrix products until the
process ends or :func:`stop_busy_pool` is called, the way another library's
pool competes with torch's OpenMP team in a real program. numpy releases the
GIL inside the products, so the competition is for the CPUs, not the GIL.

The pool pauses between two products while the process forks (``os.register_at_fork``): a child forked in
the middle of one inherited the BLAS pool's state mid-product, and a DataLoader's worker processes, forked in
each call of a workload, hung there (the busy-pool probe then held explain past its budget). A real program's
other pool is no safer to fork beside, but the probe is ours, and it must not turn a slowdown into a hang.
"""

from __future__ import annotations

import os
import threading

__all__ = ["start_busy_pool", "stop_busy_pool", "busy_pool_state"]

_SIDE = 256  # a product of this size keeps a BLAS pool busy for ~1 ms at a time
_FORK_WAIT_S = 1.0  # how long a fork waits for the product under way to end (a product takes ~1 ms)
_lock = threading.Lock()
_state: dict = {"thread": None, "stop": None, "products": 0, "pool_threads": None}
# Around a fork: _hold set asks the pool to pause between products; it sets _paused while it waits.
_hold, _paused = threading.Event(), threading.Event()


def _spin(stop: threading.Event, threads: int) -> None:
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((_SIDE, _SIDE))
    with threadpool_limits(limits=threads, user_api="blas"):
        while not stop.is_set():
            if _hold.is_set():
                _paused.set()
                while _hold.is_set() and not stop.is_set():
                    stop.wait(0.001)  # the fork takes milliseconds
                _paused.clear()
                continue
            a = np.tanh(a @ a)  # tanh keeps the values finite, so every product costs the same
            _state["products"] += 1


def _before_fork() -> None:
    thread = _state["thread"]
    if thread is not None and thread.is_alive() and thread is not threading.current_thread():
        _hold.set()
        _paused.wait(_FORK_WAIT_S)


def _after_fork_in_parent() -> None:
    _hold.clear()


def _after_fork_in_child() -> None:
    _hold.clear()  # the pool's thread is not in the child: nothing to resume
    _paused.clear()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


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
