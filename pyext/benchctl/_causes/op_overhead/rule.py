"""Cause: per-op overhead: many torch ops whose work is tiny, each paying one op's fixed cost.

Every op called from Python costs about the same whatever its work: the binding parses its arguments,
the dispatcher finds its kernel, the kernel sets up its loop, the result is wrapped. A Python loop of
per-element ops (``x[i].item()`` over a tensor's elements) or a model of many tiny layers spends its time
there, not in arithmetic. No setting changes the code, so the finding rests on the probe worker's
evidence: its profiled call's op table (the ops it called from Python, how often, and their time with the
ops they called) and this machine's cost of one op that does almost nothing, measured in the same process
(:mod:`.probe`). An op called from Python whose time per call is within :data:`TINY_MULTIPLE` of that cost did
almost no work; its calls times that cost is what the call pays to call it, which fewer, larger ops (or one
conversion) would save. An op's time is taken with the ops it called, not its self time alone: a composite
op (``aten::linear``) has little time of its own while the op it calls (``aten::addmm``) does the work; and
its calls are those made from Python, each paying the binding (the ops it calls are dispatched from C++ for
a fraction of that). Ops called beneath a ``record_function`` scope count too: Python opens the scopes
(torch.optim wraps every step in one, ``Optimizer.step#Adam.step``: the profiler shows the 9 ops a parameter of
Adam's step without ``foreach`` under it, not at the top), so an op with nothing but scopes above it was called
from Python; the finding names the scopes.

The python-time cause judges the time outside torch's ops. Part of each op's fixed cost (the binding's
parsing and wrapping) falls outside the op's own event, so a loop of tiny ops leaves time outside the
ops too: the python-time rule asks this cause's estimate (:func:`overhead`), and where it leaves under that
rule's share to anything else, the time outside the ops is the tiny ops' binding, not Python. It asks of the ops
with no profiled parent alone: the binding of an op beneath a scope falls inside the scope's event, which that rule
counts as inside the ops.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from ..._results import wording
from ..._results.facts import Calls, Facts, OpRow
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._workloads import op_table
from ..._cause import EVIDENCE_ONLY, Cause, probe_phase
from ..modes.probe import PROBE as MODES
from .probe import PROBE, OpCost

__all__ = ["TINY_MULTIPLE", "DOMINANT_SHARE", "PART_SHARE", "MECHANISM", "FIX", "Overhead", "overhead",
           "OpOverhead", "CAUSES"]

#: An op called from Python whose time per call is within this many times this machine's cost of one trivial
#: op did almost no work: its time is the op's fixed cost. Wide, as the op's time is the profiler's, which
#: adds its bookkeeping of each op it called (x[i]'s select took 1-4.5× the unprofiled cost in runs here).
TINY_MULTIPLE = 10
#: At least this share of the call's median in the fixed cost of tiny ops: that cost is the call's time.
DOMINANT_SHARE = 0.5
#: Under this share the tiny ops cannot explain the time: ruled out before any cell runs. (A small model's
#: forward of a few hundred tiny ops took 8-12% of its call here: worth no line of the answer.)
PART_SHARE = 0.25
MECHANISM = ("each torch op pays a fixed cost whatever its work (the binding's parsing, the dispatch, the "
             "kernel's set-up, the result's wrapping): with many ops of tiny work that cost is the call's time")
FIX = ("fewer, larger ops: one conversion instead of an op per element (one .tolist() or .numpy() instead of an "
       ".item() per element), vectorised ops on whole tensors instead of a Python loop over their elements, or "
       "torch.compile to fuse the small ops")
# The tiny ops a finding names (the most called first).
_SHOWN = 3
# The scopes a finding names the tiny ops under (the most called first).
_SHOWN_SCOPES = 2


def _time_text(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if us >= 1e3 else f"{us:.2g} µs"


def _is_op(row: OpRow) -> bool:
    # The code's scopes, torch.compile's regions and the autograd engine's nodes are not ops called from Python (at
    # the top of the call they are in its top_ counts, and so in its py_ ones in a results file from before those).
    return op_table.is_op(row.op)


def _calls(row: OpRow, scoped: bool) -> Calls:
    # Beneath the code's scopes too, or with no profiled parent only (what the python-time rule weighs).
    return row.py if scoped else row.top


@dataclass(frozen=True)
class Overhead:
    """The tiny ops of the probe worker's profiled call: ``tiny``, the op table's rows of ops called from Python
    whose time per call is within :data:`TINY_MULTIPLE` of ``cost`` (the most called first); ``lightest``, its op
    called from Python with the least time per call; ``median_ms``, the call's unprofiled median; ``scoped``, whether
    the calls beneath the code's ``record_function`` scopes count (:attr:`OpRow.py`; else those with no profiled
    parent only, :attr:`OpRow.top`). An op called with a Python number as an operand is weighed against that form's
    cost (:meth:`OpCost.of`)."""

    cost: OpCost
    tiny: tuple[OpRow, ...]
    lightest: OpRow
    median_ms: float
    scoped: bool = False

    def calls_of(self, row: OpRow) -> Calls:
        """The calls of ``row`` it counts."""
        return _calls(row, self.scoped)

    @property
    def calls(self) -> int:
        """Calls of tiny ops from Python in one call."""
        return sum(self.calls_of(r).n for r in self.tiny)

    @property
    def scoped_calls(self) -> int:
        """Those of them beneath a scope."""
        return sum(r.py_scoped for r in self.tiny) if self.scoped else 0

    @property
    def us(self) -> float:
        """What those calls cost at this machine's cost of one op, each in its form (:meth:`OpCost.of`; at most
        the whole call)."""
        return min(sum(self.calls_of(r).n * self.cost.of(self.calls_of(r)) for r in self.tiny), self.median_ms * 1e3)

    @property
    def share(self) -> float:
        """That cost as a share of the call's median."""
        return self.us / (self.median_ms * 1e3)

    @property
    def scopes_text(self) -> str:
        """``" (3,600 of them under the record_function scope Optimizer.step#Adam.step)"``, or "" where none was
        beneath a scope."""
        if not self.scoped_calls:
            return ""
        under: Counter[str] = Counter()
        for row in self.tiny:
            under.update(dict(row.py_scopes))
        named = [name for name, _ in under.most_common(_SHOWN_SCOPES)]
        # Other scopes too where the named ones held fewer of the calls (a row keeps its most called scopes only).
        others = sum(under[name] for name in named) < self.scoped_calls
        what = (f"the record_function scope {named[0]}" if len(named) == 1 and not others else
                f"record_function scopes {', '.join(named)}{' and others' if others else ''}")
        return f" ({wording.count(self.scoped_calls)} of them under {what})"

    @property
    def text(self) -> str:
        """``"8,000 ops called from Python in each call do almost no work (4,000 aten::select on 4000 at 1.3 µs,
        ...: each within 10× the 0.51 µs one op costs here (...)): at that cost 100% of its 3.4 ms median"``, the
        scopes they were under after "in each call" (:attr:`scopes_text`)."""
        rows = ", ".join(f"{wording.count(self.calls_of(r).n)} {r.op}"
                         f"{f' on {r.shapes_text}' if r.shapes_text else ''} at "
                         f"{_time_text(self.calls_of(r).us_per_call)}" for r in self.tiny[:_SHOWN])
        return (f"{wording.count(self.calls)} ops called from Python in each call{self.scopes_text} do almost no "
                f"work ({rows}: each within {TINY_MULTIPLE}× {self.cost.text}): at that cost {self.share:.0%} of its "
                f"{self.median_ms:.3g} ms median")

    @property
    def dwarfed_text(self) -> str:
        """``"its ops' work dwarfs one op's cost: the lightest it calls, aten::matmul, takes 620 µs a call, ..."``."""
        lightest = self.calls_of(self.lightest)
        return (f"its ops' work dwarfs one op's cost: the lightest it calls, {self.lightest.op}, takes "
                f"{_time_text(lightest.us_per_call)} a call, "
                f"{wording.count(lightest.us_per_call / self.cost.of(lightest))}× {self.cost.text}")

    def evidence(self) -> dict:
        return {"op_cost_us": self.cost.us, "op_with_number_us": self.cost.number_us, "tiny_calls": self.calls,
                "scoped_calls": self.scoped_calls, "overhead_us": self.us, "overhead_share": self.share,
                "median_ms": self.median_ms, "tiny_ops": [asdict(r) for r in self.tiny]}


