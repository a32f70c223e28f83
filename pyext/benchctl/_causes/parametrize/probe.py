"""What the probe worker learns of parametrized tensors: those of the modules in the workload's state, and
one more call of the workload (untimed, after the profiled one) with every recompute counted
(:func:`census`); :class:`ParametrizeFacts` reads it back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..._probe import CallCensusProbe, NoteFacts, ProbedCall

__all__ = ["kind", "census", "ParametrizeFacts", "ParametrizeProbe", "PROBE", "PROBES"]

# The probe note's key, written and read here only.
_PARAMETRIZE = "parametrize"


def kind(parametrizations: Iterable) -> str:
    """``"orthogonal"``, ``"weight_norm"``, ``"MyParametrization"``: what a tensor's ``ParametrizationList``
    chains (torch's own by the function that registers it), joined by ``+``."""
    names = []
    for p in parametrizations:
        name = type(p).__name__
        # torch's own are private classes named after their function: _Orthogonal, _SpectralNorm, _WeightNorm
        names.append("".join(f"_{c.lower()}" if c.isupper() else c for c in name).strip("_")
                     if name.startswith("_") else name)
    return "+".join(names)


def census(call: Callable[[], Any], modules: Iterable) -> dict[str, Any]:
    """One more call of ``call`` with every recompute of a parametrized tensor counted: ``{"tensors":
    parametrized tensors of ``modules`` (and their submodules) or recomputed in the call, "recomputed": those
    recomputed, "recomputes": recomputes in all, "most": recomputes of the one recomputed most, "kinds": {kind:
    tensors}}``, or ``{"error": ...}`` when the call failed under it."""
    from torch.nn.utils import parametrize

    lists = {id(p): p for m in modules for sub in m.modules() if parametrize.is_parametrized(sub)
             for p in sub.parametrizations.values()}
    counts: Counter = Counter()
    own = parametrize.ParametrizationList.forward

    def counting(self) -> Any:
        counts[id(self)] += 1
        lists.setdefault(id(self), self)  # a module its state does not reach
        return own(self)

    parametrize.ParametrizationList.forward = counting
    try:
        call()
    except Exception as e:  # the call ran fine untimed; under the count it did not: say so, go on
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    finally:
        parametrize.ParametrizationList.forward = own
    return {"tensors": len(lists), "recomputed": len(counts), "recomputes": sum(counts.values()),
            "most": max(counts.values(), default=0),
            "kinds": dict(Counter(kind(p) for p in lists.values()).most_common())}


@dataclass(frozen=True)
class ParametrizeFacts(NoteFacts):
    """In one call of the workload: ``tensors`` parametrized tensors (of the modules in its state, or recomputed
    in the call), ``recomputed`` of them recomputed, ``recomputes`` in all, ``most`` of the one recomputed most,
    ``kinds`` tensors by parametrization. ``error``: the call failed under the count (then nothing else is known)."""

    tensors: int = 0
    recomputed: int = 0
    recomputes: int = 0
    most: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def known(self) -> bool:
        return self.error is None

    @property
    def recomputed_again(self) -> bool:
        """Whether a tensor was recomputed more than once in the call (what a cache around the call saves)."""
        return self.known and self.most > 1

    def text(self) -> str:
        """``"its probe call recomputed 4 parametrized tensors 32 times (up to 8 times each; 4 orthogonal)"``."""
        kinds = ", ".join(f"{n:,} {name}" for name, n in self.kinds.items())
        return (f"its probe call recomputed {self.recomputed:,} parametrized tensor{'s' * (self.recomputed != 1)} "
                f"{self.recomputes:,} times (up to {self.most:,} times each; {kinds})")

    def none_text(self) -> str:
        """Why a cache around the call would change nothing: no parametrized tensor, or none read twice."""
        if not self.tensors:
            return "no parametrized tensor in the modules of its state or recomputed in its probe call"
        return (f"no parametrized tensor recomputed twice in its probe call ({self.recomputes:,} recomputes of "
                f"{self.tensors:,} tensors): parametrize.cached() around the call would compute as many")


class ParametrizeProbe(CallCensusProbe):
    """One more call of the workload under :func:`census` (none for a workload that times itself)."""

    key = "parametrize"
    fact = ParametrizeFacts
    entry = _PARAMETRIZE

    def call_census(self, probed: ProbedCall) -> dict:
        return census(probed.call, probed.modules)


PROBE = ParametrizeProbe()
PROBES = (PROBE,)
