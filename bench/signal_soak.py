"""Soak the process-wide FTZ/DAZ broadcast and pinning against a hostile thread population.

    python bench/signal_soak.py [--rounds 1000] [--deadline 0.05] [--json FILE]

One process holds 200 threads: some block every real-time signal, some sit
in ``read`` on a pipe, some in ``Condition.wait`` (a futex), some in
``time.sleep``; a spawner keeps starting short-lived threads, so some exit
during each broadcast and some are created during it. Each round enters
``fpenv.flush_denormals(True, "process")`` and ``threads.pinned()``, leaves
both, and checks:

* hang: the change or the restore took longer than its deadline allows
  (the deadline, plus the one second a late handler may hold the request,
  plus two seconds of scheduling slack on a busy machine);
* unreported: a thread alive before and after the change that the census
  does not list, or a signal-blocking thread the census calls reached;
* mismatched: a thread read back reached with other bits than asked for;
* not restored: after the exit, a thread read back with another FTZ state
  than it had before the round (and not named by the restore's warning as
  one it could not reach in time), or with another affinity mask.

At the end the blocking threads unblock and read their own register: a
change reported as not made must not have been made behind the report's
back. Prints one table; ``--json`` also writes it. Exit status 1 if any
check failed. tests/test_signal_soak.py runs a short soak of this script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import warnings
from dataclasses import asdict, dataclass, field

import torch

from benchctl import fpenv, threads

HANDLER_DRAIN_S = 1.0  # csrc/signal_broadcast.cpp kHandlerDrainLimit
SLACK_S = 2.0
RESTORE_MISSED = "flush_denormals could not restore threads ["  # fpenv.flush_denormals' warning
RT_SIGNALS = range(signal.SIGRTMIN, signal.SIGRTMAX + 1)


@dataclass
class Figures:
    rounds: int = 0
    broadcasts: int = 0
    deadline_s: float = 0.0
    threads_at_start: int = 0
    blocking_threads: int = 0
    threads_born: int = 0
    hangs: int = 0
    slowest_broadcast_s: float = 0.0
    unreached_reported: int = 0  # (thread, broadcast) pairs reported not reached
    unreported: int = 0
    mismatched: int = 0
    restores_checked: int = 0  # (thread, round) pairs whose FTZ and mask were checked after the exit
    restore_missed_reported: int = 0  # (thread, round) pairs the restore named as not put back, blockers aside
    not_restored: int = 0
    blocked_changed_behind_report: int = 0
    problems: list = field(default_factory=list)

    def problem(self, what: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(what)

    @property
    def failed(self) -> int:
        return (self.hangs + self.unreported + self.mismatched + self.not_restored
                + self.blocked_changed_behind_report)


class Population:
    """The 200 threads and the spawner, with a stop switch."""

    def __init__(self, kinds: dict[str, int]):
        self.stop = threading.Event()
        self.cond = threading.Condition()
        self.read_fd, self.write_fd = os.pipe()
        self.blocker_tids: list[int] = []
        self.blocker_states: list[dict] = []
        self.born = 0
        self.left_on: dict[int, bool] = {}  # threads a restore could not reach, read back FTZ on
        self.last_checked: set[int] = set()  # threads the last round's check read back
        self._lock = threading.Lock()
        targets = {"block": self._block, "read": self._read, "futex": self._futex, "sleep": self._sleep}
        self.threads = [threading.Thread(target=targets[kind], name=f"soak-{kind}-{i}", daemon=True)
                        for kind, n in kinds.items() for i in range(n)]
        self.spawner = threading.Thread(target=self._spawn, name="soak-spawner", daemon=True)
        self._ready = threading.Barrier(len(self.threads) + 1)

    def start(self) -> None:
        for t in self.threads:
            t.start()
        self._ready.wait()
        self.spawner.start()

    def _block(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, RT_SIGNALS)
        with self._lock:
            self.blocker_tids.append(threading.get_native_id())
        self._ready.wait()
        self.stop.wait()
        # Still blocked: read the register before any stale signal can run.
        state = fpenv.thread_state()
        with self._lock:
            self.blocker_states.append(state)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, RT_SIGNALS)

    def _read(self) -> None:
        self._ready.wait()
        os.read(self.read_fd, 1)  # blocks until shutdown writes one byte per reader

    def _futex(self) -> None:
        self._ready.wait()
        with self.cond:
            self.cond.wait_for(self.stop.is_set)

    def _sleep(self) -> None:
        self._ready.wait()
        while not self.stop.is_set():
            time.sleep(0.2)

    def _spawn(self) -> None:
        # Threads that live from nothing to a few milliseconds: some exit while
        # a broadcast signals them, some are born while it runs.
        i = 0
        while not self.stop.is_set():
            t = threading.Thread(target=time.sleep, args=((i % 5) * 0.001,), name="soak-brief", daemon=True)
            t.start()
            i += 1
            with self._lock:
                self.born += 1
            if i % 8 == 0:
                time.sleep(0.001)

    def shutdown(self) -> None:
        self.stop.set()
        with self.cond:
            self.cond.notify_all()
        os.write(self.write_fd, b"x" * sum(1 for t in self.threads if "-read-" in t.name))
        for t in self.threads + [self.spawner]:
            t.join(timeout=10)


def _tids() -> set[int]:
    return {int(t) for t in os.listdir("/proc/self/task")}


def _masks() -> dict[int, frozenset]:
    out = {}
    for tid in _tids():
        try:
            out[tid] = frozenset(os.sched_getaffinity(tid))
        except OSError:
            pass  # exited meanwhile
    return out


def _timed(fn):
    t0 = time.monotonic()
    result = fn()
    return result, time.monotonic() - t0


def soak_round(pop: Population, fig: Figures, deadline_s: float) -> None:
    limit = deadline_s + HANDLER_DRAIN_S + SLACK_S
    blockers = set(pop.blocker_tids)
    masks_before = _masks()
    before = _tids()
    manager = fpenv.flush_denormals(True, "process", deadline_s=deadline_s)
    census, took = _timed(manager.__enter__)
    after = _tids()
    try:
        with threads.pinned("compact"):
            pass
    finally:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            _, took_restore = _timed(lambda: manager.__exit__(None, None, None))
    # The restore names the threads it could not put back (the blocking ones,
    # and any that did not answer in time on a busy machine).
    named = {int(t) for w in caught if str(w.message).startswith(RESTORE_MISSED)
             for t in re.findall(r"\d+", str(w.message).split("]")[0])}
    check, took_check = _timed(lambda: fpenv.census("process", deadline_s=deadline_s))
    fig.broadcasts += 3
    fig.slowest_broadcast_s = max(fig.slowest_broadcast_s, took, took_restore, took_check)
    for what, t in (("change", took), ("restore", took_restore), ("census", took_check)):
        if t > limit:
            fig.hangs += 1
            fig.problem(f"round {fig.rounds}: the {what} took {t:.2f} s (limit {limit:.2f} s)")

    listed = {r["tid"]: r for r in census}
    fig.unreached_reported += len(census.unreached) + len(census.unconfirmed)
    for tid in (before & after & _tids()) - listed.keys():
        fig.unreported += 1
        fig.problem(f"round {fig.rounds}: thread {tid} alive throughout is missing from the census")
    for tid in blockers:
        if listed.get(tid, {}).get("reached"):
            fig.unreported += 1
            fig.problem(f"round {fig.rounds}: thread {tid} blocks the signal yet is reported reached")
        elif tid not in census.unreached:
            fig.unreported += 1
            fig.problem(f"round {fig.rounds}: blocking thread {tid} not listed as unreached")
    fig.mismatched += len(census.mismatched)

    masks_after = _masks()
    fig.restore_missed_reported += len(named - blockers)
    # Threads born in the round are the spawner's: they inherit its state, which is
    # the one it entered with unless the restore could not reach it (and named it).
    spawner = next((r for r in check if r["tid"] == pop.spawner.native_id and r["reached"]), None)
    newborn = bool(spawner and spawner["ftz"])
    for r in check:
        if not r["reached"]:
            continue
        fig.restores_checked += 1
        tid = r["tid"]
        # A thread keeps its state from the end of the last round.
        wanted = pop.left_on.get(tid, False) if tid in pop.last_checked else newborn
        ftz_wrong = bool(r["ftz"]) != wanted and tid not in named
        mask_wrong = tid in masks_before and tid in masks_after and masks_before[tid] != masks_after[tid]
        if ftz_wrong or mask_wrong:
            fig.not_restored += 1
            fig.problem(f"round {fig.rounds}: thread {tid} ({r['name']}) not restored and not reported: "
                        f"ftz={r['ftz']}, mask {sorted(masks_before.get(tid, ()))} -> "
                        f"{sorted(masks_after.get(tid, ()))}")
    # What the next round starts from: threads left on (reported) stay on.
    pop.left_on = {r["tid"]: True for r in check if r["reached"] and r["ftz"]}
    pop.last_checked = {r["tid"] for r in check if r["reached"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1000, help="change+pin+restore rounds (default 1000)")
    parser.add_argument("--deadline", type=float, default=0.05,
                        help="deadline_s of each broadcast; the blocking threads make every one wait it out")
    parser.add_argument("--per-kind", type=int, default=50,
                        help="threads of each of the 4 kinds (block, read, futex, sleep): 200 by default")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    torch.set_num_threads(2)
    torch.ones(64).sum()  # start torch's OpenMP team, which pinning places
    pop = Population({kind: args.per_kind for kind in ("block", "read", "futex", "sleep")})
    pop.start()
    fig = Figures(deadline_s=args.deadline, threads_at_start=len(_tids()), blocking_threads=len(pop.blocker_tids))
    try:
        for _ in range(args.rounds):
            soak_round(pop, fig, args.deadline)
            fig.rounds += 1
    finally:
        pop.shutdown()
    fig.threads_born = pop.born
    for state in pop.blocker_states:
        if state["ftz"]:
            fig.blocked_changed_behind_report += 1
            fig.problem(f"a blocking thread reported unreached runs with FTZ on: {state}")
    if len(pop.blocker_states) != fig.blocking_threads:
        fig.problem(f"only {len(pop.blocker_states)} of {fig.blocking_threads} blocking threads read themselves")
        fig.blocked_changed_behind_report += fig.blocking_threads - len(pop.blocker_states)

    rows = [
        ("rounds (change + pin + unpin + restore)", fig.rounds),
        ("broadcasts (change, restore, census)", fig.broadcasts),
        ("deadline per broadcast", f"{fig.deadline_s} s"),
        ("threads at start", fig.threads_at_start),
        ("  of which block every RT signal", fig.blocking_threads),
        ("short-lived threads born meanwhile", fig.threads_born),
        ("hangs past deadline + 1 s drain + 2 s slack", fig.hangs),
        ("slowest broadcast", f"{fig.slowest_broadcast_s:.3f} s"),
        ("unreached threads reported (thread x broadcast)", fig.unreached_reported),
        ("threads not reported (missing, or blocked yet 'reached')", fig.unreported),
        ("threads read back with other bits than asked", fig.mismatched),
        ("restores checked (thread x round, FTZ and mask)", fig.restores_checked),
        ("  restore could not reach in time, named in its warning", fig.restore_missed_reported),
        ("not restored and not reported", fig.not_restored),
        ("blocking threads changed behind the report", fig.blocked_changed_behind_report),
    ]
    for label, value in rows:
        print(f"{label:58} {value:>10}")
    for p in fig.problems:
        print("problem:", p)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**asdict(fig), "failed": fig.failed}, f, indent=1)
    return 1 if fig.failed or fig.problems else 0


if __name__ == "__main__":
    sys.exit(main())