def overhead(facts: Facts | None, scoped: bool = False) -> Overhead | None:
    """The tiny ops of ``facts``' profiled call against this machine's cost of one op; None where the call, that
    cost or the call's median is unknown. ``scoped``: the ops called beneath the code's ``record_function`` scopes
    count too (this cause's count); without it only those with no profiled parent do (the python-time rule's: the
    module's docstring says why)."""
    phase = probe_phase(facts)
    cost: OpCost | None = facts.of(PROBE) if phase else None
    median_ms = facts.median_ms.get(phase) if phase else None
    called = [r for r in facts.op_table if _is_op(r) and _calls(r, scoped).n] if phase else []
    if cost is None or not median_ms or not called:
        return None

    def per_call(row: OpRow) -> float:
        return _calls(row, scoped).us_per_call

    tiny = sorted((r for r in called if per_call(r) <= TINY_MULTIPLE * cost.of(_calls(r, scoped))),
                  key=lambda r: -_calls(r, scoped).n)
    return Overhead(cost, tuple(tiny), min(called, key=per_call), median_ms, scoped)


def _modes_text(facts: Facts | None) -> str:
    """``"; a mode was on around its call (DeviceContext(cpu)), which adds to every op's cost, this machine's cost of
    one op included: see modes"``, or ""."""
    seen = facts.of(MODES) if facts is not None else None
    names = seen.switchable if seen is not None else []
    if not names:
        return ""
    return (f"; {'a mode was' if len(names) == 1 else 'modes were'} on around its call ({', '.join(names)}), which "
            "adds to every op's cost, this machine's cost of one op included: see modes")


