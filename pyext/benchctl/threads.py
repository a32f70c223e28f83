"""Thread counts and pinning for the threads torch computes on, with readback.

* :func:`set_num_threads` / :func:`get_num_threads`: torch's intra-op count,
  every BLAS/OpenMP pool threadpoolctl finds, and the inter-op count while
  torch still allows it, set in one call and read back from each.
* :func:`pin` / :func:`unpin` / :func:`pinned`: restrict the calling thread
  and every thread of the OpenMP team torch's parallel regions run on, each
  to one CPU, while the process runs. The calling thread is thread 0 of that
  team. Each mask is set from inside its thread (native, see
  ``csrc/affinity.hpp``); unpinning restores each thread's mask from before
  the first pin exactly.
* :func:`census`: where every thread of the process may run and runs now.
* :func:`launch_env`: the environment that gives a fresh process the same
  placement from its start (for the runner's isolated workers).

Threads created by a pinned thread inherit its one-CPU mask (glibc and the
OpenMP runtimes copy the creator's mask), so a team that grows while pinned
starts its new workers on thread 0's CPU; :func:`unpin` gives team threads
that joined while pinned the calling thread's original mask.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from dataclasses import dataclass, field

from . import _loaded_objects, _native, _procfs, _validate, omp
from .placement import placement
from .topology import cpu_topology

__all__ = [
    "get_num_threads", "set_num_threads", "census", "pin", "unpin", "pinned", "launch_env",
]

# /proc/<tid>/stat field 39 ("processor"): the CPU the thread last ran on.
# Fields are counted after the ")" closing the command name, which may hold
# spaces; field 3 is the first one after it.
_STAT_PROCESSOR_AFTER_COMM = 39 - 3


def _torch():
    import torch  # torch's runtime must be loaded for its team to exist

    return torch


# ---------------------------------------------------------------- thread counts


_POOLS_CACHE: dict[tuple[int, int], list] = {}  # the loaded objects' generation -> threadpoolctl's controllers


def _pools() -> list:
    """threadpoolctl's controller of every BLAS/OpenMP pool loaded now. Built afresh (~0.8 ms) only where a
    library was loaded or unloaded since the last call (:func:`benchctl._loaded_objects.generation`): a paired
    worker switches the count every few milliseconds, and with two builds a switch (1.9 ms) the switches of a
    4.5 s threads worker took 0.99 s of it."""
    from threadpoolctl import ThreadpoolController

    key = _loaded_objects.generation()
    if key is None:
        return ThreadpoolController().lib_controllers
    if key not in _POOLS_CACHE:
        _POOLS_CACHE.clear()
        _POOLS_CACHE[key] = ThreadpoolController().lib_controllers
    return list(_POOLS_CACHE[key])


def get_num_threads() -> dict:
    """Every thread count that decides how torch work is split, as read now.

    ``{"torch": intra-op, "interop": inter-op, "omp_team": threads in a
    parallel region of torch's OpenMP runtime (None without one), "pools":
    [{"user_api", "internal_api", "prefix", "filepath", "version",
    "num_threads"}] from threadpoolctl}``.
    """
    torch = _torch()
    team = len(omp.team_census()) if omp.torch_runtime() is not None else None
    pools = []
    for lib in _pools():
        info = lib.info()
        pools.append({k: info.get(k) for k in ("user_api", "internal_api", "prefix", "filepath", "version")})
        pools[-1]["num_threads"] = lib.get_num_threads()
    return {
        "torch": torch.get_num_threads(),
        "interop": torch.get_num_interop_threads(),
        "omp_team": team,
        "pools": pools,
    }


def _set_interop(torch, interop: int) -> None:
    current = torch.get_num_interop_threads()
    if interop == current:
        return  # asking again for the count in force is not a change
    try:
        torch.set_num_interop_threads(interop)
    except RuntimeError as e:
        raise RuntimeError(
            f"torch no longer lets this process change its inter-op thread count (it is {current}, "
            f"asked for {interop}): torch fixes it once inter-op work has started or it was set once. "
            f"Set it first thing in the process, or run the work in a fresh process "
            f"(benchctl run --set threads=..., or launch_env). Nothing was changed. torch said: {e}"
        ) from e


def _restore_counts(torch, before_torch: int, before_pools: list, error: BaseException) -> None:
    """Put the intra-op and pool counts back after ``error``; every step is tried.

    When a step of the restore fails too, the RuntimeError raised says which,
    chained to ``error`` (the failure that started it).
    """
    failed = []
    try:
        torch.set_num_threads(before_torch)
    except Exception as e:
        failed.append(f"torch: {e}")
    for lib, count in before_pools:
        if count is None:
            continue
        try:
            lib.set_num_threads(count)
        except Exception as e:
            failed.append(f"{lib.filepath}: {e}")
    if failed:
        raise RuntimeError(
            f"setting thread counts failed ({type(error).__name__}: {error}), and restoring the previous "
            f"counts failed too for: {'; '.join(failed)}"
        ) from error


def _mismatches(readback: dict, n: int, interop: int | None) -> list[dict]:
    """``{"what", "asked", "got"}`` for each count that did not read back as asked."""
    wanted = [("torch", n, readback["torch"]), ("omp_team", n, readback["omp_team"])]
    if interop is not None:
        wanted.append(("interop", interop, readback["interop"]))
    wanted += [(p["filepath"], n, p["num_threads"]) for p in readback["pools"]]
    return [{"what": what, "asked": asked, "got": got} for what, asked, got in wanted
            if got is not None and got != asked]


def set_num_threads(n: int, interop: int | None = None) -> dict:
    """Use ``n`` threads in torch and in every loaded BLAS/OpenMP pool.

    Sets torch's intra-op count (``torch.set_num_threads``, which also sets
    torch's OpenMP runtime and MKL) and each pool threadpoolctl finds; with
    ``interop``, then torch's inter-op count, which torch accepts only once
    and before any inter-op work (RuntimeError with what to do otherwise).
    On any failure the counts changed so far are put back: nothing is left
    half-applied (the inter-op count comes last because torch cannot undo it).

    Returns :func:`get_num_threads` read back afterwards, plus ``mismatches``:
    ``[{"what", "asked", "got"}]`` for every count that reads back other than
    asked (a pool built with fewer threads, ``OMP_THREAD_LIMIT``), also
    announced with a RuntimeWarning.
    """
    n = _validate.count("n", n, 1)
    interop = _validate.optional_count("interop", interop, 1)
    torch = _torch()
    pools = _pools()
    before_torch = torch.get_num_threads()
    before_pools = [(lib, lib.get_num_threads()) for lib in pools]
    try:
        torch.set_num_threads(n)
        for lib in pools:
            lib.set_num_threads(n)
        if interop is not None:
            _set_interop(torch, interop)
    except Exception as error:
        _restore_counts(torch, before_torch, before_pools, error)
        raise
    readback = get_num_threads()
    readback["mismatches"] = _mismatches(readback, n, interop)
    if readback["mismatches"]:
        warnings.warn(f"thread counts read back other than asked: {readback['mismatches']}", RuntimeWarning,
                      stacklevel=2)
    return readback


# ---------------------------------------------------------------------- census


def _last_cpu(tid: int) -> int | None:
    stat = _procfs.read_text(f"{_procfs.TASK_DIR}/{tid}/stat")
    if stat is None:
        return None  # the thread has exited
    return int(stat[stat.rindex(")") + 1 :].split()[_STAT_PROCESSOR_AFTER_COMM])


def _mask(tid: int) -> frozenset | None:
    try:
        return frozenset(os.sched_getaffinity(tid))
    except (ProcessLookupError, FileNotFoundError):
        return None  # the thread has exited


def census() -> list[dict]:
    """Every thread of this process: ``{"omp_thread", "tid", "name", "allowed_cpus", "current_cpu"}``.

    Threads of torch's OpenMP team come first, by ``omp_thread``, with
    ``current_cpu`` read by the thread itself inside a parallel region; the
    other threads follow by tid with ``omp_thread`` None and ``current_cpu``
    the CPU the kernel last ran them on. Without torch imported there is no
    team and every thread has ``omp_thread`` None.
    """
    team = omp.team_census() if omp.torch_runtime() is not None else []
    records = []
    for member in team:
        mask = _mask(member["tid"])
        records.append(
            {
                "omp_thread": member["omp_thread"],
                "tid": member["tid"],
                "name": _procfs.task_name(member["tid"]),
                "allowed_cpus": sorted(mask) if mask is not None else None,
                "current_cpu": member["cpu"],
            }
        )
    in_team = {m["tid"] for m in team}
    for tid in _procfs.task_ids():
        if tid in in_team:
            continue
        mask = _mask(tid)
        if mask is None:
            continue
        records.append(
            {
                "omp_thread": None,
                "tid": tid,
                "name": _procfs.task_name(tid),
                "allowed_cpus": sorted(mask),
                "current_cpu": _last_cpu(tid),
            }
        )
    return records


# --------------------------------------------------------------------- pinning


@dataclass
class _SavedMasks:
    """Masks to put back: per tid, and the one for team threads that joined later."""

    by_tid: dict[int, frozenset] = field(default_factory=dict)
    caller_tid: int | None = None


_lock = threading.RLock()
_originals = _SavedMasks()  # masks from before the first pin(); empty when unpinned


def _apply(saved: _SavedMasks) -> None:
    """Put back every saved mask, and the caller's for team threads not saved; verify."""
    wanted = dict(saved.by_tid)
    joiner_mask = saved.by_tid.get(saved.caller_tid)
    if joiner_mask is not None and omp.torch_runtime() is not None:
        for member in omp.team_census():
            wanted.setdefault(member["tid"], joiner_mask)
    wrong = []
    for tid, mask in wanted.items():
        try:
            os.sched_setaffinity(tid, mask)
        except ProcessLookupError:
            continue  # the thread has exited: nothing left to restore
        except OSError as e:  # keep going: restore every other thread first
            wrong.append((tid, sorted(mask), str(e)))
            continue
        now = _mask(tid)
        if now is not None and now != mask:
            wrong.append((tid, sorted(mask), sorted(now)))
    if wrong:
        raise RuntimeError(f"could not restore affinity masks (tid, wanted, now): {wrong}")


