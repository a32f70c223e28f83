"""Cause: ``torch.compile`` compiling again and again (a guard that fails every call).

dynamo guards each compiled frame on what it specialised (a Python int's value, a shape, a
module's attribute); when a guard fails it compiles the frame again, and a value that changes
every step recompiles every step (pytorch #114293: 2.3 s each, the guard ``L['start'] == 6`` on
the loop bound of ``for i in range(start + 1, end)``). No setting can change the code, so the
finding rests on what the probe worker read from dynamo after each timed iteration
(:mod:`benchctl._workloads.probe_compile`): the iterations that compiled, the share of the timed
time compiling took (dynamo's own timer) and the guard that failed.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ..._results.facts import CompileLog, Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import EVIDENCE_ONLY, Cause

__all__ = ["RECOMPILE_SHARE", "NEGLIGIBLE_SHARE", "MECHANISM", "Recompiles", "guard_text", "CAUSES"]

#: Compiling at least this share of the timed iterations' time: the recompiles are what to remove.
RECOMPILE_SHARE = 0.5
#: Compiling under this share of the timed time cannot explain it.
NEGLIGIBLE_SHARE = 0.05
MECHANISM = ("a guard on a value that changes between calls fails and dynamo compiles the function again (past "
             "torch._dynamo.config.recompile_limit it falls back to eager): pass the changing Python value as a "
             "tensor, mark the changing dimension dynamic (torch._dynamo.mark_dynamic), or keep the loop over it "
             "outside the compiled function")


def guard_text(guard: str) -> str:
    """A guard failure as dynamo words it, on one line, without the location of dynamo's own source:
    ``"0/7: start == 7 # for i in range(start + 1, end)"``."""
    parts = " ".join(guard.split()).split(" # ")
    return " # ".join(parts[:2]).rstrip(":")


def _recompiled(log: CompileLog) -> int:
    """Timed iterations after the first in which dynamo compiled (the first may compile once: warm-up)."""
    return sum(1 for c in log.compiles[1:] if c)


class Recompiles(Cause):
    name = "recompiles"
    order = 190
    title = "torch.compile recompiling"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        log = facts.compile
        if log is None:
            return "torch.compile did not run in its timed iterations (dynamo was not loaded)"
        if not log.compiling_iterations:
            return f"torch.compile compiled nothing in its {len(log.compiles)} timed iterations"
        if not _recompiled(log):
            return ("torch.compile compiled in its first timed iteration only: one compile, which the warm-up "
                    "cause judges")
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        facts = ctx.facts
        log = None if facts is None or not facts.phases or ctx.phase != facts.phases[-1] else facts.compile
        if log is None or not log.compiles:
            return None
        share, again = log.compile_share(), _recompiled(log)
        compile_ms = [s * 1e3 for s in log.compile_s if s > 0]
        each = f" ({float(np.median(compile_ms)):.3g} ms a compile, median)" if compile_ms else ""
        said = f"dynamo compiled again in {again} of its {len(log.compiles) - 1} timed iterations after the first"
        said += "" if share is None else f"; compiling took {share:.0%} of the timed time{each}"
        if log.guards:
            said += f"; the guard that failed: {guard_text(log.guards[0])}"
        evidence = {"compile": asdict(log), "compile_share": share}
        if share is None:
            return self.finding(ctx, None, f"{said}; dynamo's compile timer recorded nothing, so what the compiles "
                                           "cost is not measured", Status.UNCONFIRMED, evidence=evidence)
        if not again or share < NEGLIGIBLE_SHARE:
            return self.finding(ctx, None, f"{said}: under {NEGLIGIBLE_SHARE:.0%}", Status.NOT_CAUSE,
                                evidence=evidence)
        if share < RECOMPILE_SHARE:
            return self.finding(ctx, None, f"{said}; under {RECOMPILE_SHARE:.0%}, they explain part of the time at "
                                           "most", Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{said}: {MECHANISM}; {EVIDENCE_ONLY}", Status.CAUSE, evidence=evidence)


CAUSES = (Recompiles(),)
