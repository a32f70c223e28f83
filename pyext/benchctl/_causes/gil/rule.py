"""Cause: another Python thread of the process holding the GIL while the calls run.

A thread the code started (a metrics or logging loop, a watchdog, a prefetcher working in Python) runs its Python
only while it holds the GIL. The calling thread lets the GIL go inside torch's ops and must take it back after each:
while the other thread runs Python it waits, up to the interpreter's switch interval (5 ms) each time, however
short the op (a 0.15 ms call of 20 small layers took 0.2 s beside a thread spinning in Python on this 2-CPU VM).
No setting stops a thread of the code's own, so the finding rests on the probe worker's count (:mod:`.probe`): the
other Python threads' CPU time over the timed iterations against the time the calling thread ran on a CPU in them.
It is never more than open (``?``): their CPU time counts native code that lets the GIL go, too; where the library
split of the timed calls puts Python's side of the process's CPU under :data:`PYTHON_SHARE` of theirs, they ran such
code, and it is not the cause.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import NOT_WATCHED, Cause
from ..python_time.rule import PYTHON_KINDS, usable_split
from .probe import PROBE, PythonThreads

__all__ = ["NEGLIGIBLE_CPUS", "BUSY_CPUS", "WAITED_SHARE", "PYTHON_SHARE", "MECHANISM", "FIX", "GilHolders", "CAUSES"]

#: Other Python threads that kept fewer CPUs than this busy beside the calls cannot explain their time: out before
#: running.
NEGLIGIBLE_CPUS = 0.05
#: From this many CPUs of other Python threads beside the calls ...
BUSY_CPUS = 0.25
#: ... and a calling thread off its CPU for this share of the calls' time or more, the cause is open (``?``).
WAITED_SHARE = 0.25
#: Where the library split was sampled, Python's side (the interpreter, torch's conversions) of the process's CPU time
#: over the timed calls must reach this share of the other threads' CPU time: under it they ran native code that lets
#: the GIL go (a pool compressing with zlib, whose results the step waited for), and hold no GIL.
PYTHON_SHARE = 0.5
MECHANISM = ("a Python thread runs its Python only while it holds the GIL, and the calling thread, which lets the GIL "
             "go inside torch's ops, waits to take it back, up to the interpreter's switch interval "
             "(sys.getswitchinterval(), 5 ms) each time")
FIX = ("let that thread block while it has nothing to do (a queue.get, an Event.wait, time.sleep between its rounds) "
       "instead of spinning, move its work to a process of its own (multiprocessing), or do it in native code that "
       "lets the GIL go")


def _seen(facts: Facts | None) -> PythonThreads | None:
    return facts.of(PROBE) if facts is not None else None


class GilHolders(Cause):
    name = "gil"
    order = 168
    title = "another Python thread holding the GIL beside the calls"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = _seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing="no call shows the threads beside it")
        if seen.others_cpus < NEGLIGIBLE_CPUS:
            return (f"no other Python thread ran beside its timed calls (they took {seen.others_ms:,.0f} ms of CPU "
                    f"over its {seen.wall_ms:,.0f} ms of timed calls: under {NEGLIGIBLE_CPUS} CPUs)")
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        seen = _seen(ctx.facts)
        if seen is None or ctx.phase != ctx.facts.called_phase() or seen.others_cpus < NEGLIGIBLE_CPUS:
            return None
        evidence = {"python_threads": ctx.facts.to_json()["probed"].get(PROBE.key)}
        waited = 1.0 - seen.caller_on_cpu
        if seen.others_cpus < BUSY_CPUS or waited < WAITED_SHARE:
            return self.finding(ctx, None, f"{seen.text()}: under {BUSY_CPUS} CPUs of them, or a calling thread off "
                                           f"its CPU for under {WAITED_SHARE:.0%} of the time, cannot explain it",
                                Status.NOT_CAUSE, evidence=evidence)
        native = _native_work(ctx.facts, seen)
        if native is not None:
            return self.finding(ctx, None, f"{seen.text()}, yet {native}", Status.NOT_CAUSE, evidence=evidence)
        return self.finding(ctx, None, f"{seen.text()}: {MECHANISM}; no setting here stops a thread of its own, so "
                                       f"this is not measured (their CPU time counts native work that lets the GIL go, "
                                       f"too); the fix: {FIX}", Status.UNCONFIRMED, evidence=evidence)


def _native_work(facts: Facts, seen: PythonThreads) -> str | None:
    """Where the library split says the other threads' CPU time went to native code (Python's side of the process's
    CPU under :data:`PYTHON_SHARE` of theirs), why in words; None otherwise or where no split was sampled."""
    split, _ = usable_split(facts)
    if split is None or split.cpu_ns <= 0:
        return None
    python_ms = sum(split.share(k) or 0.0 for k in PYTHON_KINDS) * split.cpu_ns / 1e6
    if python_ms >= PYTHON_SHARE * seen.others_ms:
        return None
    return (f"Python's side took {python_ms:,.0f} ms of the process's CPU over its timed calls, under "
            f"{PYTHON_SHARE:.0%} of theirs: they ran native code that lets the GIL go ({split.text()})")


CAUSES = (GilHolders(),)
