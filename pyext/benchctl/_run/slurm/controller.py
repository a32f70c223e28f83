"""The controller of a multi-host run: submit each host's job, wait, resubmit a failed one once, keep the manifest.

The manifest (:mod:`benchctl._results.manifest`) is rewritten at every change,
so a folder always says which hosts ran, which failed and why.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ...errors import NO_RETRY, ExitCode
from ..._results import machines, manifest
from ..._results.manifest import HostState
from ..launch import STDERR_TAIL_CHARS, now
from .node import HostRun
from .options import Target, default_program
from .plan import MAX_REQUEUES, HostPlan, plan_hosts, require_slurm_commands, require_submitit, slurm_executor

__all__ = ["submit", "collect", "run_with_executor"]

# The exit statuses of a command that ran to its end (FAILED: some worker failed; the file says which).
_FINISHED = (ExitCode.OK, ExitCode.FAILED)


@dataclass
class _Host:
    """A host's jobs as the controller sees them; :meth:`entry` is its manifest entry."""

    target: Target
    json_path: str
    sbatch: dict = field(default_factory=dict)
    job: Any = None                # the submitit job running now, None when none is
    jobs: list = field(default_factory=list)
    requeues: int = 0
    status: HostState = HostState.PENDING
    message: str | None = None

    def entry(self) -> dict:
        return {"label": self.target.label, "json": os.path.basename(self.json_path), "target": self.target.params,
                "sbatch": self.sbatch, "status": self.status.value, "message": self.message, "requeues": self.requeues,
                "jobs": self.jobs}


def _tail(text: str | None) -> str | None:
    return text[-STDERR_TAIL_CHARS:] if text else None


def _summary(exc: BaseException) -> str:
    """One line for a job's exception: submitit wraps the job's traceback between dashed lines."""
    text = str(exc)
    blocks = text.split("----------------------")
    lines = [line.strip() for line in (blocks[1] if len(blocks) > 2 else text).splitlines() if line.strip()]
    line = (lines[-1] if len(blocks) > 2 else lines[0]) if lines else ""
    return f"{type(exc).__name__}: {line}"[:500]


def _save_manifest(plan: HostPlan, hosts: list[_Host]) -> None:
    manifest.save(plan.manifest_path, {
        "created": plan.created, "updated": now(), "command": plan.command_line, "cwd": plan.cwd, "executor": "slurm",
        "time_min": plan.time_min, "sbatch": plan.sbatch, "hosts": [h.entry() for h in hosts]})


def _submit_one(plan: HostPlan, factory: Callable, host: _Host, run: HostRun, why: str, out) -> bool:
    try:
        job = factory(plan.job_folder, host.target, plan).submit(run)
    except Exception as exc:  # sbatch refused this host (unknown partition, account, ...): it never runs
        host.status, host.message = HostState.NOT_SUBMITTED, f"submission failed: {_summary(exc)}"
        host.jobs.append({"job_id": None, "why": why, "submitted_at": now(), "error": _tail(str(exc))})
        print(f"  {host.target.label}: {host.message}", file=out, flush=True)
        return False
    host.job, host.status, host.message = job, HostState.SUBMITTED, None
    host.jobs.append({"job_id": str(job.job_id), "why": why, "submitted_at": now()})
    print(f"  {host.target.label}: job {job.job_id} ({why})", file=out, flush=True)
    return True


def submit(plan: HostPlan, executor_factory: Callable | None = None, out=sys.stdout) -> list[_Host]:
    """Submit one job per host; a host whose submission fails is kept, as not submitted."""
    factory = executor_factory or slurm_executor
    os.makedirs(plan.job_folder, exist_ok=True)
    hosts = [_Host(t, plan.json_path(t), plan.sbatch_for(t)) for t in plan.targets]
    print(f"submitting {len(hosts)} host job(s); results in {plan.outdir} (one file per host, "
          f"manifest {manifest.NAME}):", file=out, flush=True)
    for host in hosts:
        run = HostRun(host.target.label, plan.command(host.target), host.json_path, plan.cwd)
        _submit_one(plan, factory, host, run, "submitted", out)
    _save_manifest(plan, hosts)
    return hosts


def _safe(read: Callable) -> Any:
    try:
        return read()
    except Exception:  # a log or state that cannot be read is told as missing, not raised
        return None


def _submitted_requeues(job) -> int | None:
    """How often the job's own checkpointing requeued it (its submitted pickle holds the resumed HostRun)."""
    return _safe(lambda: int(job.submission().function.requeues))


def _runs(done: tuple[int, int | None] | None) -> str:
    if done is None:
        return "no results file"
    return f"{done[0]} of {done[1]} worker runs recorded" if done[1] is not None else f"{done[0]} worker runs recorded"


