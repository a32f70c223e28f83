"""Cause: time outside torch's ops (Python, and conversions torch runs outside its ops).

No setting can change the user's code, so this cause has no setting: its finding rests on what the
probe worker measured in its one profiled call. The torch profiler gives the time of the ops
called from Python; the rest of the call's wall time (less what torch.compile spent compiling,
the recompile cause's) is outside them: Python, glue and conversions such as ``torch.tensor`` of a list of
NumPy arrays (pytorch #13918: 6.0 s against 0.9 s from one array), or another library's work. Its evidence:
that share, the top Python-side functions by own time (a second, cProfile call), the warnings the
workload raised (torch warns of that conversion) and where the CPU time of the timed iterations went by
library (its probe, :mod:`.probe`: the native sampler's split). It calls the time Python only where
Python's side (the interpreter, and torch's conversions in libtorch_python) held more of that CPU time than
any native library other than torch's: where one did (numpy's OpenBLAS for an ``a @ a`` beside torch's
ops), it names that library and the finding stays open. The profiler's own overhead is charged to
each op it records: where the profiled call took far longer than the unprofiled iterations,
the share is not measured and the finding stays open; so it does where the code runs the profiler itself (its
sessions' starts, stops and events are outside the ops: the profiler cause's), where a trace or profile function
was on over its calls (the interpreter calls it on every Python frame: the tracing cause's), and where the calling
thread was off a CPU for most of the time outside the ops (it waited for its own pool, a child process, I/O). Where the
split could not be sampled, the finding says why in its evidence and judges as before the sampler: open
also where the cProfile call puts the most own time in a torch op's call (``torch.mm``), as the time
outside the ops is then another library's work or waiting (numpy's BLAS beside torch's team), not Python.
Where the fixed cost of the call's tiny ops leaves little of it to anything else, the time outside the ops is
their binding's (the per-op overhead cause), not Python's.
"""

from __future__ import annotations

from dataclasses import asdict

from ..._libsplit import Kind, LibrarySplit
from ..._results.facts import Facts, PyFrame
from ..._results.findings import Finding, Status
from ..._results.rules import Context
from ..._cause import EVIDENCE_ONLY, Cause
from ..op_overhead.rule import overhead
from ..profiler.probe import PROBE as PROFILER_WATCH
from ..tracing.probe import PROBE as TRACING_WATCH
from .probe import CHILDREN, PROBE as SPLIT_PROBE, SAID as SPLIT_SAID

__all__ = ["OUTSIDE_SHARE", "ON_CPU_SHARE", "PROFILER_TRUSTED", "MECHANISM", "BENEATH", "FRAMES_FROM", "PythonTime",
           "heaviest_call", "op_call_on_top",
           "per_op_overhead", "PYTHON_KINDS", "OTHER_HOLDERS", "usable_split", "library_holder",
           "warnings_text", "CAUSES"]

#: Where the named functions and their times come from: a second call, under cProfile, which slows Python code (a
#: function's time there exceeded the profiled call's: torch.jit.script 8.9 ms in a 4.7 ms call).
FRAMES_FROM = "top Python-side functions in a second call under cProfile (which slows Python code)"
#: At least this share of a call outside torch's ops: that time, not the ops, is what to speed up.
OUTSIDE_SHARE = 0.5
#: The calling thread on a CPU for less than this share of the time outside torch's ops: it mostly waited
#: there (for its own thread pool, a child process, I/O), which is not Python's cost. A Python loop or a
#: conversion keeps it on a CPU throughout (tensor_from_list.py); a step waiting on its zlib pool ran on a
#: CPU for a small part of it (spinning_team.py).
ON_CPU_SHARE = 0.5
#: A profiled call longer than this many times the unprofiled median was slowed by the profiler
#: itself (its cost per recorded op): the share outside the ops is then not measured.
PROFILER_TRUSTED = 3.0
MECHANISM = ("the time goes to Python and to conversions outside torch's ops (building tensors from Python "
             "objects, per-element loops, loading or preparing data): do once, outside the call, what need not be "
             "done in every call, convert once from one array (torch.from_numpy(np.stack(...))), batch the work "
             "into fewer, larger ops")
