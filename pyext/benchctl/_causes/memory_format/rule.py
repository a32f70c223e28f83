"""Cause: memory-layout conversions (copies between channels_last and contiguous layouts, or of a transposed or
strided view into a contiguous tensor).

A tensor in one memory format meeting an op that wants the other is copied whole, every call: a
channels_last model fed contiguous input (its convolution converts it), ``.contiguous()`` after a
channels_last layer (pytorch #172205: "100x slower due to the cache misses"), ``.to(memory_format=...)``
in the loop (#26812: 13-27 ms a conversion); ``x.t().contiguous()`` of a tensor that does not change between
calls. No setting can change the code, so the finding rests
on the probe worker's profiled calls: the share of their op time in copies whose source and
destination strides differ (:mod:`benchctl._workloads.layout_copies`; the median over several calls
where the first had such copies), with the shapes, the layouts and the op that asked for each.
"""

from __future__ import annotations

from dataclasses import asdict

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import EVIDENCE_ONLY, Cause, probe_phase
from ..._workloads import layout_copies

__all__ = ["CONVERSION_SHARE", "NEGLIGIBLE_SHARE", "MECHANISM", "STRIDED_MECHANISM", "MemoryFormat", "CAUSES"]

#: Layout-changing copies taking at least this share of the op time: they are what to remove.
CONVERSION_SHARE = 0.2
#: Under this share the copies cannot explain the time: the cause is ruled out before any cell runs.
NEGLIGIBLE_SHARE = 0.05
MECHANISM = ("each conversion copies the whole tensor to a new layout, every call: keep one memory format "
             "through the model (convert the input once, as the weights are, and drop the .contiguous() or "
             ".to(memory_format=...) between layers), or stay contiguous where channels_last does not pay")
#: Where no copy it names involves channels_last (``a.t().contiguous()``, a strided slice made contiguous): the
#: channels_last advice would not apply.
STRIDED_MECHANISM = ("each conversion copies the whole tensor into a new contiguous one, every call: make it once, "
                     "outside the call, where its source does not change between calls, or hand the view to the op as "
                     "it is where the op reads strides (matmul takes a transposed operand without a copy)")
# The copies a finding names (the largest first).
_SHOWN = 3


def _copies_text(facts: Facts) -> str:
    return ", ".join(c.text for c in facts.layout_copies[:_SHOWN])


def _mechanism(facts: Facts) -> str:
    """:data:`MECHANISM` where a copy it names involves channels_last, else :data:`STRIDED_MECHANISM`."""
    named = facts.layout_copies[:_SHOWN]
    return MECHANISM if any(layout_copies.CHANNELS_LAST in (c.source, c.to) for c in named) else STRIDED_MECHANISM


def _share(facts: Facts) -> tuple[float | None, str]:
    """The share of the op time in layout-changing copies (:meth:`Facts.layout_copy_share`), and in words how
    it was measured: ``"33% of its op time (the median of 7 profiled calls: 24-48%)"``."""
    share, shares = facts.layout_copy_share(), facts.layout_copy_shares
    if share is None:
        return None, ""
    if len(shares) < 2:
        return share, f"{share:.0%} of its op time (its one profiled call)"
    return share, (f"{share:.0%} of its op time (the median of {len(shares)} profiled calls: "
                   f"{min(shares) * 100:.0f}-{max(shares):.0%})")


class MemoryFormat(Cause):
    name = "memory_format"
    order = 180
    title = "memory-layout conversions (channels_last ↔ contiguous, or strided → contiguous copies)"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        share, measured = _share(facts)
        if share is None:
            return f"no op time of its call is known ({facts.unprofiled_why()}): its copies are not known"
        if not facts.layout_copies:
            return "no copy in its profiled call changes a tensor's memory layout"
        if share < NEGLIGIBLE_SHARE:
            return f"copies that change a memory layout take {measured}: {_copies_text(facts)}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        facts = ctx.facts
        share, measured = (None, "") if ctx.phase != probe_phase(facts) else _share(facts)
        if share is None:
            return None
        evidence = {"layout_copy_share": share, "layout_copies": [asdict(c) for c in facts.layout_copies],
                    "layout_copy_shares": list(facts.layout_copy_shares)}
        said = f"copies that change a tensor's memory layout take {measured}"
        if not facts.layout_copies or share < NEGLIGIBLE_SHARE:
            return self.finding(ctx, None, f"{said}: under {NEGLIGIBLE_SHARE:.0%}", Status.NOT_CAUSE,
                                evidence=evidence)
        said += f": {_copies_text(facts)}"
        if share < CONVERSION_SHARE:
            return self.finding(ctx, None, f"{said}; under {CONVERSION_SHARE:.0%}, they explain part of the time at "
                                           "most", Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{said}: {_mechanism(facts)}; {EVIDENCE_ONLY}", Status.CAUSE,
                            evidence=evidence)


CAUSES = (MemoryFormat(),)
