"""The dtype profile, typed: the calls the probe recorded for replay, and what each cost on this CPU in
its own dtype against float32.

:mod:`benchctl._workloads.op_calls` records the first call of the ops that take the probe call's
time (:class:`OpCall`); :mod:`benchctl._studies.dtype_profile` replays the ones in a costly dtype on
random tensors of the recorded shapes, in that dtype and in float32 (:class:`DtypeTiming`), before
any cell runs; the dtype causes (:mod:`benchctl._causes.half`, :mod:`benchctl._causes.float64`) read the result
(:class:`DtypeProfile`) through :class:`benchctl._results.facts.Facts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SLOWER_RATIO", "DTYPE_WORDS", "CASTS", "OpInput", "OpCall", "DtypeTiming", "DtypeProfile"]

#: A dtype's time over float32's from which it counts as slower: beyond the ~1.1x that the min of
#: interleaved repeats of identical work drifts by on the shared development machine.
SLOWER_RATIO = 1.25

#: The profiler's dtype names, as an answer says them.
DTYPE_WORDS = {"c10::Half": "float16", "c10::BFloat16": "bfloat16", "double": "float64", "float": "float32"}


@dataclass(frozen=True)
class OpInput:
    """One input of a recorded call: its ``type`` as the profiler names it (a tensor's dtype,
    ``"Scalar"``, ``"ScalarList"``, ``""`` for None), its ``shape``, its ``strides`` (None: not
    recorded) and, for a non-tensor, ``value``."""

    type: str
    shape: tuple = ()
    strides: tuple | None = None
    value: Any = None

    @classmethod
    def from_json(cls, data: dict) -> "OpInput":
        strides = data.get("strides")
        return cls(type=data.get("type", ""), shape=tuple(data.get("shape", ())),
                   strides=None if strides is None else tuple(strides), value=data.get("value"))


#: The ops that cast a tensor to another dtype: replayed "in float32" they cast float32 to float32, which
#: costs nothing (``x.float()`` on a bfloat16 tensor measured 31.8x "slower" than on a float32 one here).
CASTS = frozenset({"aten::to", "aten::_to_copy", "aten::type_as", "aten::_autocast_to_reduced_precision",
                   "aten::_autocast_to_full_precision"})


@dataclass(frozen=True)
class OpCall:
    """The first call of ``op`` with input ``dtypes`` (a key of the op table) and all its inputs."""

    op: str
    dtypes: tuple[str, ...] = ()
    inputs: tuple[OpInput, ...] = ()

    @property
    def casts(self) -> bool:
        """Whether the call converts between dtypes (one of :data:`CASTS`, or a ``copy_`` between two floating dtypes:
        bfloat16 into float32): its cost is the conversion's, which float32 code would not have, not arithmetic in
        the dtype. (An op that computes on two dtypes, a bfloat16 tensor times a float32 one, is replayed.)"""
        return self.op in CASTS or (self.op == "aten::copy_" and len({d for d in self.dtypes if d in DTYPE_WORDS}) > 1)

    @classmethod
    def from_json(cls, data: dict) -> "OpCall":
        return cls(op=data["op"], dtypes=tuple(data.get("dtypes", ())),
                   inputs=tuple(OpInput.from_json(i) for i in data.get("inputs", ())))


@dataclass(frozen=True)
class DtypeTiming:
    """``op`` replayed in ``dtype`` and in float32: the min time of each (``dtype_us``, ``float32_us``)
    over ``repeats`` interleaved calls; ``low`` and ``high`` bound the ratio by the repeats' spread
    (the dtype's min over float32's median, its median over float32's min). ``share``: the op's share
    of the probe call's op time. ``error``: why it could not be replayed (then no times)."""

    op: str
    dtype: str
    share: float
    dtype_us: float | None = None
    float32_us: float | None = None
    low: float | None = None
    high: float | None = None
    repeats: int = 0
    error: str | None = None

    @property
    def ratio(self) -> float | None:
        """The dtype's time over float32's (their mins), None when not measured."""
        if self.dtype_us is None or not self.float32_us:
            return None
        return self.dtype_us / self.float32_us

    @property
    def slower(self) -> bool:
        """Measured slower than float32 beyond the repeats' spread."""
        return self.low is not None and self.low >= SLOWER_RATIO

    @property
    def not_slower(self) -> bool:
        """Measured no slower than float32 (not :data:`SLOWER_RATIO` even at the spread's top)."""
        return self.high is not None and self.high < SLOWER_RATIO

    @property
    def text(self) -> str:
        """``"aten::addmm 4.6× [4.1, 5.0]"`` (or why it was not replayed)."""
        if self.ratio is None:
            return f"{self.op} not replayed ({self.error})"
        return f"{self.op} {self.ratio:.1f}× [{self.low:.1f}, {self.high:.1f}]"

    @classmethod
    def from_json(cls, data: dict) -> "DtypeTiming":
        return cls(**data)


@dataclass(frozen=True)
class DtypeProfile:
    """Every replayed op (:class:`DtypeTiming`), the CPU's flags that bear on half precision
    (``cpu_flags``: those present of :data:`benchctl._studies.dtype_profile.FLAGS`), the torch
    threads it ran on and the ``seconds`` it took."""

    timings: tuple[DtypeTiming, ...] = ()
    cpu_flags: tuple[str, ...] = ()
    threads: int = 1
    seconds: float = 0.0

    def of(self, dtypes: tuple[str, ...]) -> tuple[DtypeTiming, ...]:
        """The timings of ops in one of ``dtypes``."""
        return tuple(t for t in self.timings if t.dtype in dtypes)

    @classmethod
    def from_json(cls, data: dict | None) -> "DtypeProfile | None":
        if data is None:
            return None
        return cls(timings=tuple(DtypeTiming.from_json(t) for t in data.get("timings", ())),
                   cpu_flags=tuple(data.get("cpu_flags", ())), threads=int(data.get("threads", 1)),
                   seconds=float(data.get("seconds", 0.0)))
