"""What was learnt of a workload before its matrix ran: the facts every rule's pre-check reads.

``benchctl explain`` measures them in one probe worker (the workload unchanged, in a fresh
process: :meth:`Facts.from_probe`); the seed scripts take the census of the model's values in
their own process (:meth:`Facts.from_census`) and know nothing else before running.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .. import probes
from . import queries
from .dtype_profile import DtypeProfile, OpCall
from .summary import COUNTER_FIELDS

__all__ = ["CENSUS_PARTS", "Calls", "OpRow", "WarningSeen", "PyFrame", "LayoutCopy", "CompileLog", "Facts",
           "warmup_extra"]

#: The parts of a probe worker's subnormal census: what its call returned, its modules' layer outputs and weights,
#: and what the torch functions it called read (:func:`benchctl.denormals.op_inputs_census`).
CENSUS_PARTS = ("outputs", "activations", "weights", "op_inputs")


def warmup_extra(ns: list[float], warmup: int) -> float | None:
    """What the first iterations of a series cost beyond its steady median, in steady iterations (the first
    one at least, with ``warmup`` the iterations the runner detected); None for a series too short to say."""
    warm = max(1, warmup or 0)
    if len(ns) <= warm:
        return None
    steady = float(np.median(ns[warm:]))
    return (sum(ns[:warm]) - warm * steady) / steady if steady > 0 else None


@dataclass(frozen=True)
class Calls:
    """Some of an op table row's calls: how many (``n``), their time with the ops they called (``us``) and how many
    of them took a Python number as an operand (``number``)."""

    n: int = 0
    us: float = 0.0
    number: int = 0

    @property
    def us_per_call(self) -> float | None:
        """The time of one of them, with the ops it called; None: there were none."""
        return self.us / self.n if self.n else None


@dataclass(frozen=True)
class OpRow:
    """One row of the probe call's op table (:mod:`benchctl._workloads.op_table`): an op in one
    combination of input dtypes, its ``calls``, ``self_us`` (time in the op itself), ``top_us``
    (time of its calls made from Python), ``top_calls`` (how many those were; 0 in a results file written
    before they were counted), the input ``shapes`` of its first call and ``top_number_calls``, how many of its
    calls made from Python took a Python number as an operand (0 in a results file written before they were).
    ``py_calls``, ``py_us`` and ``py_number_calls`` count the same of its calls made from Python with nothing or
    only ``record_function`` scopes above them (:func:`benchctl._workloads.op_table.python_scope`), ``py_scoped``
    those under a scope and ``py_scopes`` (name, calls) of their innermost scopes, the most called; in a results file
    written before they were counted (or a row built without them) the ``py_`` counts are the ``top_`` ones, no
    scope known."""

    op: str
    dtypes: tuple[str, ...] = ()
    calls: int = 0
    self_us: float = 0.0
    top_us: float = 0.0
    shapes: tuple = ()
    top_calls: int = 0
    top_number_calls: int = 0
    py_calls: int | None = None
    py_us: float | None = None
    py_number_calls: int | None = None
    py_scoped: int = 0
    py_scopes: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        # Counted before scopes were: the calls with no profiled parent were all that was known of them.
        if self.py_calls is None:
            object.__setattr__(self, "py_calls", self.top_calls)
        if self.py_us is None:
            object.__setattr__(self, "py_us", self.top_us)
        if self.py_number_calls is None:
            object.__setattr__(self, "py_number_calls", self.top_number_calls)
        object.__setattr__(self, "py_scopes", tuple((str(name), int(n)) for name, n in self.py_scopes))

    @classmethod
    def from_json(cls, data: dict) -> "OpRow":
        def maybe(key: str, kind: type) -> Any:
            return kind(data[key]) if data.get(key) is not None else None

        return cls(op=data["op"], dtypes=tuple(data.get("dtypes", ())), calls=int(data.get("calls", 0)),
                   self_us=float(data.get("self_us", 0.0)), top_us=float(data.get("top_us", 0.0)),
                   shapes=tuple(data.get("shapes", ())),
                   top_calls=int(data.get("top_calls", 0)), top_number_calls=int(data.get("top_number_calls", 0)),
                   py_calls=maybe("py_calls", int), py_us=maybe("py_us", float),
                   py_number_calls=maybe("py_number_calls", int), py_scoped=int(data.get("py_scoped", 0)),
                   py_scopes=tuple(data.get("py_scopes", ())))

    @property
    def top_us_per_call(self) -> float | None:
        """The time of one of its calls made from Python, with the ops it called; None: none was."""
        return self.top_us / self.top_calls if self.top_calls else None

    @property
    def top(self) -> Calls:
        """Its calls made from Python with no profiled parent (``top_``)."""
        return Calls(self.top_calls, self.top_us, self.top_number_calls)

    @property
    def py(self) -> Calls:
        """Its calls made from Python, under the code's scopes too (``py_``)."""
        return Calls(self.py_calls, self.py_us, self.py_number_calls)

    @property
    def shapes_text(self) -> str:
        """``"384x384, 384x384"``: its first call's tensor input shapes (scalars and non-tensor inputs left out)."""
        return ", ".join("x".join(map(str, s)) for s in self.shapes if s)


