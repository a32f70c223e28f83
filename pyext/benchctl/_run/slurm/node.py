"""On the node: one host's whole run as a submitit job, stopped cleanly on preemption and requeued once.

submitit calls :meth:`HostRun.checkpoint` (any ``checkpoint`` method of its
job's callable, by duck typing) on preemption or near the time limit.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
from typing import Any

from .options import NODE_ENV
from .plan import MAX_REQUEUES

__all__ = ["STOP_GRACE_S", "HostRun"]

#: How long a stopped run may take to save and exit after SIGINT before it is killed
#: (Slurm's preemption signal comes 90 s before the kill).
STOP_GRACE_S = 30.0


def _preemption_signal() -> int:
    # submitit's choice, which SUBMITIT_PREEMPT_SIGNAL can change.
    return getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2"), signal.SIGUSR2)


def _prepare_run_signals() -> None:
    # Slurm may signal every process of the step: only the job (HostRun) acts on it, by
    # stopping the run cleanly; the run must not die of the signal first.
    signal.signal(_preemption_signal(), signal.SIG_IGN)
    # The clean stop is SIGINT (Ctrl-C: the run saves and kills its worker). A job started in
    # the background by a shell inherits SIGINT ignored, and Python then never handles it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cpus_seen() -> dict[str, Any]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"usable": usable, "online": os.cpu_count(), "slurm_cpus_on_node": os.environ.get("SLURM_CPUS_ON_NODE")}


class HostRun:
    """One host's whole run, as a submitit job: the command, run on the node to its end.

    ``--resume`` is added when the results file exists (an earlier attempt of
    this job left it; the controller refuses a folder with old results unless
    asked to resume). submitit calls :meth:`checkpoint` on preemption or near
    the time limit; it requeues once.
    """

    def __init__(self, label: str, command: list[str], json_path: str, cwd: str, requeues: int = 0) -> None:
        self.label, self.command, self.json_path, self.cwd = label, list(command), json_path, cwd
        self.requeues = requeues
        self._proc: subprocess.Popen | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_proc": None}  # a running process is not part of the job's state

    def __call__(self) -> dict[str, Any]:
        resume = os.path.exists(self.json_path)
        argv = self.command + (["--resume"] if resume else [])
        cpus = _cpus_seen()
        print(f"benchctl host {self.label}: attempt {self.requeues + 1} on {socket.gethostname()} "
              f"({cpus['usable']} of {cpus['online']} CPUs usable): {shlex.join(argv)}", file=sys.stderr, flush=True)
        if cpus["usable"] is not None and cpus["online"] is not None and cpus["usable"] < cpus["online"]:
            print(f"benchctl host {self.label}: warning: this job may use {cpus['usable']} of the node's "
                  f"{cpus['online']} CPUs (the cluster's CPU binding); 'all threads' means {cpus['usable']} here",
                  file=sys.stderr, flush=True)
        self._proc = subprocess.Popen(argv, cwd=self.cwd, env={**os.environ, NODE_ENV: self.label},
                                      stdin=subprocess.DEVNULL, start_new_session=True,
                                      preexec_fn=_prepare_run_signals)
        try:
            try:
                # Wait without reaping (Popen.wait would hold a lock the signal handler needs).
                os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOWAIT)
            except ChildProcessError:
                pass
            status = self._proc.wait()
        finally:
            self._stop()
        return {"label": self.label, "hostname": socket.gethostname(), "exit_status": status, "resumed": resume,
                "requeues": self.requeues, "cpus": cpus}

    def _stop(self) -> None:
        """SIGINT to the run (it saves and exits, killing its worker), then SIGKILL after a grace period."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        for sig, grace in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def requeued(self) -> "HostRun":
        return HostRun(self.label, self.command, self.json_path, self.cwd, self.requeues + 1)

    def checkpoint(self, *args: Any, **kwargs: Any):
        """Called by submitit on preemption or time-out: stop the run (its file keeps every finished
        worker) and return the resuming job, once; None (not requeued) the second time."""
        self._stop()
        if self.requeues >= MAX_REQUEUES:
            print(f"benchctl host {self.label}: preempted or timed out again after {self.requeues} requeue(s): "
                  f"not requeued; {self.json_path} keeps every finished run", file=sys.stderr, flush=True)
            return None
        from submitit.helpers import DelayedSubmission

        print(f"benchctl host {self.label}: preempted or timed out: requeued once, resuming {self.json_path}",
              file=sys.stderr, flush=True)
        return DelayedSubmission(self.requeued())