def _failure(exit_status: int | None, error: str | None, done: tuple[int, int | None] | None) -> str:
    if error and "not requeued" in error:  # submitit's words when a checkpoint does not requeue
        said = "preempted or timed out after its one requeue, so not requeued again"
    elif error:
        said = f"the job ended without a result ({error})"
    elif exit_status is not None and exit_status < 0:
        said = f"the run was killed by {_safe(lambda: signal.Signals(-exit_status).name) or -exit_status}"
    elif exit_status == ExitCode.USER_ERROR:
        said = f"the command was refused on the node (exit status {exit_status}; see its stderr)"
    elif exit_status == ExitCode.UNAVAILABLE:
        said = f"the node could not run the command (exit status {exit_status}; see its stderr)"
    elif exit_status == ExitCode.INTERNAL_ERROR:
        said = f"the command failed with an internal error (exit status {exit_status}; its traceback is in its stderr)"
    elif exit_status not in _FINISHED:
        said = f"the run exited with status {exit_status}"
    else:
        said = "the run ended early"
    return f"{said}; {_runs(done)}"


def _finished(plan: HostPlan, factory: Callable, host: _Host, out) -> None:
    """Record a host's finished job; resubmit it once (resuming) when its command did not finish.

    The command finished when it exited OK or FAILED (some worker failed, which
    the file records) and left a readable results file. It is not resubmitted
    after an exit status in :data:`benchctl.errors.NO_RETRY` (refused: it would be refused again)."""
    job, entry = host.job, host.jobs[-1]
    host.job = None
    result, error = None, None
    try:
        result = job.result()
    except Exception as exc:  # the job failed or never produced a result: said, and maybe retried
        error = _summary(exc)
    result = result if isinstance(result, dict) else {}
    requeues = result["requeues"] if "requeues" in result else _submitted_requeues(job)
    host.requeues = max(host.requeues, requeues or 0)
    exit_status = result.get("exit_status")
    # The scheduler's state tells why a job without a result ended (TIMEOUT, NODE_FAIL, ...); after a
    # result it may still read RUNNING, so it is kept only then.
    entry.update(state=_safe(lambda: job.state) if error else None, exit_status=exit_status,
                 hostname=result.get("hostname"),
                 cpus=result.get("cpus"), requeues=requeues, error=error, stderr_tail=_tail(_safe(job.stderr)))
    done = machines.file_progress(host.json_path)
    where = f"{host.target.label} (job {job.job_id}" + (f" on {result['hostname']})" if result.get("hostname") else ")")
    if done is not None and exit_status in _FINISHED:
        host.status, host.message = HostState.OK, None
        print(f"{where}: done, {_runs(done)}", file=out, flush=True)
        return
    why = _failure(exit_status, error, done)
    if exit_status not in NO_RETRY and host.requeues < MAX_REQUEUES:
        host.requeues += 1
        # A job Slurm itself requeued (scontrol requeue, a preemption) is queued again and would run the
        # host a second time beside its resubmission, on the same results file: it goes first.
        _safe(lambda: job.cancel(check=False))
        print(f"{where}: failed: {why}; resubmitting once, resuming its results file:", file=out, flush=True)
        run = HostRun(host.target.label, plan.command(host.target), host.json_path, plan.cwd, host.requeues)
        _submit_one(plan, factory, host, run, f"resubmitted after: {why}", out)
        return
    host.status, host.message = HostState.FAILED, why
    print(f"{where}: failed: {why}", file=out, flush=True)


def collect(plan: HostPlan, hosts: list[_Host], executor_factory: Callable | None = None, poll_s: float = 10.0,
            out=sys.stdout) -> list[_Host]:
    """Wait for every host's job, resubmitting a failed one once; the manifest is rewritten at each change."""
    factory = executor_factory or slurm_executor
    while any(h.job is not None for h in hosts):
        finished = [h for h in hosts if h.job is not None and h.job.done()]
        for host in finished:
            _finished(plan, factory, host, out)
        if finished:
            _save_manifest(plan, hosts)
        else:
            time.sleep(poll_s)
    return hosts


def run_with_executor(opts: argparse.Namespace, argv: list[str] | None = None, program: list[str] | None = None,
                      executor_factory: Callable | None = None, poll_s: float = 10.0, out=None) -> int:
    """Run the command ``program + argv`` on every host of ``opts`` and print the cross-machine view.

    ``argv`` defaults to ``sys.argv[1:]`` and ``program`` to how this process
    was started (:func:`default_program`). Raises ExecutorError, before
    anything is submitted, on bad options (ExecutorUnavailable without submitit
    or Slurm). Returns OK when every host left complete results, FAILED when
    one did not (the view lists it and why), INTERRUPTED when Ctrl-C stopped the
    waiting (the jobs keep running).
    """
    out = out or sys.stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    program = list(program) if program else default_program()
    plan = plan_hosts(opts, argv, program)
    require_submitit()
    if executor_factory is None:
        require_slurm_commands()
    hosts = submit(plan, executor_factory, out)
    try:
        print("waiting for the jobs (Ctrl-C stops waiting, not the jobs)", file=out, flush=True)
        collect(plan, hosts, executor_factory, poll_s, out)
    except KeyboardInterrupt:
        _save_manifest(plan, hosts)
        running = [h.jobs[-1]["job_id"] for h in hosts if h.job is not None]
        print(f"stopped waiting; job(s) {' '.join(running)} keep running (scancel cancels them); "
              f"python -m benchctl compare {plan.outdir} reads what they leave", file=out, flush=True)
        return ExitCode.INTERRUPTED
    print("", file=out)
    print(machines.format_machines(machines.load([plan.outdir])), file=out, flush=True)
    return ExitCode.OK if all(h.status is HostState.OK for h in hosts) else ExitCode.FAILED