@dataclass(frozen=True)
class WarningSeen:
    """A warning the probe worker's workload raised (:mod:`benchctl._workloads.probe_python`): its
    ``category`` and ``message``, ``where`` the first was raised, how many times (``count``)."""

    category: str
    message: str
    where: str = ""
    count: int = 1

    @classmethod
    def from_json(cls, data: dict) -> "WarningSeen":
        return cls(data["category"], data["message"], data.get("where", ""), int(data.get("count", 1)))

    @property
    def from_torch(self) -> bool:
        """Whether torch raised it (its message says where in torch's sources it was triggered)."""
        return "Triggered internally at" in self.message or "/torch/" in self.where.replace("\\", "/")

    @property
    def text(self) -> str:
        """The message's first sentence, with its category: ``UserWarning: Creating a tensor ... slow``."""
        first = self.message.strip().split(". ")[0].rstrip(".")
        return f"{self.category}: {first}"


@dataclass(frozen=True)
class PyFrame:
    """A Python-side function of the probe's cProfile call: ``function``, ``where`` (``file:line`` or
    built-in), ``own_us`` (time in it, not in what it calls), ``calls``, ``user`` (in the user's
    files), ``called_from`` (the user's function that called it, or None) and ``total_us`` (time in it with
    what it called; 0 in a results file written before it was kept)."""

    function: str
    where: str
    own_us: float
    calls: int = 1
    user: bool = False
    called_from: str | None = None
    total_us: float = 0.0

    @classmethod
    def from_json(cls, data: dict) -> "PyFrame":
        return cls(data["function"], data["where"], float(data["own_us"]), int(data.get("calls", 1)),
                   bool(data.get("user", False)), data.get("called_from"), float(data.get("total_us", 0.0)))

    @property
    def total_text(self) -> str:
        """``"load (torch/serialization.py:1210) 1.9 ms with what it called (called from step (plant.py:7))"``."""
        where = f" ({self.where})" if self.where != "built-in" else ""
        return (f"{self.function}{where} {self.total_us / 1e3:.3g} ms with what it called (called from "
                f"{self.called_from})")

    @property
    def text(self) -> str:
        """``"torch.tensor 41 ms (called from slow_batch (plant.py:12))"``."""
        called = f" (called from {self.called_from})" if self.called_from and not self.user else ""
        where = f" ({self.where})" if self.user else ""
        return f"{self.function}{where} {self.own_us / 1e3:.3g} ms{called}"


@dataclass(frozen=True)
class LayoutCopy:
    """Copies of the profiled call that change a tensor's layout (:mod:`benchctl._workloads.layout_copies`):
    ``shape``, the ``source`` and ``to`` layouts, ``via`` (the op called from Python that made them),
    their ``calls`` and own time ``self_us``."""

    shape: tuple[int, ...]
    source: str
    to: str
    via: str
    calls: int = 1
    self_us: float = 0.0

    @classmethod
    def from_json(cls, data: dict) -> "LayoutCopy":
        return cls(tuple(data["shape"]), data["source"], data["to"], data["via"], int(data.get("calls", 1)),
                   float(data.get("self_us", 0.0)))

    @property
    def text(self) -> str:
        """``"2× 8x16x56x56 channels_last → contiguous in aten::contiguous"``."""
        return (f"{self.calls}× {'x'.join(map(str, self.shape))} {self.source} → {self.to} in {self.via} "
                f"({self.self_us / 1e3:.3g} ms)")


