"""What the evidence-only causes share: the phase their evidence was measured in, and what their
findings say of the fix no setting could measure."""

from __future__ import annotations

from ...results.facts import Facts

__all__ = ["EVIDENCE_ONLY", "probe_phase"]

#: What an evidence-only finding says of its fix.
EVIDENCE_ONLY = "evidence only (no setting can change the code, so no fix was measured)"


def probe_phase(facts: Facts | None) -> str | None:
    """The phase of the probe worker's profiled call (its callable's or its run's: the last, and only, phase
    of those forms), or None when no call was profiled."""
    return facts.phases[-1] if facts and facts.phases and facts.op_table else None