def _topology() -> dict:
    """The topology over the CPUs this process may use, also while pinned.

    ``cpu_topology()`` reads the calling thread's mask, which pinning narrows
    to one CPU; while pinned, the masks from before the first pin say what is
    allowed.
    """
    with _lock:
        saved = set().union(*_originals.by_tid.values())
    return cpu_topology(allowed=saved or None)


def _pin(policy, oversubscribe: bool) -> tuple[list[dict], _SavedMasks]:
    """Pin the team; return the census and the masks the threads had just before."""
    _torch()
    runtime = omp.resolve_runtime()
    team = omp.team_census(0, runtime)
    cpus = placement(policy, len(team), _topology(), oversubscribe=oversubscribe)
    # Everything is validated; from here each step changes masks or undoes them.
    members = _native.omp_team_pin(runtime["kind"], runtime["path"], [[c] for c in cpus])
    previous = _SavedMasks({m.tid: frozenset(m.before) for m in members}, members[0].tid)
    try:
        result = census()
        placed = {r["omp_thread"]: r for r in result if r["omp_thread"] is not None}
        off = [
            (i, placed.get(i, {}).get("allowed_cpus"))
            for i, cpu in enumerate(cpus)
            if placed.get(i, {}).get("allowed_cpus") != [cpu] or placed[i]["tid"] != members[i].tid
        ]
        if off or len(placed) != len(cpus):
            raise RuntimeError(
                f"the OpenMP runtime did not keep the placement (omp thread, mask read back): {off}; "
                f"previous masks restored"
            )
    except BaseException as error:  # also KeyboardInterrupt: never leave the team pinned and forgotten
        _restore_after(previous, error)
        raise
    return result, previous


