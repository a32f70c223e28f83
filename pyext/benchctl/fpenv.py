"""Denormal flushing (FTZ/DAZ) that reaches every thread, and proves it.

``torch.set_flush_denormal(True)`` changes the FP control register of the
calling thread only: OpenMP workers that already exist keep their own, so a
parallel op still produces (and pays for) subnormals. Here every change is
made on the threads of a *scope* and read back from each of them:

* ``"thread"``: the calling thread.
* ``"openmp"``: every thread of the calling thread's team in the OpenMP
  runtime torch uses (native code runs on each team thread through the
  runtime's own fork entry point). From the main thread that is the team
  torch's ops on the main thread run on; from another Python thread it is
  that thread's own pool (the runtime keeps one per thread that starts
  parallel regions), not the main thread's.
* ``"process"``: every thread of the process. A real-time signal is queued to
  each task; its handler rewrites the FP state saved for ``sigreturn``, and a
  second signal the thread sends itself reads back the state it then runs
  with. A thread that does not answer within ``deadline_s`` (it blocks the
  signal, or is never scheduled) is reported ``reached=False``: either left as
  it was (``Census.unreached``; its signal, if delivered later, does nothing)
  or changed in time but not read back in time (``Census.unconfirmed``). The
  signal used is a free one (disposition SIG_DFL), highest first, named in
  ``Census.signal``; a thread blocked in a system call that ``SA_RESTART``
  does not resume (``poll``, ``nanosleep``...) sees ``EINTR``, as with any
  signal.

Every call returns a :class:`Census`: the list of per-thread records, which
also lists the threads read back with other bits than asked for
(``mismatched``).

Threads inherit the state of the thread that creates them, so threads started
after a process-wide change are flushed too; a pool created *before* the change
is exactly what ``torch.set_flush_denormal`` misses.

Registers: x86-64 MXCSR (FTZ bit 15 flushes subnormal results, DAZ bit 6 reads
subnormal inputs as zero); aarch64 FPCR.FZ (flushes inputs and results; there
is no separate DAZ control, so ``daz`` is reported as ``None``).
"""

from __future__ import annotations

import os
import platform
import threading
import warnings
from typing import Optional

from . import _native, _procfs, _validate, omp
from .errors import UnavailableError

__all__ = [
    "FPControlUnavailable", "SCOPES", "DEFAULT_DEADLINE_S", "MAX_DEADLINE_S", "supported", "is_flushed", "thread_state",
    "set_thread_state", "Census", "census", "set_flush_denormal", "flush_denormals", "broadcast_handler",
    "signal_disposition",
]

SCOPES = ("thread", "openmp", "process")
DEFAULT_DEADLINE_S = 1.0
# No caller means a longer wait, and the native clock arithmetic would overflow on huge values.
MAX_DEADLINE_S = _native.FP_BROADCAST_MAX_DEADLINE_S

_REGISTER = _native.fp_control_register()  # "MXCSR" | "FPCR" | ""
_MASKS = _native.fp_masks()
_FTZ_MASK, _DAZ_MASK = _MASKS.ftz, _MASKS.daz

# A target is what the native layer applies to one thread: None (only read)
# or (ftz, daz).
_Target = Optional[tuple]


def supported() -> tuple[bool, str]:
    """Whether FTZ/DAZ can be read and set here, and what that rests on."""
    machine = platform.machine()
    if not _REGISTER:
        return False, f"no floating-point control register is implemented for {machine}"
    if _REGISTER == "MXCSR":
        daz = "DAZ bit 6" if _DAZ_MASK else "no DAZ (MXCSR_MASK lacks bit 6 on this CPU)"
        return True, f"{machine} MXCSR: FTZ bit 15, {daz}"
    return True, f"{machine} FPCR.FZ (bit 24) flushes subnormal inputs and results; no separate DAZ control"


class FPControlUnavailable(UnavailableError, RuntimeError):
    """This CPU or build has no FTZ/DAZ control benchctl can drive; the message says why."""


def _require_supported() -> None:
    ok, reason = supported()
    if not ok:
        raise FPControlUnavailable(f"benchctl.fpenv is unsupported here: {reason}")


def _check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(repr(s) for s in SCOPES)}; got {scope!r}")


def _decode(raw: int) -> dict:
    return {
        "ftz": bool(raw & _FTZ_MASK),
        "daz": bool(raw & _DAZ_MASK) if _DAZ_MASK else None,
        "raw": raw,
    }


