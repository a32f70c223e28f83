"""What the probe worker measures for the per-op overhead cause: this machine's cost of one torch op that does
almost nothing, with a tensor operand and with a Python number as its operand, read back as :class:`OpCost`.

Every torch op called from Python pays a fixed cost whatever its work: the Python binding parses its
arguments, the dispatcher finds its kernel, the kernel sets up its loop and a result is wrapped. The probe
worker times many calls of an in-place add on a 1-element tensor (no allocation, one element of work) after
its profiled call, on its own thread as the workload left it: the median per call over several batches is
what one op costs here, under this machine's load. Each batch lasts milliseconds, as a timed iteration does, so
that it meets the load the iterations met (the cause weighs it against their median): on this shared 2-CPU
machine, batches of a fraction of a scheduler slice ran between a neighbour's bursts and measured half of what
the loaded iterations paid per op. (On a GPU an op costs at least this much more: its launch.) A batch counts the
time its thread ran or waited for a CPU (its CPU clock and its run delay), not the time it slept waiting for the
GIL: beside another Python thread of the workload that holds it, each call lets the GIL go and waits up to a
switch interval (5 ms) to take it back, which is that thread's cost, not the op's (the wall clock read 4.8 ms a
call there, against 1 µs). Where the kernel keeps no run delay the wall clock counts.

A Python number as an operand (``x * 1.0001``, ``x + 0.1``) costs more: the binding wraps it as a 0-dim tensor
and the op converts it, every call. Here the in-place add took 0.5 µs with a tensor operand and 1.9 µs with a
Python number, and ``x * 1.0001 + 0.1`` on 16 floats 4.3 µs: charged at the first cost, a loop of 600 such ops
read as 23% of its time, all of which is the ops' fixed cost. So the probe times both forms.
"""

from __future__ import annotations

import math
import os
import statistics
import threading
import time
from dataclasses import dataclass

from ... import _procfs
from ..._probe import Probe, ProbedCall

__all__ = ["TRIVIAL_OP", "WITH_NUMBER", "op_cost_us", "OpCost", "OpCostProbe", "PROBE", "PROBES"]

# The probe note's keys, written and read here only.
_OP_US, _NUMBER_US = "op_cost_us", "op_with_number_us"
#: The op timed, in words (what one op's cost is the cost of).
TRIVIAL_OP = "an in-place add on a 1-element tensor"
#: The form of it timed with a Python number as the operand, in words.
WITH_NUMBER = "with a Python number as its operand"
# Batches of calls: ~5 ms each at half a microsecond a call (the docstring says why that long); ~35 ms in all.
_BATCHES, _CALLS = 7, 10_000
#: A batch ends after this long, whatever calls it has left: beside another Python thread that holds the GIL a call
#: can wait a switch interval (5 ms) to take it back, and 70,000 calls took minutes.
_BATCH_S = 5e-3
#: Calls between two looks at the clock (a look costs a tenth of a call; one every call would be part of the cost).
_CHUNK = 100


class _BusyClock:
    """Nanoseconds the calling thread ran on a CPU or waited on a run queue for one (its CPU clock plus the run
    delay of its schedstat, which the kernel settles as it gets a CPU), or None where it keeps no schedstat."""

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open(f"{_procfs.TASK_DIR}/{threading.get_native_id()}/schedstat",
                                           os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = None

    def read(self) -> int | None:
        if self._fd is None:
            return None
        try:
            waited = int(os.pread(self._fd, 64, 0).split()[1])
        except (OSError, IndexError, ValueError):
            return None
        return time.thread_time_ns() + waited

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def op_cost_us(batches: int = _BATCHES, calls: int = _CALLS, number: bool = False) -> float:
    """The median time of one call of :data:`TRIVIAL_OP` from Python, in µs (per-call means of ``batches``
    batches of ``calls`` calls, each ended after :data:`_BATCH_S` at a multiple of :data:`_CHUNK` calls; the time
    its thread ran or waited for a CPU, the wall clock where that cannot be read); ``number``: with a Python
    number (0.0) as its operand instead of the tensor."""
    import torch

    t = torch.zeros(1, dtype=torch.float32, device="cpu")  # whatever default device or dtype the code set
    operand = 0.0 if number else t
    chunk = max(1, min(calls, _CHUNK))
    busy = _BusyClock()
    per_call = []
    try:
        for _ in range(batches):
            done = 0
            busy_from = busy.read()
            started = time.perf_counter()
            while done < calls:
                step = min(chunk, calls - done)
                for _ in range(step):
                    t.add_(operand)
                done += step
                if time.perf_counter() - started > _BATCH_S:
                    break
            wall_s = time.perf_counter() - started
            busy_to = busy.read()
            took_s = (busy_to - busy_from) / 1e9 if busy_from is not None and busy_to is not None else wall_s
            per_call.append(took_s / done * 1e6)
    finally:
        busy.close()
    return statistics.median(per_call)


@dataclass(frozen=True)
class OpCost:
    """What one torch op that does almost nothing costs on this machine (``us``: :data:`TRIVIAL_OP` called from
    Python, median; ``number_us``: the same op :data:`WITH_NUMBER`, None in a results file from before it was
    measured), as the probe worker measured it."""

    us: float
    number_us: float | None = None

    def of(self, calls) -> float:
        """The fixed cost of one of an op table row's ``calls`` from Python (:class:`~benchctl._results.facts.Calls`),
        on average over them: those that took a Python number as an operand at that form's cost, where it was
        measured."""
        if not calls.n or not self.number_us:
            return self.us
        numbers = min(calls.number, calls.n)
        return (numbers * self.number_us + (calls.n - numbers) * self.us) / calls.n

    @property
    def text(self) -> str:
        """``"the 0.53 µs one op costs here (an in-place add on a 1-element tensor; 1.9 µs with a Python number
        as its operand)"``."""
        number = f"; {self.number_us:.2g} µs {WITH_NUMBER}" if self.number_us else ""
        return f"the {self.us:.2g} µs one op costs here ({TRIVIAL_OP}{number})"


class OpCostProbe(Probe):
    key = "op_cost"
    fact = OpCost

    def record(self, probed: ProbedCall) -> dict:
        if probed.call is None:  # a workload that times itself: no profiled call to weigh it against
            return {}
        return {_OP_US: op_cost_us(), _NUMBER_US: op_cost_us(number=True)}

    def read(self, note: dict) -> OpCost | None:
        us, number = note.get(_OP_US), note.get(_NUMBER_US)
        if us is None or not math.isfinite(us) or us <= 0:
            return None
        return OpCost(float(us), float(number) if number is not None and math.isfinite(number) and number > 0
                      else None)


PROBE = OpCostProbe()
PROBES = (PROBE,)
