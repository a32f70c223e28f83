"""Cause: torch's CPU kernels dispatched to narrower vector instructions than this CPU has.

torch picks its kernels once per process, from its own CPU check or from
``ATEN_CPU_CAPABILITY``; a left-over ``ATEN_CPU_CAPABILITY=default`` (a debugging
variable kept in a shell profile or a script) runs every vectorised op on its scalar
fallback. The probe worker reads the capability torch chose and this CPU's flags
(:mod:`.probe`); where torch already uses the best one the flags
allow, the cause is out before any cell runs. Otherwise the probe is ``isa=BEST``,
read back from torch inside the worker: no counter shows it, so the evidence is the time
with the capability torch reports on either side.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_text
from .probe import PROBE, Dispatch
from .setting import ISA

__all__ = ["Isa", "CAUSES"]

#: Why nothing is probed where the capability is not known (torch not imported in the call, or not x86).
_UNKNOWN = "torch's kernel capability or this CPU's vector flags were not read in the probe worker"


class Isa(Cause):
    name = ISA.name
    order = 110
    title = "kernel ISA dispatch (ATEN_CPU_CAPABILITY)"
    probe_words = f"{ISA.name}=the best this CPU offers"

    def probes(self, facts: Facts | None) -> list[dict]:
        isa = facts.of(PROBE) if facts is not None else None
        return [{ISA.name: isa.best}] if isa is not None and isa.below_best else []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        isa = facts.of(PROBE)
        if isa is None or isa.best is None:
            return _UNKNOWN
        if not isa.below_best:
            return f"torch dispatches to {isa.text()}, the best this CPU offers (flags: {', '.join(isa.flags)})"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        isa: Dispatch = ctx.facts.of(PROBE)
        probe = probe_text(self.probes(ctx.facts)[0])
        seen = (ctx.readback(cell, ISA.name) or {}).get("capability")
        fields = dict(a=cell, b=ctx.baseline, setting=probe,
                      evidence={"unchanged": isa.used, "forced": isa.forced, "best": isa.best, "probe": seen,
                                "flags": list(isa.flags)})
        ran = f"unchanged it runs {isa.text()}, with {probe} torch read back {seen or 'nothing'}"
        if cmp.faster and seen == isa.best:
            return self.finding(ctx, cmp, f"with {probe} it is {cmp.effect_text()}; {ran}: {mechanism(ISA)}",
                                Status.CAUSE, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with {probe} it is {cmp.effect_text()}, yet {ran}: the mechanism is "
                                          "unconfirmed", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, probe, suffix=f"; {ran}", **fields)


CAUSES = (Isa(),)