@dataclass(frozen=True)
class CompileLog:
    """What ``torch.compile`` did in each of the probe worker's timed iterations
    (:mod:`benchctl._workloads.probe_compile`): frames compiled (``compiles``), their compile time
    (``compile_s``), each iteration's time (``iteration_s``) and the latest guard failures that made
    dynamo compile again (``guards``)."""

    compiles: tuple[int, ...] = ()
    compile_s: tuple[float, ...] = ()
    iteration_s: tuple[float, ...] = ()
    guards: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict | None) -> "CompileLog | None":
        if not data:
            return None
        return cls(tuple(int(c) for c in data.get("compiles", ())), tuple(map(float, data.get("compile_s", ()))),
                   tuple(map(float, data.get("iteration_s", ()))), tuple(data.get("guards", ())))

    @property
    def compiling_iterations(self) -> int:
        """Timed iterations in which dynamo compiled a frame."""
        return sum(1 for c in self.compiles if c)

    def compile_share(self) -> float | None:
        """The share of the timed iterations' time spent compiling (dynamo's own timer); None when
        no iteration was timed, or frames were compiled and the timer recorded nothing (it is private
        to dynamo and may be gone)."""
        total, spent = sum(self.iteration_s), sum(self.compile_s)
        if total <= 0 or (spent <= 0 and self.compiling_iterations):
            return None
        return min(1.0, spent / total)


def _typed(rows, kind) -> tuple:
    return tuple(kind.from_json(r) for r in rows or ())


def _shares(values) -> tuple[float, ...]:
    """Shares (0-1) as saved; a value that is not one is left out."""
    return tuple(float(v) for v in values or () if isinstance(v, (int, float)) and 0 <= v <= 1)


