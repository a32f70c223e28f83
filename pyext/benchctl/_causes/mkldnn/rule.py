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
from ..._results.rules import Context
from ..._switched_cause import KeptCause
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


class MkldnnOff(KeptCause):
    name = MKLDNN.name
    order = 144
    title = "mkldnn turned off"
    setting = MKLDNN
    watch = PROBE
    under = "with mkldnn kept on"
    switched = "mkldnn kept on"
    unseen = "it was not seen off"
    fix = FIX

    def rule_out(self, facts: Facts, seen: MkldnnFacts) -> str | None:
        return None if seen.seen_off else seen.text()

    def confirms(self, seen: MkldnnFacts) -> bool:
        return seen.seen_off

    def evidence_json(self, ctx: Context) -> dict | None:
        seen = self.seen(ctx.facts)
        return None if seen is None else {"available": seen.available, "off_before": seen.off_before,
                                          "off_after": seen.off_after, "asked": seen.asked}

    def evidence_fields(self, ctx: Context) -> dict:
        return {"fallbacks": fallbacks_run(ctx.facts)}

    def also(self, ctx: Context) -> str:
        ran = fallbacks_run(ctx.facts)
        return f"; its profiled call ran {', '.join(ran)}" if ran else ""


CAUSES = (MkldnnOff(),)
