"""What autograd does in one call of a workload: the probe worker's evidence for the autograd causes.

:func:`autograd_census` runs the call once more (untimed, after the profiled one, so that its
interception costs nothing in the profile) under a torch function mode that sees each torch call the
code makes from Python (``F.linear``, ``torch.relu``, ``x.sum()``, ``loss.backward()``; the ops they run
inside are one call) and notes, for each, whether anomaly detection was on as it ran, whether its result
records an autograd graph (a ``grad_fn``), and whether it computes gradients (``backward``,
``torch.autograd.grad``). It also counts the parameters of the modules in the workload's state that
require grad. The result is the ``autograd`` key of the probe note
(:class:`benchctl.results.autograd_facts.AutogradFacts` reads it).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

__all__ = ["TOP_OPS", "autograd_census"]

#: How many of the recording calls' names the note keeps (the most frequent first).
TOP_OPS = 5


def _name(func: Callable) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


def _tensors(value: Any) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [t for v in value for t in _tensors(v)] if isinstance(value, (tuple, list)) else []


def autograd_census(call: Callable[[], Any], modules: list) -> dict[str, Any]:
    """One more call of ``call`` under the interception: ``{"calls", "anomaly", "recording", "gradients",
    "recording_ops", "parameters", "grad_parameters"}``, or ``{"error": ...}`` when the call failed under it."""
    import torch
    from torch.overrides import TorchFunctionMode

    gradient_calls = {torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad}
    counts = Counter()
    recording: Counter = Counter()

    class Census(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            anomaly = torch.is_anomaly_enabled()  # as it runs: a detect_anomaly() block inside the call counts
            out = func(*args, **(kwargs or {}))
            tensors = _tensors(out)
            if func in gradient_calls:
                counts["gradients"] += 1
                return out
            if not tensors:
                return out  # a property read or a size query: not an op
            counts["calls"] += 1
            counts["anomaly"] += anomaly
            if any(t.grad_fn is not None for t in tensors):
                recording[_name(func)] += 1
            return out

    try:
        with Census():
            call()
    except Exception as e:  # the call ran fine untimed; under the interception it did not: say so, go on
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    parameters = list({id(p): p for m in modules for p in m.parameters()}.values())  # a module in two places once
    return {
        "calls": counts["calls"], "anomaly": counts["anomaly"], "gradients": counts["gradients"],
        "recording": sum(recording.values()),
        "recording_ops": dict(recording.most_common(TOP_OPS)),
        "parameters": len(parameters), "grad_parameters": sum(p.requires_grad for p in parameters),
    }
