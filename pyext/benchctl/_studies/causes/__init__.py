"""The causes ``benchctl explain`` and the seed scripts judge: the ``CAUSES`` of every cause package's rule
(benchctl's own, ``benchctl._causes.<name>.rule``, and those of installed packages: :mod:`benchctl._plugins`),
in the answer's order (:attr:`Cause.order`).
"""

from ... import _plugins
from ..._cause import Cause

__all__ = ["Cause", "CAUSES"]

CAUSES: tuple[Cause, ...] = tuple(sorted(_plugins.gathered("rule", "CAUSES"), key=lambda c: c.order))
