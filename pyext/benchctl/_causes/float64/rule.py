"""Cause: float64 where float32 was meant (arrays from NumPy are float64 unless made float32, or
``torch.set_default_dtype(torch.float64)`` left on).

The same judgement as half precision's (:class:`benchctl._causes.half.rule.CostlyDtype`): no cell, its
evidence the probe call's op table and the dtype profile; its fix names torch's default dtype where the probe
worker read it as float64 (:mod:`.probe`).
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..half.rule import CostlyDtype
from .probe import PROBE

__all__ = ["DEFAULT_DTYPE_FIX", "Float64", "CAUSES"]

#: The fix where torch's default dtype is float64 (a switch the code left on).
DEFAULT_DTYPE_FIX = ("torch's default dtype is float64 (torch.set_default_dtype(torch.float64) left on): every tensor "
                     "and module made without dtype= is float64; set it back with "
                     "torch.set_default_dtype(torch.float32), and give dtype=torch.float64 only where it is meant")


class Float64(CostlyDtype):
    name = "float64"
    order = 160
    title = "float64 where float32 was meant"
    dtypes = ("double",)
    fix = ("cast to float32 (torch.from_numpy(x).float(), model.float()): arrays from NumPy are float64 unless "
           "made float32")

    def fix_for(self, facts: Facts) -> str:
        default = facts.of(PROBE)
        return DEFAULT_DTYPE_FIX if default is not None and default.is_float64 else self.fix


CAUSES = (Float64(),)
