"""What autograd did in the probe worker's call: the evidence of the anomaly and recording causes.

Read from the ``autograd`` key of the probe note, which
:func:`benchctl.workloads.probe_autograd.autograd_census` writes; each sentence the causes quote
is a method here, so that it is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AutogradFacts"]


def _calls(n: int) -> str:
    return f"{n:,} torch call{'s' * (n != 1)}"


@dataclass(frozen=True)
class AutogradFacts:
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

    @classmethod
    def from_note(cls, note: dict | None) -> "AutogradFacts | None":
        """The facts of the probe note's ``autograd`` entry; None where the probe call was not watched."""
        if note is None:
            return None
        return cls(**{k: v for k, v in note.items() if k in cls.__dataclass_fields__})

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
