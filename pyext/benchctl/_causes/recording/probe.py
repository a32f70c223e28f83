"""What autograd does in one call of a workload: the probe worker's evidence for the autograd causes
(this one's and :mod:`benchctl._causes.anomaly`'s), and :class:`AutogradFacts`, which reads it.

:func:`autograd_census` runs the call once more (untimed, after the profiled one, so that its
interception costs nothing in the profile) under a torch function mode that sees each torch call the
code makes from Python (``F.linear``, ``torch.relu``, ``x.sum()``, ``loss.backward()``; the ops they run
inside are one call) and notes, for each, whether anomaly detection was on as it ran, whether its result
records an autograd graph (a ``grad_fn``), and whether it computes gradients (``backward``,
``torch.autograd.grad``). It also counts the parameters of the modules in the workload's state that
require grad. The result is the ``autograd`` key of the probe note (:class:`AutogradProbe` writes it,
:class:`AutogradFacts` reads it; each sentence the causes quote is a method there, so that it is written once).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from ..._probe import CallCensusProbe, NoteFacts, ProbedCall

__all__ = ["TOP_OPS", "autograd_census", "AutogradFacts", "AutogradProbe", "PROBE", "PROBES"]

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


def _calls(n: int) -> str:
    return f"{n:,} torch call{'s' * (n != 1)}"


@dataclass(frozen=True)
class AutogradFacts(NoteFacts):
    """In one call of the workload: ``calls`` torch calls from Python that returned tensors, ``anomaly`` of
    them run with anomaly detection on, ``recording`` whose result records an autograd graph (the most
    frequent by name in ``recording_ops``), ``gradients`` calls that compute gradients (``backward``,
    ``torch.autograd.grad``); ``parameters`` of the modules in its state, ``grad_parameters`` of them
    requiring grad. ``error``: the call failed under the census (then nothing else is known)."""

    calls: int = 0
    anomaly: int = 0
    recording: int = 0
    gradients: int = 0
    recording_ops: dict[str, int] = field(default_factory=dict)
    parameters: int = 0
    grad_parameters: int = 0
    error: str | None = None

    @property
    def known(self) -> bool:
        return self.error is None

    @property
    def anomaly_on(self) -> bool:
        return self.known and self.anomaly > 0

    @property
    def records(self) -> bool:
        return self.known and self.recording > 0

    @property
    def computes_gradients(self) -> bool:
        return self.known and self.gradients > 0

    def anomaly_text(self) -> str:
        """``"anomaly detection on for 14 of 14 torch calls of its probe call"``."""
        return f"anomaly detection on for {self.anomaly:,} of {_calls(self.calls)} of its probe call"

    def recording_text(self) -> str:
        """``"12 of 14 torch calls of its probe call record an autograd graph (linear ×4, relu ×4); 6 of 6
        parameter tensors of its modules require grad"``."""
        ops = ", ".join(f"{name} ×{n}" for name, n in self.recording_ops.items())
        text = (f"{self.recording:,} of {_calls(self.calls)} of its probe call record an autograd "
                f"graph{f' ({ops})' if ops else ''}")
        if self.parameters:
            text += (f"; {self.grad_parameters:,} of {self.parameters:,} parameter "
                     "tensors of its modules require grad")
        return text

    def gradients_text(self) -> str:
        """``"it computes gradients (1 backward or autograd.grad call in its probe call): they are needed"``."""
        n = self.gradients
        return (f"it computes gradients ({n:,} backward or autograd.grad call{'s' * (n != 1)} in its "
                "probe call): they are needed")


#: The probe note's key: written and read here only.
_AUTOGRAD = "autograd"


class AutogradProbe(CallCensusProbe):
    """One more call of the workload under :func:`autograd_census` (none for a workload that times itself)."""

    key = "autograd"
    fact = AutogradFacts
    entry = _AUTOGRAD

    def call_census(self, probed: ProbedCall) -> dict:
        return autograd_census(probed.call, list(probed.modules))


PROBE = AutogradProbe()
PROBES = (PROBE,)
