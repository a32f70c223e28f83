"""What a cause probed by switching one of the code's own settings for its timed calls is: a watch of the probe
worker that confirms the mechanism (hooks that ran, modes that were on, the collector's passes), one probe cell
(``hooks=off``, ``gc=off``), and the three sentences its finding can say, written here once:

- faster, with the watch confirming: "with its hooks detached it is 1.8× faster (a timing probe: ...); 100 module
  calls ran 25 hooks ...: <the setting's mechanism>; the fix: ...";
- faster, with nothing seen: "... it is 1.8× faster ..., yet no hook was seen running: the mechanism is unconfirmed";
- otherwise what :meth:`Cause.not_found` says, the watch's evidence after it.

A subclass sets the words (``under``, ``switched``, ``unseen``, ``unwatched``, ``fix``, ``timing_only``) and says
what its watch confirms (:meth:`confirms`, or :meth:`evidence` in words of its own) and what rules it out before any
cell runs (:meth:`rule_out`).
:class:`KeptCause` is the kind whose probe keeps a process-wide switch where the code would move it (the profiler
off, mkldnn on): every attempt is refused and read back, so the readback is evidence of its own.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from ._cause import NOT_WATCHED, Cause, mechanism, probe_of, probe_text
from ._results.facts import Facts
from ._results.findings import MECHANISM_UNCONFIRMED, Finding, Status
from ._results.rules import Context
from ._setting import Setting

__all__ = ["SwitchedCause", "KeptCause"]


class SwitchedCause(Cause):
    """A cause whose probe is ``setting`` switched for the timed calls, confirmed by the facts of ``watch``."""

    #: The setting whose declared probe is this cause's one probe cell (its mechanism sentence is the cause's).
    setting: ClassVar[Setting]
    #: The probe worker's watch whose facts confirm the mechanism (its key also names them in the evidence).
    watch: ClassVar[Any]
    #: The probe as it precedes "it is 1.8× faster": "with its hooks detached".
    under: ClassVar[str]
    #: The probe as :meth:`Cause.not_found` names it: "detaching its hooks".
    switched: ClassVar[str]
    #: What the watch did not see, where the probe cell is faster all the same: "no hook was seen running".
    unseen: ClassVar[str]
    #: Why a workload that times its own iterations leaves this cause out: "there is no call to run ...".
    unwatched: ClassVar[str]
    #: What the user changes when this is the cause.
    fix: ClassVar[str]
    #: What the probe cell is where it changes what the call computes ("a timing probe: ..."), or None.
    timing_only: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "setting" in cls.__dict__:
            cls.probe = probe_of(cls.setting)

    def seen(self, facts: Facts | None) -> Any:
        """The facts of this cause's watch, or None where the probe worker did not watch the calls."""
        return facts.of(self.watch) if facts is not None else None

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = self.seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing=self.unwatched)
        return self.rule_out(facts, seen)

    @abc.abstractmethod
    def rule_out(self, facts: Facts, seen: Any) -> str | None:
        """Why the watch's facts ``seen`` rule this cause out before any cell runs, or None where they do not."""

    def confirms(self, seen: Any) -> bool:
        """Whether the watch's facts ``seen`` show the mechanism at work (default: whatever it saw)."""
        return True

    def evidence(self, facts: Facts | None) -> str | None:
        """The watch's facts that confirm the mechanism, in words (their ``text()``), or None where it saw nothing
        that would (:meth:`confirms`)."""
        seen = self.seen(facts)
        return seen.text() if seen is not None and self.confirms(seen) else None

    def evidence_json(self, ctx: Context) -> Any:
        """The watch's facts as the finding's evidence carries them."""
        return None if self.seen(ctx.facts) is None else ctx.facts.to_json()["probed"].get(self.watch.key)

    def timing(self, facts: Facts | None) -> str:
        """" (a timing probe: ...)" after the effect where the probe changes what the call computes, or ""."""
        return f" ({self.timing_only})" if self.timing_only else ""

    def cause_under(self, facts: Facts | None) -> str:
        """The probe as the finding that calls it the cause names it (:attr:`under` unless a subclass is surer)."""
        return self.under

    def fix_for(self, facts: Facts | None) -> str:
        """The fix for what the watch saw (:attr:`fix` unless a subclass tells cases apart)."""
        return self.fix

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return self.unmeasured(ctx, ctx.probe_cell(self.probe), self.under)
        cell, cmp = probed
        evidence = self.evidence(ctx.facts)
        read = self.readback_suffix(ctx, cell, self.setting)
        timing = self.timing(ctx.facts)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={self.watch.key: self.evidence_json(ctx),
                                "readback": ctx.readback(cell, self.setting.name) or {}})
        if cmp.faster and evidence is None:
            return self.finding(ctx, cmp, f"{self.under} it is {cmp.effect_text()}{timing}{read}, yet {self.unseen}: "
                                          f"{MECHANISM_UNCONFIRMED}", Status.UNCONFIRMED, **fields)
        if cmp.faster:
            return self.finding(ctx, cmp, f"{self.cause_under(ctx.facts)} it is {cmp.effect_text()}{timing}; "
                                          f"{evidence}{read}: {mechanism(self.setting)}; the fix: "
                                          f"{self.fix_for(ctx.facts)}", Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, self.switched, suffix=read + (f"; {evidence}" if evidence else ""), **fields)


class KeptCause(SwitchedCause):
    """A cause whose probe keeps a process-wide switch where the code would move it, refusing and reading back every
    attempt: where the watch saw nothing, a refusal read back in the probe cell is the evidence."""

    unwatched = ""  # a workload that times itself is judged by its readback: nothing rules it out

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = self.seen(facts)
        return None if seen is None else self.rule_out(facts, seen)

    def also(self, ctx: Context) -> str:
        """What the finding that calls it the cause adds after its evidence ("; its profiled call ran ..."), or ""."""
        return ""

    def evidence_fields(self, ctx: Context) -> dict[str, Any]:
        """The finding's evidence besides the watch's facts and the readback."""
        return {}

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            cell = ctx.probe_cell(self.probe)
            return self.not_run(ctx, cell) or self.no_comparison(ctx, cell)
        cell, cmp = probed
        readback = ctx.readback(cell, self.setting.name) or {}
        phrase = self.setting.facts_phrase(readback)
        read = f"; {phrase}" if phrase else ""
        evidence = self.evidence(ctx.facts)
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={self.watch.key: self.evidence_json(ctx), **self.evidence_fields(ctx),
                                "readback": readback})
        if cmp.faster and evidence is None and not readback.get("refused"):
            return self.finding(ctx, cmp, f"{self.under} it is {cmp.effect_text()}{read}, yet {self.unseen}: "
                                          f"{MECHANISM_UNCONFIRMED}", Status.UNCONFIRMED, **fields)
        if cmp.faster:
            why = f"{evidence}{read}" if evidence else phrase  # the readback is the evidence where the watch saw none
            return self.finding(ctx, cmp, f"{self.under} it is {cmp.effect_text()}; {why}{self.also(ctx)}: "
                                          f"{mechanism(self.setting)}; the fix: {self.fix_for(ctx.facts)}",
                                Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, self.switched, suffix=read + (f"; {evidence}" if evidence else ""), **fields)
