"""Cause: torch runs fewer threads than the CPUs the process may use, a count its environment set.

torch sizes its team to the usable CPUs by itself; ``OMP_NUM_THREADS=1`` (or ``MKL_NUM_THREADS``) in its
environment leaves the other CPUs idle through every op that would split its work. The evidence, from the probe
worker's profiled call once the code has run: torch's count against the CPUs its threads may use
(:mod:`..cpu_fit.probe`), the counts the code gave ``torch.set_num_threads`` and those variables. The probe
holds torch's count at every usable CPU, also against the code's own calls (``clamp=all``), and reads back what
the code asked for and what ran. The threads cause's ``threads=1`` probe is the other direction (fewer threads),
which such a count leaves nothing to change.

A count the code sets itself (``torch.set_num_threads(1)`` in ``setup()`` or at its import, as a benchmark that
wants one thread writes it) is taken as its choice and not probed: the answer would otherwise name it beside
whatever the code's time is about, for every such benchmark. A count its environment sets without the code
asking (``OMP_NUM_THREADS=1``, which ``torchrun`` sets for every process it starts where it starts more than one
per node, or a job script's) is what this cause is for.
"""

from __future__ import annotations

from dataclasses import asdict

from ..._results.facts import Facts
from ..._results.findings import MECHANISM_UNCONFIRMED, Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, probe_text
from ..cpu_fit.probe import COUNT_VARIABLES, PROBE as CPU_FIT
from ..cpu_fit.setting import CLAMP

__all__ = ["FewThreads", "MECHANISM", "FIX", "CAUSES"]

MECHANISM = "torch ran fewer threads than the CPUs it may use: the others sat idle through ops that split their work"
FIX = ("leave the count to torch (unset OMP_NUM_THREADS / MKL_NUM_THREADS where the process starts; with torchrun, "
       "set OMP_NUM_THREADS to the CPUs each of its processes may use), or set it in the code "
       "(torch.set_num_threads(len(os.sched_getaffinity(0))))")


class FewThreads(Cause):
    name = "few_threads"
    order = 95
    title = "fewer torch threads than the usable CPUs (a count its environment set)"
    probe = {CLAMP.name: "all"}

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        fit = facts.of(CPU_FIT)
        if fit is None:
            return "torch's thread count after its code ran is not known (no profiled call)"
        if fit.threads >= fit.usable:
            return f"torch runs {fit.threads} thread(s) on the {fit.usable} CPU(s) it may use: none left idle"
        every = f"(--set {CLAMP.name}=off,all in benchctl run measures every CPU)"
        if fit.asked and fit.asked[-1] == fit.threads:
            return (f"its own code sets torch's count ({fit.asked_text}) below the {fit.usable} CPU(s) it may use: "
                    f"taken as its choice {every}")
        if fit.environment_count is None:
            return (f"torch runs {fit.threads} thread(s) on the {fit.usable} CPU(s) it may use, a count no variable "
                    f"of its environment sets ({', '.join(COUNT_VARIABLES)}): its code's own, set at its import, "
                    f"taken as its choice {every}")
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        fit = ctx.facts.of(CPU_FIT) if ctx.facts else None
        held = ctx.readback(cell, CLAMP.name) or {}
        phrase = CLAMP.facts_phrase(held)
        ran = f" ({phrase})" if phrase else ""
        said = fit.environment_count if fit is not None else None
        before = "" if said is None else (f"; unchanged it ran {fit.threads} thread(s) on the {fit.usable} CPU(s) it "
                                          f"may use, as {said[0]}={said[1]} in its environment asks")
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={CLAMP.name: held, "cpu_fit": None if fit is None else asdict(fit)})
        if cmp.faster:
            head = f"with torch's threads held at every CPU it may use{ran} it is {cmp.effect_text()}{before}"
            if held.get("usable") and held.get("ran") != held["usable"]:
                return self.finding(ctx, cmp, f"{head}, yet the count did not hold at every usable CPU: "
                                              f"{MECHANISM_UNCONFIRMED}", Status.UNCONFIRMED, **fields)
            return self.finding(ctx, cmp, f"{head}: {MECHANISM}; the fix: {FIX}", Status.CAUSE, **fields)
        if cmp.slower:
            return self.finding(ctx, cmp, f"with torch's threads held at every CPU it may use{ran} it is "
                                          f"{cmp.effect_text()}{before}: its count is not what slows it",
                                Status.NOT_CAUSE, **fields)
        return self.not_found(ctx, cmp, "threads held at every usable CPU", suffix=f"{ran}{before}", **fields)


CAUSES = (FewThreads(),)