#: A function the code called that took over this many times its own time with what it called: its time is beneath
#: it (torch.load's in the unpickler), which the list by own time does not show.
BENEATH = 2.0
#: Python's side of a call in the library split: the interpreter, and torch's conversions outside its ops.
PYTHON_KINDS = (Kind.INTERPRETER, Kind.TORCH_PYTHON)
#: Native code other than torch's that can hold the time outside torch's ops instead of Python. Not torch's
#: (its ops are inside), nor the kernel's (a fault or a system call inside an op is the op's) nor code in no
#: loaded object (JIT kernels, oneDNN's inside torch's ops).
OTHER_HOLDERS = (Kind.OPENBLAS, Kind.NUMPY, Kind.LIBC, Kind.OTHER)


def warnings_text(facts: Facts) -> str:
    """``"; torch warned: UserWarning: Creating a tensor ... slow (at plant.py:12)"``; "" when torch
    raised no warning."""
    said = [f"{w.text} (at {w.where}{f', {w.count}×' if w.count > 1 else ''})" for w in facts.warnings
            if w.from_torch]
    return f"; torch warned: {'; '.join(said)}" if said else ""


def heaviest_call(facts: Facts) -> PyFrame | None:
    """The function the code called that took the most with what it called, where that is over :data:`BENEATH`
    times its own time; None otherwise (or in a results file written before the time was kept)."""
    called = [f for f in facts.python_frames if f.called_from and not f.user and f.total_us > 0]
    top = max(called, key=lambda f: f.total_us) if called else None
    return top if top is not None and top.total_us > BENEATH * top.own_us else None


def op_call_on_top(facts: Facts) -> tuple[str, str] | None:
    """(the function, its op) where the Python-side function with the most own time in the cProfile call is a
    call of one of the profiled call's torch ops (``torch.mm`` for ``aten::mm``): that call then held the time,
    and the share outside the ops is another library's work or waiting (numpy's BLAS beside torch's team),
    not Python; None otherwise."""
    if not facts.python_frames:
        return None
    top = max(facts.python_frames, key=lambda f: f.own_us)
    op = "aten::" + top.function.rsplit(".", 1)[-1]
    return (top.function, op) if any(r.op == op for r in facts.op_table) else None


def per_op_overhead(facts: Facts) -> str | None:
    """The per-op overhead cause's evidence in words where the fixed cost of the call's tiny ops leaves under
    :data:`OUTSIDE_SHARE` of its median to anything else: the time outside torch's ops is then their binding's,
    not Python's; None otherwise."""
    found = overhead(facts)
    if found is None or 1.0 - found.share >= OUTSIDE_SHARE:
        return None
    return f"{found.text} (per-op overhead): the time outside the ops is their binding's, not Python's"


def usable_split(facts: Facts) -> tuple[LibrarySplit | None, str]:
    """(the library split of the timed iterations, "") where it has samples; else (None, why not)."""
    split = facts.of(SPLIT_PROBE)
    if split is None:
        return None, "no library split was recorded (a results file from before the sampler, or no probe worker)"
    return (split, "") if split.sampled else (None, split.text())


def library_holder(split: LibrarySplit) -> tuple[Kind, float] | None:
    """(the kind, its share) of the native code other than torch's that held more of the split's CPU time than
    Python's side (:data:`PYTHON_KINDS` together) did, the largest such; None where Python's side held more."""
    python = sum(split.share(k) or 0.0 for k in PYTHON_KINDS)
    top = max(((k, split.share(k) or 0.0) for k in OTHER_HOLDERS), key=lambda kv: kv[1])
    return top if top[1] > python else None


def _share_text(facts: Facts, outside: float) -> str:
    wall_ms = (facts.call_wall_us or 0.0) / 1e3
    compiling = f", {facts.call_compile_us / 1e3:.3g} ms compiling" if facts.call_compile_us else ""
    inside_ms = wall_ms * (facts.inside_ops_share() or 0.0)
    return (f"{outside:.0%} of its profiled call ({wall_ms:.3g} ms) is outside torch's ops called from Python "
            f"({inside_ms:.3g} ms in them{compiling})")