@dataclass(frozen=True)
class Facts:
    """``phases``: in the order they first ran; ``median_ms`` and ``counters`` per phase
    (per-iteration medians of faults, context switches, migrations); ``ops``: the torch ops one
    call ran (the profiler's names; empty when unknown); ``census``: subnormal counts in what it
    computes (:data:`CENSUS_PARTS`; None when unknown); ``pools``: the
    thread pools threadpoolctl saw; ``cpus``: CPUs this process may use; ``op_table``: the
    profiled call's ops by dtype with their times (:class:`OpRow`, empty when unknown) and
    ``call_wall_us`` that call's wall time and ``call_cpu_us`` the calling thread's CPU time in it (None when
    unknown); ``first_extra``: per phase, what the probe
    worker's first iterations cost beyond its steady median, in steady iterations (:func:`warmup_extra`);
    ``torch_threads``: torch's intra-op thread count after the probe call, as the code left it;
    ``op_calls``: the first call of the ops that took most of its time, replayable
    (:class:`~.dtype_profile.OpCall`); ``dtype_profile``: those in a costly dtype timed on this CPU
    against float32, measured in the explain process before any cell ran (None: not measured).;
    ``call_compile_us`` the part of it
    torch.compile spent compiling; ``layout_copies``: its copies that
    change a layout (:class:`LayoutCopy`); ``layout_copy_shares``: their share of the op time in that call and in
    the more calls profiled to weigh them (:func:`benchctl._workloads.layout_copies.shares_over_calls`; empty: none
    had such copies, or a document from before); ``python_frames``: its top Python-side functions
    (:class:`PyFrame`, empty when not profiled); ``warnings``: those raised from setup on
    (:class:`WarningSeen`); ``compile``: what torch.compile did in the timed iterations
    (:class:`CompileLog`, None when dynamo was never loaded).;
    ``probed``: each cause probe's typed fact, by its
    key (:mod:`benchctl.probes`; read with :meth:`of`)."""

    phases: list[str] = field(default_factory=list)
    median_ms: dict[str, float] = field(default_factory=dict)
    counters: dict[str, dict[str, float | None]] = field(default_factory=dict)
    ops: list[str] = field(default_factory=list)
    census: dict | None = None
    pools: list[dict] = field(default_factory=list)
    cpus: int = field(default_factory=lambda: len(os.sched_getaffinity(0)))
    op_table: tuple[OpRow, ...] = ()
    call_wall_us: float | None = None
    call_cpu_us: float | None = None
    first_extra: dict[str, float | None] = field(default_factory=dict)
    torch_threads: int | None = None
    op_calls: tuple[OpCall, ...] = ()
    dtype_profile: DtypeProfile | None = None
    call_compile_us: float = 0.0
    profile_intact: bool = True
    layout_copies: tuple[LayoutCopy, ...] = ()
    layout_copy_shares: tuple[float, ...] = ()
    python_frames: tuple[PyFrame, ...] = ()
    warnings: tuple[WarningSeen, ...] = ()
    compile: CompileLog | None = None
    probed: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_probe(cls, doc: dict) -> "Facts":
        """The facts in a results document whose one run is the probe worker."""
        cell = queries.cells(doc)[0]
        phases = queries.phases(doc)
        summaries = {p: queries.summary_entry(doc, p, cell) or {} for p in phases}
        run = (queries.ok_runs(doc, cell) or [{}])[0]
        notes = run.get("notes", {})
        series = run.get("phases", {})
        probe = notes.get("probe") or {}
        census = {k: probe[k] for k in CENSUS_PARTS if k in probe} or None
        return cls(phases=phases,
                   median_ms={p: s.get("median_ms") for p, s in summaries.items()},
                   counters={p: {f: s.get(f) for f in COUNTER_FIELDS.values()} for p, s in summaries.items()},
                   ops=list(probe.get("ops", [])), census=census, pools=list(notes.get("pools", [])),
                   op_table=_typed(probe.get("op_table"), OpRow), call_wall_us=probe.get("call_wall_us"),
                   call_cpu_us=probe.get("call_cpu_us"),
                   first_extra={p: warmup_extra(d["ns"], d.get("warmup") or 0) for p, d in series.items()},
                   torch_threads=probe.get("torch_threads"),
                   op_calls=tuple(OpCall.from_json(c) for c in probe.get("op_calls", [])),
                   call_compile_us=float(probe.get("call_compile_us") or 0.0),
                   profile_intact=bool(probe.get("profile_intact", True)),
                   layout_copies=_typed(probe.get("layout_copies"), LayoutCopy),
                   layout_copy_shares=_shares(probe.get("layout_copy_shares")),
                   python_frames=_typed(probe.get("python_frames"), PyFrame),
                   warnings=_typed(probe.get("warnings"), WarningSeen),
                   compile=CompileLog.from_json(probe.get("compile")),
                   probed=probes.read_all(probe))

    @classmethod
    def from_census(cls, census: dict | None) -> "Facts":
        """Facts that are only a census of the values (``{"weights": ..., "activations": ...}``)."""
        return cls(census=census)

    @classmethod
    def from_json(cls, data: dict | None) -> "Facts | None":
        if data is None:
            return None
        typed = {"op_table": _typed(data.get("op_table"), OpRow),
                 "op_calls": tuple(OpCall.from_json(c) for c in data.get("op_calls", ())),
                 "dtype_profile": DtypeProfile.from_json(data.get("dtype_profile")),
                 "layout_copies": _typed(data.get("layout_copies"), LayoutCopy),
                 "layout_copy_shares": _shares(data.get("layout_copy_shares")),
                 "python_frames": _typed(data.get("python_frames"), PyFrame),
                 "warnings": _typed(data.get("warnings"), WarningSeen),
                 "compile": CompileLog.from_json(data.get("compile")),
                 "probed": probes.from_json(data)}
        legacy = {p.key for p in probes.PROBES}  # written at the top level before probes had their entry
        return cls(**{**{k: v for k, v in data.items() if k not in legacy}, **typed})

    def to_json(self) -> dict:
        return asdict(self)

    def unprofiled_why(self) -> str:
        """Why no op time of the probe worker's call is known, in words (when the op table is empty)."""
        if not self.profile_intact:
            return "the code's own profiler, started inside the call, took over the probe's profiler session"
        if self.call_wall_us is None:
            return "a @benchctl.workload function times its own phases, which are not profiled"
        return "its profiled call ran no torch op"

    def called_phase(self) -> str | None:
        """The phase of the probe worker's profiled call, whether or not it ran a torch op; None when no call
        was profiled (:meth:`profiled_phase`: only one that ran ops)."""
        return self.phases[-1] if self.phases and self.call_wall_us else None

    def profiled_phase(self) -> str | None:
        """The phase of the probe worker's profiled call (its callable's or its run's: the last, and only, phase
        of those forms), or None when no call was profiled."""
        return self.phases[-1] if self.phases and self.op_table else None

    def of(self, probe: probes.Probe) -> Any:
        """``probe``'s typed fact (its ``fact`` class), or None where the probe worker did not record it."""
        return self.probed.get(probe.key)

    def op_share(self, keep) -> float | None:
        """The share of the profiled call's own op time (``self_us``) in the rows ``keep(row)`` accepts;
        None when no op time was profiled."""
        total = sum(r.self_us for r in self.op_table)
        return None if total <= 0 else sum(r.self_us for r in self.op_table if keep(r)) / total

    def inside_ops_share(self) -> float | None:
        """The share of the profiled call's wall time spent inside torch ops called from Python (the rest
        is Python, conversions and glue; 0 for a call that ran no torch op under an intact profile); None when
        unknown."""
        if not self.call_wall_us or not self.profile_intact:
            return None
        return min(1.0, sum(r.top_us for r in self.op_table) / self.call_wall_us)

    def outside_share(self) -> float | None:
        """The share of the profiled call's wall time outside torch's ops called from Python and outside
        torch.compile's compiling: Python, conversions and glue; None when unknown."""
        inside = self.inside_ops_share()
        if inside is None:
            return None
        return max(0.0, 1.0 - inside - self.call_compile_us / self.call_wall_us)

    def outside_on_cpu_share(self) -> float | None:
        """The share of the time outside torch's ops (and compiling) in which the calling thread ran on a CPU:
        Python and conversions keep it there; waiting for its own threads, child processes or I/O does not.
        None when unknown."""
        outside = self.outside_share()
        if outside is None or self.call_cpu_us is None or not outside:
            return None
        inside_us = self.call_wall_us * (1.0 - outside)
        return min(1.0, max(0.0, self.call_cpu_us - inside_us) / (self.call_wall_us * outside))

    def layout_copy_share(self) -> float | None:
        """The share of the op time in copies that change a layout: the median over the profiled calls where
        more were profiled to weigh them (``layout_copy_shares``), else the profiled call's; None when no op
        time was profiled."""
        if self.layout_copy_shares:
            return statistics.median(self.layout_copy_shares)
        total = sum(r.self_us for r in self.op_table)
        return None if total <= 0 else min(1.0, sum(c.self_us for c in self.layout_copies) / total)

    def subnormals(self) -> int | None:
        """Subnormal values seen in what the workload computes, or None when no value was counted (it
        returns no tensor and exposes no module: then the census cannot rule denormals out)."""
        if not self.census or not sum(part.get("values", 0) for part in self.census.values()):
            return None
        return sum(part.get("subnormal", 0) for part in self.census.values())

    def _holding_subnormals(self) -> list[dict]:
        return [part for part in (self.census or {}).values() if part.get("subnormal")]

    def densest_subnormal_share(self) -> float | None:
        """The largest share of subnormals in one tensor (not float16: :class:`benchctl.denormals._Tally`) the census
        counted, over its parts that hold any (0.0 where none does); None without a census, or where such a part did
        not count per tensor (a results file written before ``densest``)."""
        if not self.census:
            return None
        holding = self._holding_subnormals()
        if any(part.get("densest") is None for part in holding):
            return None
        return max((float(part["densest"]) for part in holding), default=0.0)

    def subnormals_all_float16(self) -> bool:
        """Whether the census counted subnormals, every one of them in a float16 tensor (False where a part did not
        count them apart)."""
        holding = self._holding_subnormals()
        return bool(holding) and all(part.get("float16_subnormal") == part["subnormal"] for part in holding)

    def census_text(self) -> str:
        """``"weights 0 subnormal of 25,557,032, activations 0 subnormal of 12,845,056"``."""
        return ", ".join(f"{part.replace('_', ' ')} {v['subnormal']:,} subnormal of {v['values']:,}"
                         for part, v in (self.census or {}).items() if v.get("values"))