def _bits(raw: int) -> tuple:
    """The (ftz, daz) target that puts a thread back to the state ``raw``."""
    return bool(raw & _FTZ_MASK), bool(raw & _DAZ_MASK)


def _state(raw: int | None) -> dict:
    return _decode(raw) if raw is not None else {"ftz": None, "daz": None, "raw": None}


def is_flushed(record: dict) -> bool:
    """Whether a census record shows a thread that flushes subnormals: read back, FTZ on, and DAZ
    on where the CPU has a DAZ control (aarch64's FPCR.FZ has none and reads ``daz=None``)."""
    return bool(record.get("reached", True) and record.get("ftz") and record.get("daz") is not False)


def _record(tid: int, raw: int | None, reached: bool, **extra) -> dict:
    return {"tid": tid, "name": _procfs.task_name(tid), **_state(raw), "reached": reached, **extra}


def thread_state() -> dict:
    """The calling thread's state: ``{"ftz", "daz", "raw"}`` (``daz`` None where no DAZ exists)."""
    _require_supported()
    return _decode(_native.fp_thread_apply(None).before)


def set_thread_state(ftz: bool, daz: bool) -> dict:
    """Set FTZ and DAZ separately on the calling thread; return the state read back.

    ``daz=True`` raises ValueError where the CPU has no DAZ control.
    """
    _require_supported()
    _validate.flag("ftz", ftz)
    _validate.flag("daz", daz)
    if daz and not _DAZ_MASK:
        raise ValueError(f"this CPU has no separate DAZ control ({supported()[1]})")
    return _decode(_native.fp_thread_apply((ftz, daz)).after)


class Census(list):
    """The per-thread records of one call (a plain list of dicts), plus what the call saw.

    * ``scope``: the scope read or changed.
    * ``signal``: the real-time signal a ``"process"`` call queued (None for
      the other scopes, or when the caller was the only thread).
    * ``deadline_s``: the wait a ``"process"`` call allowed (else None).
    * ``unreached``: threads the change did not reach: left exactly as they
      were (their signal, if it comes later, does nothing).
    * ``unconfirmed``: threads that were changed but whose readback did not
      come in time; ``reached`` is False for them too.
    * ``mismatched``: threads read back with FTZ/DAZ bits other than the
      ones asked for.
    """

    scope: str
    signal: int | None = None
    deadline_s: float | None = None
    unreached: list
    unconfirmed: list
    mismatched: list

    def __init__(self, records, scope: str, signal: int | None = None, deadline_s: float | None = None,
                 unconfirmed=(), mismatched=()):
        super().__init__(records)
        self.scope, self.signal, self.deadline_s = scope, signal, deadline_s
        self.unconfirmed = sorted(unconfirmed)
        self.unreached = sorted(r["tid"] for r in self if not r["reached"] and r["tid"] not in self.unconfirmed)
        self.mismatched = sorted(mismatched)

    def __repr__(self) -> str:
        return (f"Census({list.__repr__(self)}, scope={self.scope!r}, signal={self.signal!r}, "
                f"unreached={self.unreached}, unconfirmed={self.unconfirmed}, mismatched={self.mismatched})")


def _mismatched(records: list[dict], default: _Target, per_tid: dict) -> list[int]:
    """Threads read back with bits other than their target (DAZ compared only where it exists)."""
    out = []
    for r in records:
        target = per_tid.get(r["tid"], default)
        if target is None or not r["reached"]:
            continue
        ftz, daz = target
        if r["ftz"] != ftz or (_DAZ_MASK and r["daz"] != daz):
            out.append(r["tid"])
    return out


# -- one operation per scope. A target is None (read only) or (ftz, daz);
# per_tid overrides the default for the threads it names. Each returns
# ({tid: register before, for each thread the operation changed}, Census).

def _apply_thread(default: _Target, per_tid: dict) -> tuple[dict, Census]:
    tid = threading.get_native_id()
    change = _native.fp_thread_apply(per_tid.get(tid, default))
    records = [_record(tid, change.after, True)]
    return {tid: change.before}, Census(records, "thread", mismatched=_mismatched(records, default, per_tid))


def _apply_openmp(default: _Target, per_tid: dict, num_threads: int = 0) -> tuple[dict, Census]:
    rt = omp.resolve_runtime()
    team = _native.fp_omp_team_apply(rt["kind"], rt["path"], num_threads, default, per_tid)
    # Each team thread read its register back itself after writing it, and
    # said which CPU it ran on.
    before = {t.member.tid: t.change.before for t in team}
    records = [_record(t.member.tid, t.change.after, True, omp_thread=t.member.omp_thread, cpu=t.member.cpu)
               for t in team]
    return before, Census(records, "openmp", mismatched=_mismatched(records, default, per_tid))


