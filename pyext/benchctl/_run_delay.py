"""The time this process's threads spent runnable but waiting for a CPU: the run delay (the second field of
``/proc/self/task/*/schedstat``), which no perf software event counts.

It is the direct trace of oversubscription: a thread that shares its CPU with another runnable thread (a
neighbour process, another pool's worker, a team larger than the CPUs) waits on the CPU's run queue, and a
team waits for its slowest member. Context switches count how often that happens; under a scheduler that
gives few, long slices (Linux 6.6+'s EEVDF) they barely move while the wait grows by milliseconds an
iteration (an Intel Xeon VM, 6.18: a two-thread team beside a spinning neighbour, 3 switches an iteration
against 2 on one thread, while the wait went from ~5 ms to ~0).

:class:`RunDelay` keeps one descriptor per thread and re-reads each with ``pread`` (procfs regenerates the
line on every read); threads are listed again where their number changed or one has gone, so a team started
after opening is counted from its first read. The count is cumulative and never falls: a thread that exits
takes only what it waited since the last read with it (one made and gone between two reads is never seen;
the worker reads at least every 2 ms and around every longer iteration, and a team outlives its iterations).
"""

from __future__ import annotations

import os

from . import _procfs

__all__ = ["RunDelay"]

# "<ns on a CPU> <ns waiting on a run queue> <timeslices>\n": 64 bytes hold it.
_LINE = 64


class RunDelay:
    """Cumulative nanoseconds this process's threads waited on a run queue since it was made, or None from
    :meth:`read` where this kernel keeps no schedstat (built without ``CONFIG_SCHED_INFO``): ``available``
    says which, ``why`` the reason."""

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}
        self._last: dict[int, int] = {}
        self._total = 0
        self.closed = False
        # The threads that exist now start from what they waited so far: only what follows counts.
        self.available = self._sample(count_new=False)
        self.why = "" if self.available else "no /proc/self/task/*/schedstat here (a kernel without CONFIG_SCHED_INFO)"

    def _open(self, tid: int) -> int | None:
        try:
            fd = os.open(f"{_procfs.TASK_DIR}/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # the thread exited since the listing, or no schedstat
            return None
        self._fds[tid] = fd
        return fd

    def _drop(self, tid: int) -> None:
        os.close(self._fds.pop(tid))
        self._last.pop(tid, None)

    def _threads(self) -> int | None:
        """How many threads the process has (procfs gives a task directory one link per thread, plus 2): a
        stat costs half a listing, and the listing is needed only where threads came or went."""
        try:
            return os.stat(_procfs.TASK_DIR).st_nlink - 2
        except OSError:
            return None

    def _relist(self) -> list[int]:
        """Open the threads made since the last listing and forget those gone; the threads opened."""
        try:
            listed = {int(t) for t in os.listdir(_procfs.TASK_DIR) if t.isdigit()}
        except OSError:
            return []
        for tid in [t for t in self._fds if t not in listed]:
            self._drop(tid)
        return [tid for tid in listed - set(self._fds) if self._open(tid) is not None]

    def _add(self, tids: list[int], count_new: bool) -> tuple[bool, bool]:
        """Add what each of ``tids`` waited since its last read: (whether any could be read, whether any is gone)."""
        read_any = gone = False
        for tid in tids:
            try:
                waited = int(os.pread(self._fds[tid], _LINE, 0).split()[1])
            except (OSError, IndexError, ValueError):  # it exited (a reaped thread's file reads ESRCH)
                self._drop(tid)
                gone = True
                continue
            read_any = True
            last = self._last.get(tid)
            if last is None:
                # A thread made since the last read waited all of it since then: counted whole (except at opening).
                self._total += waited if count_new else 0
            else:
                self._total += waited - last
            self._last[tid] = waited
        return read_any, gone

    def _sample(self, count_new: bool) -> bool:
        """Add what each thread waited since the last read; whether any thread could be read."""
        if self._threads() != len(self._fds):
            self._relist()
        read_any, gone = self._add(list(self._fds), count_new)
        if gone:  # one thread left while another may have come (the count alone cannot tell): read only those new
            read_any |= self._add(self._relist(), count_new)[0]
        return read_any

    @property
    def threads(self) -> int:
        """How many threads a :meth:`read` re-reads now (its cost grows with them)."""
        return len(self._fds)

    def read(self) -> int | None:
        """Nanoseconds waited on a run queue by this process's threads since opening, or None (see ``why``)."""
        if self.closed:
            raise RuntimeError("the run delay reader is closed")
        if not self.available or not self._sample(count_new=True):
            return None
        return self._total

    def close(self) -> None:
        for tid in list(self._fds):
            self._drop(tid)
        self.closed = True
