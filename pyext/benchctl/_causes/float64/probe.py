"""What the probe worker records for the float64 cause: torch's default dtype as the profiled call ran
(``torch.set_default_dtype(torch.float64)`` left on since the code's import or setup makes every tensor and
module made without ``dtype=`` float64: a switch, not an array from NumPy, and its own fix)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._probe import Probe, ProbedCall

__all__ = ["DefaultDtype", "DefaultDtypeProbe", "PROBE", "PROBES"]

#: The probe note's key, written and read here only.
_DEFAULT_DTYPE = "default_dtype"


@dataclass(frozen=True)
class DefaultDtype:
    """torch's default floating dtype after the profiled call (``"torch.float64"``)."""

    dtype: str

    @property
    def is_float64(self) -> bool:
        return self.dtype == "torch.float64"


class DefaultDtypeProbe(Probe):
    """torch's default dtype as the code left it (none for a workload that times itself: it may set its own
    inside its timed regions, which no call shows)."""

    key = "default_dtype"
    fact = DefaultDtype

    def record(self, probed: ProbedCall) -> dict:
        if probed.call is None:
            return {}
        import torch

        return {_DEFAULT_DTYPE: str(torch.get_default_dtype())}

    def read(self, note: dict) -> Any:
        dtype = note.get(_DEFAULT_DTYPE)
        return None if dtype is None else DefaultDtype(dtype)


PROBE = DefaultDtypeProbe()
PROBES = (PROBE,)
