"""Cause: torch's mkldnn (oneDNN) kernels turned off.

``torch.backends.mkldnn.enabled = False`` (or ``flags(enabled=False)``), set to work around a bug or to
compare results and then left in, sends every convolution to torch's own fallback kernels (im2col and a
matrix product), several times slower on a CPU for dilated convolutions. The
probe worker reads the flag over its timed iterations (:mod:`.probe`): seen on, the cause is out before
any cell runs. The probe is ``mkldnn=on``, the code's calls refused (:mod:`.control`) and read back; the
evidence is the time falling with it while the kernels were seen off, and the fallback kernels the profiled
call ran.
"""

from __future__ import annotations

from ..._results.facts import Facts
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import Cause, mechanism, probe_of, probe_text
from .probe import PROBE, MkldnnFacts
from .setting import MKLDNN

__all__ = ["FIX", "FALLBACKS", "MkldnnOff", "CAUSES"]

#: What the user changes when mkldnn turned off is the cause.
FIX = ("leave torch.backends.mkldnn.enabled on (remove the line that sets it False, or the flags(enabled=False) "
       "block around the work)")
#: torch's own convolution kernels that run where mkldnn's would (the op table names them).
FALLBACKS = ("aten::_slow_conv2d_forward", "aten::slow_conv_dilated2d", "aten::slow_conv_transpose2d",
             "aten::slow_conv3d_forward", "aten::slow_conv_dilated3d", "aten::slow_conv_transpose3d")


def fallbacks_run(facts: Facts | None) -> list[str]:
    """The fallback kernels the probe worker's profiled call ran, the costliest first."""
    rows = facts.op_table if facts is not None else ()
    return [row.op for row in rows if row.op in FALLBACKS]


class MkldnnOff(Cause):
    name = MKLDNN.name
    order = 144
    title = "mkldnn turned off"
    probe = probe_of(MKLDNN)

    def probes(self, facts: Facts | None) -> list[dict]:
        return [self.probe]

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen: MkldnnFacts | None = facts.of(PROBE)
        if seen is None:
            return None  # its iterations were not watched: nothing rules it out
        return None if seen.seen_off else seen.text()

    def judge_phase(self, ctx: Context) -> Finding | None:
        probed = self.probed(ctx)
        if probed is None:
            return self.not_run(ctx, ctx.probe_cell(self.probe))
        cell, cmp = probed
        seen: MkldnnFacts | None = ctx.facts.of(PROBE) if ctx.facts else None
        readback = ctx.readback(cell, MKLDNN.name) or {}
        phrase = MKLDNN.facts_phrase(readback)
        read = f"; {phrase}" if phrase else ""
        ran = fallbacks_run(ctx.facts)
        kernels = f"; its profiled call ran {', '.join(ran)}" if ran else ""
        fields = dict(a=cell, b=ctx.baseline, setting=probe_text(self.probe),
                      evidence={"mkldnn": None if seen is None else {
                          "available": seen.available, "off_before": seen.off_before, "off_after": seen.off_after,
                          "asked": seen.asked}, "fallbacks": ran, "readback": readback})
        off = seen.text() if seen is not None and seen.seen_off else None
        if cmp.faster and off is None and not readback.get("refused"):
            return self.finding(ctx, cmp, f"with mkldnn kept on it is {cmp.effect_text()}{read}, yet it was not "
                                          "seen off: the mechanism is unconfirmed", Status.UNCONFIRMED, **fields)
        if cmp.faster:
            why = f"{off}{read}" if off else phrase  # the readback is the evidence where the probe saw none
            return self.finding(ctx, cmp, f"with mkldnn kept on it is {cmp.effect_text()}; {why}{kernels}: "
                                          f"{mechanism(MKLDNN)}; the fix: {FIX}", Status.CAUSE, **fields)
        return self.not_found(ctx, cmp, "mkldnn kept on", suffix=read + (f"; {off}" if off else ""), **fields)


CAUSES = (MkldnnOff(),)
