"""Cause: float64 where float32 was meant (arrays from NumPy are float64 unless made float32).

The same judgement as half precision's (:class:`benchctl._causes.half.rule.CostlyDtype`): no cell, its
evidence the probe call's op table and the dtype profile.
"""

from __future__ import annotations

from ..half.rule import CostlyDtype

__all__ = ["Float64", "CAUSES"]


class Float64(CostlyDtype):
    name = "float64"
    order = 160
    title = "float64 where float32 was meant"
    dtypes = ("double",)
    fix = ("cast to float32 (torch.from_numpy(x).float(), model.float()): arrays from NumPy are float64 unless "
           "made float32")


CAUSES = (Float64(),)