class OpOverhead(Cause):
    name = "op_overhead"
    order = 175
    title = "per-op overhead (many ops of tiny work)"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        if not facts.op_table:
            return f"no op time of its call is known ({facts.unprofiled_why()}): its ops are not known"
        if facts.of(PROBE) is None:
            return "this machine's cost of one op was not measured"
        found = overhead(facts, scoped=True)
        if found is None:
            return "its profiled call called no torch op from Python (only the code's own scopes)"
        if not found.tiny:
            return found.dwarfed_text
        if found.share < PART_SHARE:
            return f"{found.text}: under {PART_SHARE:.0%}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        found = overhead(ctx.facts, scoped=True) if ctx.phase == probe_phase(ctx.facts) else None
        if found is None:
            return None
        evidence = found.evidence()
        if not found.tiny:
            return self.finding(ctx, None, found.dwarfed_text, Status.NOT_CAUSE, evidence=evidence)
        if found.share < PART_SHARE:
            return self.finding(ctx, None, f"{found.text}: under {PART_SHARE:.0%}", Status.NOT_CAUSE,
                                evidence=evidence)
        modes = _modes_text(ctx.facts)
        if found.share < DOMINANT_SHARE:
            return self.finding(ctx, None, f"{found.text}; under {DOMINANT_SHARE:.0%}, they explain part of the time "
                                           f"at most{modes}", Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{found.text}: {MECHANISM}; the fix: {FIX}; fewer ops would save about "
                                       f"{found.us / 1e3:.3g} ms a call at this machine's cost of one op; "
                                       f"{EVIDENCE_ONLY}{modes}", Status.CAUSE, evidence=evidence)


CAUSES = (OpOverhead(),)