def _restore_after(previous: _SavedMasks, error: BaseException) -> None:
    """Put back ``previous`` after ``error``; if that fails too, say so, chained to ``error``."""
    try:
        _apply(previous)
    except Exception as failed:
        raise RuntimeError(f"{error}; and restoring the previous masks failed too: {failed}") from error


def _remember_originals(previous: _SavedMasks) -> None:
    for tid, mask in previous.by_tid.items():
        _originals.by_tid.setdefault(tid, mask)
    if _originals.caller_tid is None:
        _originals.caller_tid = previous.caller_tid


def pin(policy="compact", *, oversubscribe: bool = False) -> list[dict]:
    """Pin the calling thread and each thread of torch's OpenMP team, one CPU each.

    ``policy``: ``"compact"``, ``"scatter"`` or a list of CPU ids (thread ``i``
    on ``policy[i]``; see :mod:`benchctl.placement`). The team is the one
    parallel regions started from the calling thread use, at its current size
    (:func:`set_num_threads` first to change it). Bad input raises ValueError
    before any mask changes; a failure while setting restores every mask.
    Pinning again re-pins; :func:`unpin` still restores the masks from before
    the first pin. Returns :func:`census` read back after pinning.
    """
    with _lock:
        result, previous = _pin(policy, oversubscribe)
        _remember_originals(previous)
        return result