def _apply_process(default: _Target, per_tid: dict, deadline_s: float,
                   only_listed: bool = False) -> tuple[dict, Census]:
    # Each thread answers twice: the change, then a readback of the state its
    # sigreturn loaded. A thread changed but not read back in time counts as
    # changed (it is restored) yet unreached: "unconfirmed".
    report = _native.fp_broadcast(default, per_tid, deadline_s, only_listed)
    if report.incomplete:
        warnings.warn(f"process-wide FP state broadcast: {report.incomplete}", RuntimeWarning, stacklevel=3)
    tasks = report.tasks
    before = {t.tid: t.before for t in tasks if t.changed}
    records = [
        {"tid": t.tid, "name": t.name or None, **_state(t.after if t.reached else None), "reached": t.reached}
        for t in tasks
    ]
    unconfirmed = [t.tid for t in tasks if t.changed and not t.reached]
    return before, Census(records, "process", signal=report.signal or None, deadline_s=deadline_s,
                          unconfirmed=unconfirmed, mismatched=_mismatched(records, default, per_tid))


def _apply(scope: str, default: _Target, per_tid: dict, deadline_s: float) -> tuple[dict, Census]:
    if scope == "thread":
        return _apply_thread(default, per_tid)
    if scope == "openmp":
        return _apply_openmp(default, per_tid)
    return _apply_process(default, per_tid, deadline_s)


def census(scope: str = "process", deadline_s: float = DEFAULT_DEADLINE_S) -> Census:
    """Read every thread of ``scope``: ``[{"tid", "name", "ftz", "daz", "raw", "reached"}]``.

    ``"openmp"`` records also carry ``omp_thread`` and ``cpu`` (where that
    thread ran the region). Unreached threads have ``ftz``/``daz``/``raw``
    None. The list is a :class:`Census`: ``.signal``, ``.unreached`` and the
    rest say how the threads were read.
    """
    _check_scope(scope)
    _require_supported()
    return _apply(scope, None, {}, _validate.seconds("deadline_s", deadline_s, MAX_DEADLINE_S))[1]


def set_flush_denormal(on: bool, scope: str = "process", deadline_s: float = DEFAULT_DEADLINE_S) -> Census:
    """Turn FTZ and DAZ on (or off) on every thread of ``scope``.

    Returns the census read back after the change, a :class:`Census`:
    ``reached`` is False for a thread the change did not reach (listed in
    ``.unreached``: left as it was) or that was changed but not read back in
    time (``.unconfirmed``). A thread read back with other bits than asked
    for is listed in ``.mismatched``, and named in a RuntimeWarning.
    """
    _validate.flag("on", on)
    _check_scope(scope)
    _require_supported()
    result = _apply(scope, (on, on), {}, _validate.seconds("deadline_s", deadline_s, MAX_DEADLINE_S))[1]
    if result.mismatched:
        warnings.warn(f"threads {result.mismatched} read back with FTZ/DAZ other than {on}", RuntimeWarning,
                      stacklevel=2)
    return result


