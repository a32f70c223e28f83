"""The counts a workload's own code gives ``torch.set_num_threads``, recorded by the probe worker from its
``setup()`` on: code that sets its own count undoes a thread-count probe applied before it (the CPU-fit and
thread causes read them, :mod:`benchctl._causes.cpu_fit.probe`)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

__all__ = ["ThreadCalls", "thread_calls"]


class ThreadCalls:
    """The counts given to ``torch.set_num_threads`` while :func:`thread_calls` records them (passed on unchanged)."""

    def __init__(self) -> None:
        self.asked: list[Any] = []


@contextlib.contextmanager
def thread_calls(active: bool = True) -> Iterator[ThreadCalls]:
    """Record the workload's own ``torch.set_num_threads`` calls for the block (none when not ``active``);
    torch's function is put back after it, also after an exception."""
    calls = ThreadCalls()
    if not active:
        yield calls
        return
    import torch

    original = torch.set_num_threads

    def recorded(n: Any) -> None:
        calls.asked.append(n)
        original(n)

    torch.set_num_threads = recorded
    try:
        yield calls
    finally:
        torch.set_num_threads = original