class PythonTime(Cause):
    name = "python"
    order = 170
    title = "time outside torch's ops (Python, conversions)"

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        outside = facts.outside_share()
        if outside is None:
            return (f"no op time of its call is known ({facts.unprofiled_why()}): the share outside torch's ops is "
                    "not measured")
        if outside < OUTSIDE_SHARE:
            compiling = " or compiling (torch.compile)" if facts.call_compile_us else ""
            return f"{1 - outside:.0%} of its profiled call is in torch's ops{compiling}{warnings_text(facts)}"
        per_op = per_op_overhead(facts)
        return None if per_op is None else f"{outside:.0%} of its profiled call is outside torch's ops, yet {per_op}"

    def judge_phase(self, ctx: Context) -> Finding | None:
        facts = ctx.facts
        if facts is None or ctx.phase != facts.called_phase():  # a pure Python step (no torch op) included
            return None
        outside = facts.outside_share()
        if outside is None:
            return None
        frames = ", ".join(f.text for f in facts.python_frames[:3])
        said = _share_text(facts, outside) + (f"; {FRAMES_FROM} by own time: {frames}" if frames else "")
        heaviest = heaviest_call(facts)
        if heaviest is not None:
            said += f"; the call of its code that took the most: {heaviest.total_text}"
        children = facts.of(CHILDREN)
        if children is not None and children.started:
            said += f"; {children.text()}"
        said += warnings_text(facts)
        median_ms = facts.median_ms.get(ctx.phase)
        slowed = None if not median_ms else (facts.call_wall_us or 0.0) / 1e3 / median_ms
        on_cpu = facts.outside_on_cpu_share()
        evidence = {"outside_share": outside, "call_wall_us": facts.call_wall_us, "median_ms": median_ms,
                    "call_cpu_us": facts.call_cpu_us, "outside_on_cpu_share": on_cpu,
                    "profiled_over_timed": slowed, "python_frames": [asdict(f) for f in facts.python_frames],
                    "warnings": [asdict(w) for w in facts.warnings]}
        split, unsplit = usable_split(facts)
        evidence["library_split"] = split.text() if split is not None else unsplit
        if split is not None:
            evidence["library_shares"] = {k.value: v for k, v in split.shares()}
        if outside < OUTSIDE_SHARE:
            return self.finding(ctx, None, f"{said}: under {OUTSIDE_SHARE:.0%}", Status.NOT_CAUSE, evidence=evidence)
        per_op = per_op_overhead(facts)
        if per_op is not None:
            return self.finding(ctx, None, f"{said}, yet {per_op}", Status.NOT_CAUSE, evidence=evidence)
        if split is not None:
            said += f"; {SPLIT_SAID.format(split=split.text())}"
        sessions = facts.of(PROFILER_WATCH)
        if sessions is not None and sessions.seen_on:
            return self.finding(ctx, None, f"{said}, yet {sessions.text()}: its sessions' own work (starting and "
                                           "stopping them, collecting their events) is outside torch's ops too, the "
                                           "profiler's cost and not Python's (see profiler)", Status.UNCONFIRMED,
                                evidence=evidence)
        tracers = facts.of(TRACING_WATCH)
        if tracers is not None and tracers.on:
            return self.finding(ctx, None, f"{said}, yet {tracers.text()}: the interpreter calls such a function on "
                                           "every Python frame outside torch's ops, its cost and not the code's (see "
                                           "tracing)", Status.UNCONFIRMED, evidence=evidence)
        if slowed is not None and slowed > PROFILER_TRUSTED:
            return self.finding(ctx, None, f"{said}, yet under the profiler it took {slowed:.1f}× its unprofiled "
                                           f"median ({median_ms:.3g} ms): the profiler's own cost may be what is "
                                           "outside", Status.UNCONFIRMED, evidence=evidence)
        if on_cpu is not None and on_cpu < ON_CPU_SHARE:
            return self.finding(ctx, None, f"{said}, yet its calling thread ran on a CPU for {on_cpu:.0%} of that "
                                           "time outside the ops: it mostly waited (for its own threads, child "
                                           "processes or I/O), which is not Python's cost", Status.UNCONFIRMED,
                                evidence=evidence)
        held = library_holder(split) if split is not None else None
        if held is not None:
            return self.finding(ctx, None, f"{said}, yet {split.name_of(held[0])} held {held[1]:.0%} of that "
                                           "CPU time, more "
                                           "than Python: the time outside the ops is its work, not Python's",
                                Status.UNCONFIRMED, evidence=evidence)
        # Without a split, cProfile's top function is the only sign of another library's work.
        in_op = op_call_on_top(facts) if split is None else None
        if in_op is not None:
            return self.finding(ctx, None, f"{said}, yet under cProfile the function with the most own time is "
                                           f"{in_op[0]}, a call of torch's {in_op[1]}: the time outside the ops "
                                           "may be another library's work or waiting, not Python",
                                Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{said}: {MECHANISM}; {EVIDENCE_ONLY}", Status.CAUSE, evidence=evidence)


CAUSES = (PythonTime(),)