class flush_denormals:
    """Context manager: FTZ/DAZ ``on`` for the block, then every thread back to its own state.

    ``with flush_denormals(True, "process") as census: ...`` gives the readback
    after the change. On exit, also after an exception, each thread the change
    reached gets back the FTZ/DAZ bits it had before (its other register bits
    stay as the block left them); a thread the change missed is left alone; a
    thread started inside the block gets the state the entering thread had
    before, which is what it would have inherited without the block. Threads
    the restore cannot reach are named in a RuntimeWarning.

    A restore that cannot run (no free signal; a ``"thread"`` scope exited on
    another thread than the one that entered) raises when the block
    succeeded and is a RuntimeWarning when the block raised, whose exception
    is never replaced; either way the manager stays active, so ``__exit__``
    can be retried.
    """

    def __init__(self, on: bool = True, scope: str = "process", deadline_s: float = DEFAULT_DEADLINE_S):
        self.on = _validate.flag("on", on)
        _check_scope(scope)
        self.scope = scope
        self.deadline_s = _validate.seconds("deadline_s", deadline_s, MAX_DEADLINE_S)
        self._before: dict | None = None

    def __enter__(self) -> Census:
        _require_supported()
        if self._before is not None:
            raise RuntimeError("this flush_denormals is already active; use a new one to nest")
        caller = threading.get_native_id()
        existing = set(_procfs.task_ids())
        # A change that raises has changed nothing (see set_flush_denormal).
        before, records = _apply(self.scope, (self.on, self.on), {}, self.deadline_s)
        # Threads the change missed, left as they were. A thread born during
        # the change is not among them, reached or not (it may have inherited
        # the change from its creator): it gets the newborn default on exit.
        self._missed = {r["tid"] for r in records
                        if not r["reached"] and r["tid"] not in before and r["tid"] in existing}
        self._caller, self._before = caller, before
        return records

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._before is None:
            raise RuntimeError("this flush_denormals is not active")
        try:
            self._restore()
        except Exception as error:
            # Never replace the block's own exception; the manager stays
            # active, so that the restore can be retried.
            if exc_type is None:
                raise
            warnings.warn(f"flush_denormals did not restore FTZ/DAZ: {error}", RuntimeWarning, stacklevel=2)
        return False

    def _restore(self) -> None:
        if self.scope == "thread" and threading.get_native_id() != self._caller:
            raise RuntimeError("a thread-scope flush_denormals must exit on the thread that entered it")
        before = self._before
        per_tid: dict = {tid: None for tid in self._missed}
        per_tid.update({tid: _bits(raw) for tid, raw in before.items()})
        newborn_default = _bits(before[self._caller])
        if self.scope == "openmp":
            records = _restore_team(before, newborn_default, per_tid, self.deadline_s)
        else:
            _, records = _apply(self.scope, newborn_default, per_tid, self.deadline_s)
        self._before = None
        failed = _not_restored(before, records, self._missed)
        if failed:
            warnings.warn(
                f"flush_denormals could not restore threads {failed} (no answer within {self.deadline_s} s, "
                f"or the readback differs): they may keep FTZ/DAZ={self.on}",
                RuntimeWarning,
                stacklevel=3,
            )


def _restore_team(before: dict, default: _Target, per_tid: dict, deadline_s: float) -> list[dict]:
    """Put back every thread of the entry team, also those that have left it.

    The team as it is now first (threads born in the block get ``default``).
    Entry threads still missing are tried in a region as large as the entry
    team, which reuses the pool threads a shrink parked
    (``torch.set_num_threads(1)`` inside the block), then by a broadcast to
    those threads alone, which reaches them in any pool (an exit on another
    thread runs that thread's own team). Returns the last record per thread.
    """
    by_tid: dict = {}

    def missing() -> list[int]:
        return [tid for tid in before if tid not in by_tid and _alive(tid)]

    by_tid.update((r["tid"], r) for r in _apply_openmp(default, per_tid)[1])
    if missing():
        by_tid.update((r["tid"], r) for r in _apply_openmp(default, per_tid, num_threads=len(before))[1])
    left = missing()
    if left:
        targets = {tid: per_tid[tid] for tid in left}
        by_tid.update((r["tid"], r) for r in _apply_process(None, targets, deadline_s, only_listed=True)[1])
    return list(by_tid.values())


def _not_restored(before: dict, records: list[dict], missed: set) -> list[int]:
    """Threads in ``before`` still alive but not read back with their entry bits, and threads born
    in the block (neither in ``before`` nor ``missed``) the restore did not reach: they may keep the
    state they inherited."""
    by_tid = {r["tid"]: r for r in records}
    failed = [r["tid"] for r in records if not r["reached"] and r["tid"] not in before and r["tid"] not in missed]
    for tid, raw in before.items():
        record = by_tid.get(tid)
        if record is not None and record["reached"]:
            if _bits(record["raw"]) != _bits(raw):
                failed.append(tid)
        elif _alive(tid):
            failed.append(tid)
    return sorted(failed)


def _alive(tid: int) -> bool:
    return os.path.exists(f"{_procfs.TASK_DIR}/{tid}")


def broadcast_handler() -> dict:
    """The process-scope signal handler: ``{"signal", "installed", "maybe_pending"}``.

    The handler is installed for a broadcast and put back to the previous
    disposition (SIG_DFL) afterwards, unless a thread may still hold one of its
    signals pending (it blocked it): then it stays installed, doing nothing for
    stale signals, because SIG_DFL would kill the process when that thread
    unblocks. ``maybe_pending`` lists those threads.
    """
    state = _native.fp_broadcast_handler_state()
    return {"signal": state.signal or None, "installed": state.installed, "maybe_pending": list(state.maybe_pending)}


def signal_disposition(sig: int) -> str:
    """``"default"``, ``"ignore"``, ``"benchctl"`` (the broadcast handler) or ``"other"``."""
    return _native.signal_disposition(_validate.count("sig", sig, 1))