def unpin() -> list[dict]:
    """Give every thread :func:`pin` changed its mask from before the first pin.

    Team threads that joined while pinned (they inherited a pinned mask) get
    the calling thread's original mask. Returns :func:`census` afterwards.
    """
    global _originals
    with _lock:
        if _originals.by_tid:
            _apply(_originals)
            _originals = _SavedMasks()
        return census()


@contextlib.contextmanager
def pinned(policy="compact", *, oversubscribe: bool = False):
    """``with pinned("compact") as placement_census:`` pin, and on exit, also
    after an exception, put back exactly the masks from before entering."""
    global _originals
    with _lock:
        outer = _SavedMasks(dict(_originals.by_tid), _originals.caller_tid)
        result, previous = _pin(policy, oversubscribe)
        _remember_originals(previous)  # inside the block, pin()/unpin() see the true originals
    try:
        yield result
    finally:
        with _lock:
            try:
                _apply(previous)
            finally:
                _originals = outer  # also when restoring failed: the saved state is the outer one again


# ------------------------------------------------------------- fresh processes


def launch_env(policy, n: int, *, runtime_kind: str | None = None, oversubscribe: bool = False) -> dict[str, str]:
    """Environment variables that start a fresh process with ``n`` threads placed like ``pin(policy)``.

    ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS``, plus the binding variables
    of the OpenMP runtime torch uses (``runtime_kind``: "libgomp", "libomp"
    or "libiomp5"; default: the one torch has loaded here): the standard
    ``OMP_PLACES`` (one place per thread, in thread order) with
    ``OMP_PROC_BIND=close`` for libgomp and libomp, ``KMP_AFFINITY`` with an
    explicit proclist for Intel's libiomp5. The placement is computed for this
    process's allowed CPUs (from before pinning, if pinned). A child inherits
    the mask of the thread that starts it, so start it from a thread that is
    not pinned. Same ValueErrors as :func:`pin`.
    """
    n = _validate.count("n", n, 1)
    if runtime_kind is None:
        _torch()
        runtime_kind = omp.resolve_runtime()["kind"]
    if runtime_kind not in ("libgomp", "libomp", "libiomp5"):
        raise ValueError(f"unknown OpenMP runtime kind {runtime_kind!r}: use libgomp, libomp or libiomp5")
    cpus = placement(policy, n, _topology(), oversubscribe=oversubscribe)
    env = {"OMP_NUM_THREADS": str(n), "MKL_NUM_THREADS": str(n)}
    if runtime_kind == "libiomp5":
        # Intel's runtime lets KMP_AFFINITY override OMP_PLACES and warns when
        # both are set. Syntax: modifiers, then the type.
        env["KMP_AFFINITY"] = f"granularity=fine,proclist=[{','.join(map(str, cpus))}],explicit"
    else:
        # close: thread 0 on the first place (where the runtime binds the
        # initial thread), thread i on place i.
        env["OMP_PLACES"] = ",".join(f"{{{c}}}" for c in cpus)
        env["OMP_PROC_BIND"] = "close"
    return env
