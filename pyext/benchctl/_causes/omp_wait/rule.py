"""Cause: idle OpenMP team threads spinning on CPUs the workload's other threads or processes need.

After each parallel region torch's team threads spin before they sleep (libgomp's
``GOMP_SPINCOUNT``, Intel's and LLVM's ``KMP_BLOCKTIME``): free on CPUs nobody else
wants, a loss when the workload's own prefetching thread, another pool or its data-loading
processes need them (#177906: ``KMP_BLOCKTIME=0`` restored the CPU use). The probe worker
reads the runtime, its team and wait variables, and the CPUs the workload's other threads
and children kept busy over its timed iterations (:mod:`.probe`);
with one team thread, a policy already passive, or nothing else of its own running, the
cause is out before any cell runs. The probe is ``omp_wait=passive``, one change read back
from inside the worker (the runtime loaded and the variables it started with); the evidence
is the time with it. Context switches per iteration are quoted, not required: passive team
threads sleep and are woken for each region, yet on a loaded machine a spinning thread is
preempted as often (60 and 62 a step on the planted workload here, in benchctl's
process-wide count).
"""

from __future__ import annotations

from ..._results import counter_evidence
from ..._results.counter_evidence import CONTEXT_SWITCHES
from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from .probe import PROBE
from .setting import OMP_WAIT, PASSIVE_WAIT, RUNTIME_WAIT_VARIABLES

__all__ = ["QUIET_BESIDE_CPUS", "QUIET_BESIDE_MS", "OmpWait", "CAUSES"]

#: Fewer CPUs than this kept busy by the workload's other threads and children over the probe worker's
#: timed iterations: nothing of its own ran beside the team. A thread that runs at all can be kept waiting
#: by a spinning team: the planted prefetching thread, waking once a step, used 0.01-0.4 CPUs; plain.py's
#: 0.00002.
QUIET_BESIDE_CPUS = 0.005
#: ... or fewer CPU milliseconds than this in all. Watched over one short profiled call (as first built),
#: the profiler's own thread took 0.14 ms of plain.py's, and the planted prefetching thread once 4.1 ms
#: (0.40 CPUs), which this floor ruled out; over every timed iteration it takes tens of milliseconds.
QUIET_BESIDE_MS = 5.0


class OmpWait(Cause):
    name = OMP_WAIT.name
    order = 100
    title = "OpenMP wait policy (spinning team threads)"
    probe = probe_of(OMP_WAIT)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        wait = facts.of(PROBE)
        if wait is None:
            return "how torch's OpenMP team waits was not read in the probe worker"
        if wait.runtime is None:
            return "no OpenMP runtime is loaded: no team to spin"
        if wait.team <= 1:
            return f"torch's {wait.runtime} team is one thread: no idle team thread to spin"
        if wait.passive is not None:
            return f"its {wait.runtime} team already sleeps at once ({wait.passive})"
        if wait.beside_cpus is not None and (wait.beside_cpus < QUIET_BESIDE_CPUS
                                             or (wait.beside_ms is not None and wait.beside_ms < QUIET_BESIDE_MS)):
            return (f"nothing of its own ran beside torch's {wait.team}-thread {wait.runtime} team (its other "
                    f"threads and child processes kept {wait.beside_cpus:.3f} CPUs busy, {wait.beside_ms or 0:.1f} "
                    "CPU ms, over the probe's timed iterations): "
                    "spinning only burns CPUs nothing else of it wanted")
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return None
        cell, cmp = probed
        before, after = ctx.counter(ctx.baseline, CONTEXT_SWITCHES), ctx.counter(cell, CONTEXT_SWITCHES)
        switches = counter_evidence.change_text(CONTEXT_SWITCHES, before, after)
        wait = ctx.facts.of(PROBE) if ctx.facts else None
        beside = "" if wait is None or wait.beside_cpus is None else \
            f"; its other threads and child processes kept {wait.beside_cpus:.3f} CPUs busy beside the team"
        probe = probe_text(self.probe)
        fields = dict(a=cell, b=ctx.baseline, setting=probe,
                      evidence={CONTEXT_SWITCHES: {"default": before, "passive": after},
                                "readback": ctx.readback(cell, OMP_WAIT.name),
                                "beside_cpus": None if wait is None else wait.beside_cpus})
        readback = ctx.readback(cell, OMP_WAIT.name) or {}
        took = _took_effect(readback)
        phrase = f"; {OMP_WAIT.facts_phrase(readback)}" if readback else ""
        if cmp.faster and took:
            return self.finding(ctx, cmp, f"with {probe} it is {cmp.effect_text()}{phrase}; {switches}{beside}: "
                                          f"{mechanism(OMP_WAIT)}", Status.CAUSE, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"with {probe} it is {cmp.effect_text()}, yet no OpenMP runtime was read "
                                          f"back starting with the passive policy{phrase}: the mechanism is "
                                          "unconfirmed", Status.UNCONFIRMED, **fields)
        return self.not_found(ctx, cmp, probe, suffix=f"{phrase}; {switches}{beside}", **fields)


def _took_effect(readback: dict) -> bool:
    """Whether a runtime loaded was started with one of its own variables passive (the readback of
    ``omp_wait=passive``): ``GOMP_SPINCOUNT=0`` alone stops libgomp's spinning, ``KMP_BLOCKTIME=0`` Intel's."""
    variables, loaded = readback.get("variables") or {}, readback.get("runtimes") or ()
    return any(any(variables.get(name) == PASSIVE_WAIT[name] for name in own)
               for runtime, own in RUNTIME_WAIT_VARIABLES.items() if runtime in loaded)


CAUSES = (OmpWait(),)
