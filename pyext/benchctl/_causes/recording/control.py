"""Run each timed call of a user workload under ``torch.inference_mode()``, and check that it held.

A cell's ``inference=on`` setting switches this on in its worker (:func:`enable`), which puts :func:`run`
around each timed call of the user workloads that call the code once per iteration (their callables and
``setup()``/``run(state)`` objects: :mod:`benchctl._timed_call`), from the next call on. Inside the mode no op
records an autograd graph, so a call that needs none runs without that cost; a call that needs
gradients fails (its ``backward()`` finds nothing to differentiate). After each call, still inside the
mode, the wrapper checks that the mode is still on and that no tensor it returned records a graph
(the code turned the mode off inside its call): :func:`held` says whether every call so far did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ... import _timed_call

__all__ = ["WHAT", "Calls", "enable", "disable", "enabled", "run", "wrapped", "held", "state"]

#: What the timed calls run under while this is on (:func:`benchctl._timed_call.active`).
WHAT = "inference=on"


@dataclass
class Calls:
    """The timed calls run under the mode so far: ``calls`` in all, ``held`` those it held through."""

    calls: int = 0
    held: int = 0


_calls: Calls | None = None


def enable() -> dict[str, Any]:
    """Wrap every later timed call (counts start at zero); the state right after."""
    global _calls
    _calls = Calls()
    _timed_call.put_runner(WHAT, run)
    return state()


def disable() -> None:
    global _calls
    _calls = None
    _timed_call.take(WHAT)


def enabled() -> bool:
    return _calls is not None


def _records_graph(value: Any) -> bool:
    """Whether ``value`` (a tensor, or a tuple, list or dict of them) holds a tensor that records a graph."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.requires_grad
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (tuple, list)) and any(_records_graph(v) for v in value)


def run(call: Callable[[], Any]) -> Any:
    """Call ``call`` as this process runs a timed call now: under ``torch.inference_mode()`` while :func:`enable`
    holds, counted and checked; else as written."""
    counts = _calls
    if counts is None:
        return call()
    import torch

    with torch.inference_mode():
        out = call()
        counts.calls += 1
        counts.held += torch.is_inference_mode_enabled() and not _records_graph(out)
    return out


def wrapped(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` as :func:`run` runs it, decided at each call (a switch between two calls holds from the next)."""
    return lambda: run(call)


def held() -> bool:
    """Whether at least one call was wrapped and the mode held through every one of them."""
    return _calls is not None and _calls.calls > 0 and _calls.held == _calls.calls


def state() -> dict[str, Any]:
    """``{"enabled", "calls", "held"}``: whether calls are wrapped, how many were, how many the mode held through."""
    return {"enabled": enabled(), "calls": _calls.calls if _calls else 0, "held": _calls.held if _calls else 0}
