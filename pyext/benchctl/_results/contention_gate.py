"""The contention gate: a worker that ran beside other load is set aside, by a rule fixed before any timing.

Each worker measures what ran beside it (:class:`benchctl._cpustat.BusySampler`: the CPUs other
processes and the hypervisor's steal kept busy over its run, a counter of the machine, never the
worker's own time). A worker is set aside when other load took more than :data:`GATE_CPUS` CPUs beside
it beyond the run's usual load (:func:`usual_load`) while fewer than :data:`GATE_CPUS` stayed idle: the
neighbour then took CPU time the workload could have used, and took it from this worker more than from
the others. A neighbour on CPUs the workload leaves idle (one thread on a 16-CPU machine) sets nothing
aside; nor does a steady one after the first two workers: it falls on every cell alike (their rounds
interleave, and the A/A control runs beside it too), where setting every worker aside would leave nothing
to compare (a 2-CPU VM beside two 50%-duty neighbours set aside 28 of 29 workers in two runs, and answered
nothing). The rule reads no timing, so setting a worker aside cannot lean towards an outcome; the A/A
control's arms follow it as every cell does.

The usual load is the median beside the run's earlier kept workers and beside those set aside two in a row
(:data:`PERSISTED`): a load beside two gated workers in a row, each judged against the usual load without
the other, is the machine's state (each worker's load is an average over its run, so the next worker
tells it at the same time scale); one the next worker did not see was a burst, and counting it, as the
rule did before, made the next worker in the same burst usual (a 1-second worker beside 30% bursts of
0.5-3 s: set aside at 0.99 CPUs, the next kept at 0.02, the one after kept at 0.98 against their median
0.51, its paired ratio 10.9 where the others gave 0.52). A steady neighbour costs the first two workers.

The runner waits (at most :data:`QUIET_WAIT_S`) for the load to drop to what the gate admits before each
worker, runs a set-aside slot again in the budget left (at most :data:`RETRIES` times), and keeps every
set-aside worker in the document's ``set_aside`` list, out of every comparison; the report says how many
and why, and the answer says first when the machine was busy beside most workers, how busy, and what to do.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Sequence

from .. import _validate, settings as _settings
from .document import CONTROL_ARM

__all__ = ["ENV_VAR", "GATE_CPUS", "QUIET_WAIT_S", "QUIET_SAMPLE_S", "RETRIES", "KEY", "PERSISTED", "Beside",
           "usual_load", "loads_of_the_usual", "described", "reason", "set_aside", "quiet_wait_s", "report_lines",
           "too_busy"]

#: The environment variable that sets :data:`GATE_CPUS` for a process and the workers it starts (``inf``: no
#: gate; the test suite sets it so that its verdicts do not depend on how busy the machine is).
ENV_VAR = "BENCHCTL_GATE_CPUS"
#: Other load (CPUs, steal included) beyond which a worker that also left fewer idle CPUs than this is set
#: aside: half a CPU is a quarter of this 2-CPU machine, where a two-thread workload then lost up to a
#: quarter of its CPU time to the neighbour.
GATE_CPUS = 0.5


def _from_environment(default: float) -> float:
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:  # NaN too
        raise _validate.ArgumentError(f"{ENV_VAR}={text!r}: give a positive number of CPUs (inf: no gate)")
    return value


GATE_CPUS = _from_environment(GATE_CPUS)
#: The longest the runner waits for other load to drop to :data:`GATE_CPUS` before starting a worker.
QUIET_WAIT_S = 30.0
#: How long one look at the machine's load lasts while waiting for a quiet moment.
QUIET_SAMPLE_S = 0.25
#: How many times a set-aside slot is run again (each within the budget left).
RETRIES = 2
#: The document's list of set-aside workers.
KEY = "set_aside"
#: Marks a set-aside worker whose load was beside the gated worker before or after it too: part of the usual load.
PERSISTED = "load_persisted"


@dataclass(frozen=True)
class Beside:
    """What ran beside one worker, from its ``beside`` record: CPUs other load kept busy (steal included),
    CPUs left idle, and the machine's CPUs; None where it could not be read."""

    other_cpus: float | None
    idle_cpus: float | None

    @classmethod
    def of(cls, record: dict) -> "Beside":
        beside = record.get("beside") or {}
        busy, cpus = beside.get("busy_cpus"), beside.get("cpus")
        other = beside.get("other_cpus")
        if other is not None:
            other += beside.get("steal_cpus") or 0.0
        return cls(other, None if busy is None or cpus is None else max(0.0, cpus - busy))

    def contended(self, usual: float = 0.0) -> bool:
        """Whether other load took CPU time from this worker: more than :data:`GATE_CPUS` CPUs beside it beyond
        ``usual`` (the run's usual load) while fewer than :data:`GATE_CPUS` stayed idle. Unknown load: no."""
        if self.other_cpus is None or self.idle_cpus is None:
            return False
        return self.other_cpus > usual + GATE_CPUS and self.idle_cpus < GATE_CPUS


def usual_load(earlier: Sequence[float]) -> float:
    """The run's usual other load: the median of ``earlier`` (:func:`loads_of_the_usual`; 0 before any)."""
    return statistics.median(earlier) if earlier else 0.0


