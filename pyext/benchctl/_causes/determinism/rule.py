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
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from .probe import PROBE, DeterminismFacts
from .setting import DETERMINISTIC

__all__ = ["FIX", "DeterministicLeftOn", "CAUSES"]

#: What the user changes when the deterministic mode is the cause.
FIX = ("turn it on only for the runs that must reproduce bit for bit (torch.use_deterministic_algorithms(False), "
       "a trainer's deterministic=False); where it must stay on, torch.utils.deterministic.fill_uninitialized_memory "
       "= False stops the filling of new memory")


class DeterministicLeftOn(Cause):
    name = DETERMINISTIC.name
    order = 142
    title = "deterministic algorithms left on"
    probe = probe_of(DETERMINISTIC)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen: DeterminismFacts | None = facts.of(PROBE)
        if seen is None:
            return None  # its iterations were not watched: nothing rules it out
        return None if seen.seen_on else seen.text()

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return self.not_run(ctx, ctx.probe_cell(self.probe))
        cell, cmp = probed
        seen: DeterminismFacts | None = ctx.facts.of(PROBE) if ctx.facts else None
        readback = ctx.readback(cell, DETERMINISTIC.name) or {}
        phrase = DETERMINISTIC.facts_phrase(readback)
        read = f"; {phrase}" if phrase else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"determinism": None if seen is None else {
                          "on_before": seen.on_before, "on_after": seen.on_after, "asked": seen.asked,
                          "warn_only": seen.warn_only, "fills": seen.fills}, "readback": readback})
        on = seen.text() if seen is not None and seen.seen_on else None
        if cmp.faster and on is None and not readback.get("refused"):
            return self.finding(ctx, cmp, f"with the deterministic mode kept off it is {cmp.effect_text()}{read}, "
                                          "yet it was not seen on: the mechanism is unconfirmed",
                                Status.UNCONFIRMED, **fields)
        if cmp.faster:
            why = f"{on}{read}" if on else phrase  # the readback is the evidence where the probe saw none
            return self.finding(ctx, cmp, f"with the deterministic mode kept off it is {cmp.effect_text()}; {why}: "
                                          f"{mechanism(DETERMINISTIC)}; the fix: {FIX}", Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, "the deterministic mode kept off", suffix=read + (f"; {on}" if on else ""),
                              **fields)


CAUSES = (DeterministicLeftOn(),)
