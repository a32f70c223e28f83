"""The counts a workload's own code gives ``torch.set_num_threads``, recorded by the probe worker from its
``setup()`` on: code that sets its own count undoes a thread-count probe applied before it (the CPU-fit and
thread causes read them, :mod:`benchctl._causes.cpu_fit.probe`)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

__all__ = ["ThreadCalls", "thread_calls"]


class ThreadCalls:
    """The counts given to ``torch.set_num_threads`` while :func:`thread_calls` records them (passed on unchanged):
    ``asked``, in order, a count given again right after itself kept once (code that sets its count in every call
    would otherwise list it once per call); ``calls``, every call."""

    def __init__(self) -> None:
        self.asked: list[Any] = []
        self.calls = 0

    def add(self, n: Any) -> None:
        self.calls += 1
        if not self.asked or self.asked[-1] != n:
            self.asked.append(n)


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
        calls.add(n)
        original(n)

    torch.set_num_threads = recorded
    try:
        yield calls
    finally:
        torch.set_num_threads = original