def loads_of_the_usual(kept: Sequence[dict], aside: Sequence[dict]) -> list[float]:
    """The loads the usual load is the median of: beside each kept worker of ``kept`` and each of ``aside`` marked
    :data:`PERSISTED` (where recorded)."""
    chosen = [*kept, *(r for r in aside if r.get(PERSISTED))]
    return [b for b in (Beside.of(r).other_cpus for r in chosen) if b is not None]


def described() -> dict:
    """The gate as a results file keeps it (``cpus`` None: no gate)."""
    return {"cpus": GATE_CPUS if GATE_CPUS != float("inf") else None, "retries": RETRIES,
            "quiet_wait_s": QUIET_WAIT_S,
            "beyond": "the median other load beside the run's earlier kept workers and those set aside two in a row"}


def _rule() -> str:
    return (f"the gate: over {GATE_CPUS} CPUs beside a worker beyond the run's usual load, while under {GATE_CPUS} "
            "stay idle")


def reason(record: dict, earlier: Sequence[float] = ()) -> str | None:
    """Why the gate sets this worker aside, or None: it is kept (a failed worker is not the gate's). ``earlier``:
    the loads of the run's usual load so far (:func:`loads_of_the_usual`)."""
    if record.get("status") != "ok":
        return None
    beside, usual = Beside.of(record), usual_load(earlier)
    if not beside.contended(usual):
        return None
    return (f"other load kept {beside.other_cpus:.2f} CPUs busy beside it with {beside.idle_cpus:.2f} idle, "
            f"where the run's usual load was {usual:.2f} ({_rule()})")


def set_aside(doc: dict) -> list[dict]:
    """The workers the gate set aside in this document ([] for a document written before the gate)."""
    return doc.get(KEY) or []


def quiet_wait_s(doc: dict) -> float:
    """The seconds the runner waited in all for quiet moments before this document's workers."""
    return (doc.get("metadata", {}).get("runner", {}) or {}).get("quiet_wait_s") or 0.0


def _cell_text(record: dict) -> str:
    return _settings.cell_label(record["cell"]) + (" [A/A arm B]" if record.get("arm") == CONTROL_ARM else "")


def report_lines(doc: dict) -> list[str]:
    """The report's paragraph on the gate: how many workers it set aside, how busy the machine was beside them,
    and how long the runner waited for quiet moments."""
    aside = set_aside(doc)
    waited = quiet_wait_s(doc)
    if not aside and waited < QUIET_SAMPLE_S * 4:
        return []
    lines = [""]
    if aside:
        loads = [Beside.of(r).other_cpus or 0.0 for r in aside]
        cells = sorted({_cell_text(r) for r in aside})
        persisted = sum(bool(r.get(PERSISTED)) for r in aside)
        usual = (f"; {persisted} of them were set aside two in a row, and the load beside them counts in the usual "
                 "load since" if persisted else "")
        lines.append(f"contention gate: {len(aside)} worker(s) set aside, other load beside them "
                     f"{min(loads):.2f}-{max(loads):.2f} CPUs ({_rule()}; decided before any timing); their cells "
                     f"ran again in the budget left: {', '.join(cells)}{usual}")
    if waited >= QUIET_SAMPLE_S * 4:
        lines.append(f"the runner waited {waited:.0f} s in all for other load to drop to what the gate admits "
                     f"before starting workers (at most {QUIET_WAIT_S:.0f} s each)")
    return lines


_WHAT_TO_DO = ("run it again when less runs beside it (close other programs; `uptime` shows the load) or give it a "
               "larger --budget")


def too_busy(doc: dict, settled: bool = False) -> str | None:
    """The answer's first line when the machine was busy beside most workers: at least half of them set aside,
    or at least half of the kept ones run beside more than :data:`GATE_CPUS` CPUs of a steady load the gate
    kept; None otherwise. ``settled``: every finding of the answer is settled (none open), so the steady load
    left it whole."""
    aside = set_aside(doc)
    kept = [r for r in doc.get("runs", []) if r.get("status") == "ok"]
    if aside and len(aside) >= len(kept):
        loads = [Beside.of(r).other_cpus or 0.0 for r in aside]
        return (f"the machine was too busy for a full answer: {len(aside)} of {len(aside) + len(kept)} workers ran "
                f"beside other load (a median {statistics.median(loads):.2f} CPUs, up to {max(loads):.2f}) and were "
                f"set aside; {_WHAT_TO_DO}")
    busy = [r for r in kept if Beside.of(r).contended()]
    if not busy or 2 * len(busy) < len(kept):
        return None
    loads = [Beside.of(r).other_cpus for r in busy]
    beside = (f"{len(busy)} of {len(kept)} workers ran beside other load (a median {statistics.median(loads):.2f} "
              f"CPUs, up to {max(loads):.2f}), kept as a steady load that fell on every cell alike")
    if settled:
        return f"the machine was busy: {beside}; the answer held against the wider intervals it gave"
    return (f"the machine was too busy for a full answer: {beside}, and what is open below stayed open against the "
            f"wider intervals it gave; {_WHAT_TO_DO}")
