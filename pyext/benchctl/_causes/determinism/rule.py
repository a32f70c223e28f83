"""Cause: torch's deterministic mode left on.

``torch.use_deterministic_algorithms(True)`` (or a trainer's ``deterministic=True``), set once to
reproduce a run bit for bit and then left in, holds every op to its deterministic kernel and, with
``torch.utils.deterministic.fill_uninitialized_memory`` (on by default), fills every tensor ``torch.empty``
and its kin make: a buffer the code allocates and only partly writes then costs a write of all of it. The
probe worker reads the mode over its timed iterations (:mod:`.probe`): seen off, the cause is out before
any cell runs. The probe is ``deterministic=off``, the code's calls refused (:mod:`.control`) and read
back; the evidence is the time falling with it while the mode was seen on.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.rules import Context
from ..._switched_cause import KeptCause
from .probe import PROBE, DeterminismFacts
from .setting import DETERMINISTIC

__all__ = ["FIX", "DeterministicLeftOn", "CAUSES"]

#: What the user changes when the deterministic mode is the cause.
FIX = ("turn it on only for the runs that must reproduce bit for bit (torch.use_deterministic_algorithms(False), "
       "a trainer's deterministic=False); where it must stay on, torch.utils.deterministic.fill_uninitialized_memory "
       "= False stops the filling of new memory")


class DeterministicLeftOn(KeptCause):
    name = DETERMINISTIC.name
    order = 142
    title = "deterministic algorithms left on"
    setting = DETERMINISTIC
    watch = PROBE
    under = "with the deterministic mode kept off"
    switched = "the deterministic mode kept off"
    unseen = "it was not seen on"
    fix = FIX

    def rule_out(self, facts: Facts, seen: DeterminismFacts) -> str | None:
        return None if seen.seen_on else seen.text()

    def confirms(self, seen: DeterminismFacts) -> bool:
        return seen.seen_on

    def evidence_json(self, ctx: Context) -> dict | None:
        seen = self.seen(ctx.facts)
        return None if seen is None else {"on_before": seen.on_before, "on_after": seen.on_after, "asked": seen.asked,
                                          "warn_only": seen.warn_only, "fills": seen.fills}


CAUSES = (DeterministicLeftOn(),)
