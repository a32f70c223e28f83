"""The same matrix on several machines through Slurm (submitit): one job per host, each run there as locally.

``--executor slurm`` turns a command line (``python -m benchctl run ...``, a
seed script, ``explain``) into one Slurm job per target machine. Each job has
a node to itself (``--exclusive``, all of its memory) and gives its one task
every CPU of that node, and runs the *same* command there without the executor
options and with ``--json <folder>/<host>.json``: a fresh worker per cell,
interleaved repetitions and a crash-safe results file, exactly as on a
workstation. benchctl schedules nothing itself.

Faults:

* a job that Slurm preempts, or whose time limit nears, is requeued once
  through submitit's checkpointing (:meth:`HostRun.checkpoint`) and resumes
  its results file (``--resume``); a second time it is not requeued;
* a job that fails otherwise (node failure, the run killed) is resubmitted
  once the same way by the waiting controller (:func:`collect`), unless the
  command itself was refused (exit status 2: a second try would be refused too);
* a host that never ran (submission refused, job failed twice) is listed as
  missing with its job's error and stderr tail: in the folder's manifest
  (:data:`benchctl.results.machines.MANIFEST_NAME`) and in the cross-machine
  view (:mod:`benchctl.results.machines`, ``python -m benchctl compare DIR``).

submitit is optional (``pip install 'benchctl[slurm]'``): this module imports
without it, and :class:`HostRun` is checkpointable by duck typing (submitit
calls any ``checkpoint`` method its job's callable has).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..results import document, machines
from .launch import STDERR_TAIL_CHARS, now

__all__ = ["EXECUTORS", "MAX_REQUEUES", "DEFAULT_TIME_MIN", "STOP_GRACE_S", "NODE_ENV", "JOBS_DIR", "INSTALL_HINT",
           "SLURM_OPTIONS", "CPU_SETUP", "ExecutorError", "Target", "HostPlan", "HostRun", "parse_time",
           "parse_slurm_option", "parse_hosts", "add_executor_arguments", "use_slurm", "node_argv",
           "default_program", "plan_hosts", "slurm_executor", "submit", "collect", "run_with_executor"]

EXECUTORS = ("local", "slurm")
#: A preempted, timed-out or failed host job is run again at most this many times.
MAX_REQUEUES = 1
DEFAULT_TIME_MIN = 60
#: How long a stopped run may take to save and exit after SIGINT before it is killed
#: (Slurm's preemption signal comes 90 s before the kill).
STOP_GRACE_S = 30.0
#: Set in a host job's run: it must never submit jobs of its own.
NODE_ENV = "BENCHCTL_HOST_JOB"
#: Sub-folder of the results folder for submitit's job files and logs.
JOBS_DIR = "jobs"
INSTALL_HINT = "pip install 'benchctl[slurm]'"

#: ``--slurm NAME=VALUE``: what is passed through to sbatch, and what it means.
SLURM_OPTIONS = {
    "partition": "partition to run on",
    "time": "time limit of each job: MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS "
            f"(default {DEFAULT_TIME_MIN} minutes)",
    "account": "account to charge",
    "constraint": "features the node must have (zen4, icelake&avx512, ...)",
    "gres": "generic resources (gpu:1, ...)",
    "qos": "quality of service",
    "mem": "memory of the node to allocate (default 0: all of it)",
    "cpus_per_task": "a node with at least this many CPUs (the job uses all of the node's anyway)",
    "exclude": "nodes not to use",
    "reservation": "reservation to run in",
}
# Passed as extra #SBATCH lines: submitit has no parameter of that name.
_ADDITIONAL = ("reservation",)
# What every host job sets itself: refused in --slurm, with the reason.
_OWN = {"exclusive": "every host job has its node to itself", "nodes": "one node per host job",
        "ntasks": "one task per host job", "ntasks_per_node": "one task per host job",
        "setup": "set by benchctl", "array": "one job per host"}

#: srun gives the job's one task this many CPUs; the batch step of an exclusive node has
#: them all. Slurm releases differ in which of the two variables srun reads.
CPU_SETUP = ("export SLURM_CPUS_PER_TASK=$SLURM_CPUS_ON_NODE",
             "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_ON_NODE")

# Options of the controller's command line that a host job's command must not repeat,
# and whether each takes a value.
_CONTROLLER_OPTIONS = {"--executor": True, "--slurm": True, "--hosts": True, "--json": True, "--plot": True,
                       "--resume": False}
_RESERVED_LABELS = (os.path.splitext(machines.MANIFEST_NAME)[0], JOBS_DIR)


class ExecutorError(ValueError):
    """Options that cannot run as asked (bad --slurm or --hosts, no submitit, no Slurm); nothing was submitted."""


# ---- options -------------------------------------------------------------------------------------------


def parse_time(text: str) -> int:
    """A Slurm time limit as whole minutes (seconds round up); at least one minute."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+(?::\d+){0,2})", str(text).strip())
    if not m:
        raise ExecutorError(f"--slurm time={text}: write a time limit as MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM "
                            f"or D-HH:MM:SS")
    parts = [int(p) for p in m.group(2).split(":")]
    if m.group(1) is not None or len(parts) == 3:  # D-H[:M[:S]], H:M:S
        hours, minutes, seconds = (parts + [0, 0])[:3]
    else:  # M, M:S
        hours, minutes, seconds = 0, parts[0], parts[1] if len(parts) == 2 else 0
    total = int(m.group(1) or 0) * 1440 + hours * 60 + minutes + math.ceil(seconds / 60)
    if total < 1:
        raise ExecutorError(f"--slurm time={text}: the time limit must be at least one minute")
    return total


def parse_slurm_option(text: str) -> tuple[str, Any]:
    """``"partition=cpu"`` -> ``("partition", "cpu")``; time in minutes, cpus_per_task an int."""
    name, sep, value = str(text).partition("=")
    name, value = name.strip().replace("-", "_"), value.strip()
    if not sep or not name or not value:
        raise ExecutorError(f"--slurm {text!r}: write NAME=VALUE (e.g. --slurm partition=cpu)")
    if name in _OWN:
        raise ExecutorError(f"--slurm {name}: benchctl sets it ({_OWN[name]})")
    if name not in SLURM_OPTIONS:
        raise ExecutorError(f"--slurm {name}: not passed through; the names are {', '.join(SLURM_OPTIONS)}")
    if any(ord(c) < 32 for c in value):
        raise ExecutorError(f"--slurm {name}: the value has a control character")
    if name == "time":
        return name, parse_time(value)
    if name == "cpus_per_task":
        if not value.isdigit() or int(value) < 1:
            raise ExecutorError(f"--slurm cpus_per_task={value}: a whole number of CPUs, at least 1")
        return name, int(value)
    return name, value


@dataclass(frozen=True)
class Target:
    """One machine to run on: its label (its results file is ``<label>.json``) and its own sbatch parameters."""

    label: str
    params: dict = field(default_factory=dict)


def parse_hosts(text: Any) -> list[Target]:
    """``--hosts``: a count N (hosts host-1 ... host-N, any node the other options allow), or a
    comma-separated list of partitions (``NAME`` or ``partition=NAME``) and ``constraint=FEATURES``."""
    text = str(text).strip()
    if re.fullmatch(r"[+-]?\d+", text):
        count = int(text)
        if count < 1:
            raise ExecutorError(f"--hosts {text}: give at least one host: a count of 1 or more, or a list "
                                f"such as --hosts amd,intel or --hosts constraint=zen4,constraint=icelake")
        return [Target(f"host-{i}") for i in range(1, count + 1)]
    targets, labels = [], set()
    for item in text.split(","):
        kind, sep, value = item.partition("=")
        kind, value = (kind.strip(), value.strip()) if sep else ("partition", item.strip())
        if kind not in ("partition", "constraint") or not value:
            raise ExecutorError(f"--hosts {text}: each item is a partition (NAME or partition=NAME) or "
                                f"constraint=FEATURES, not {item.strip()!r}")
        label = re.sub(r"[^A-Za-z0-9._-]+", "_", value).strip("._-")
        if not label or label in _RESERVED_LABELS:
            raise ExecutorError(f"--hosts {item.strip()}: {label or value!r} cannot name a results file")
        if label in labels:
            raise ExecutorError(f"--hosts {text}: two items would both write {label}.json")
        labels.add(label)
        targets.append(Target(label, {kind: value}))
    return targets


def _argparse_type(parse: Callable) -> Callable:
    def convert(text: str):
        try:
            return parse(text)
        except ExecutorError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = parse.__name__
    return convert


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """``--executor``, ``--slurm NAME=VALUE`` and ``--hosts`` on a command's parser."""
    group = parser.add_argument_group(
        "several machines (Slurm)",
        "--executor slurm runs this same command on each host as one Slurm job with a node to\n"
        "itself (--exclusive, all its CPUs and memory) and writes one results file per host into\n"
        "--json DIR, which must be on a file system every node shares; then it compares the hosts\n"
        "(python -m benchctl compare DIR does it again later). The time limit must cover the whole\n"
        f"command on one host. Needs submitit: {INSTALL_HINT}")
    group.add_argument("--executor", choices=EXECUTORS, default="local",
                       help="local: run here (default); slurm: one Slurm job per host")
    group.add_argument("--slurm", action="append", default=[], metavar="NAME=VALUE",
                       type=_argparse_type(parse_slurm_option),
                       help="passed to sbatch for every host (repeatable): "
                            + "; ".join(f"{k}: {v}" for k, v in SLURM_OPTIONS.items()))
    group.add_argument("--hosts", type=_argparse_type(parse_hosts), default=None,
                       metavar="N|P1,P2|constraint=F,...",
                       help="the machines: a count (default 1), or a comma-separated list of partitions and "
                            "constraint=FEATURES items, one host each (--hosts amd,intel)")


def use_slurm(opts: argparse.Namespace) -> bool:
    """Whether ``opts`` ask for Slurm; raises ExecutorError for Slurm options without ``--executor slurm``."""
    executor = getattr(opts, "executor", None) or "local"
    if executor not in EXECUTORS:
        raise ExecutorError(f"--executor {executor}: choose {' or '.join(EXECUTORS)}")
    if executor == "local":
        given = [f"--{name}" for name in ("slurm", "hosts") if getattr(opts, name, None)]
        if given:
            raise ExecutorError(f"{' and '.join(given)} need --executor slurm")
        return False
    if os.environ.get(NODE_ENV):
        raise ExecutorError(f"refusing to submit Slurm jobs from inside the benchctl host job "
                            f"{os.environ[NODE_ENV]!r}: its command must run locally")
    return True


def _controller_option(token: str) -> str | None:
    """The controller option ``token`` names (argparse accepts unique prefixes), or None."""
    if not token.startswith("--") or token == "--":
        return None
    name = token.split("=", 1)[0]
    if name in _CONTROLLER_OPTIONS:
        return name
    matches = [option for option in _CONTROLLER_OPTIONS if option.startswith(name)] if len(name) > 2 else []
    return matches[0] if len(matches) == 1 else None


def node_argv(argv: list[str]) -> list[str]:
    """``argv`` without ``--executor``, ``--slurm``, ``--hosts``, ``--json``, ``--plot`` and ``--resume``:
    what a host job repeats, before its own ``--json`` (and ``--plot``, ``--resume``)."""
    out, i = [], 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            out += argv[i:]
            break
        name = _controller_option(token)
        if name is None:
            out.append(token)
            i += 1
        else:
            i += 2 if _CONTROLLER_OPTIONS[name] and "=" not in token else 1
    return out


def default_program(argv0: str | None = None) -> list[str]:
    """How to start this program again on a node: ``python -m benchctl`` or ``python SCRIPT``."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    base = os.path.basename(argv0)
    if base == "benchctl" or (base == "__main__.py" and os.path.basename(os.path.dirname(argv0)) == "benchctl"):
        return [sys.executable, "-u", "-m", "benchctl"]
    if base.endswith(".py") and os.path.isfile(argv0):
        return [sys.executable, "-u", os.path.abspath(argv0)]
    raise ExecutorError(f"cannot tell how to start {argv0!r} again on the nodes; pass program=[python, SCRIPT] "
                        f"to run_with_executor")


# ---- the plan --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostPlan:
    """Every host's job, decided and checked before anything is submitted."""

    outdir: str                    # absolute; one results file per host, the manifest, jobs/
    targets: list[Target]
    sbatch: dict                   # --slurm parameters for every host (time apart)
    time_min: int
    program: list[str]
    argv: list[str]                # the command's arguments without the controller options
    cwd: str
    resume: bool
    plot: bool
    command_line: list[str]        # as given, for the manifest
    created: str = field(default_factory=now)

    @property
    def job_folder(self) -> str:
        return os.path.join(self.outdir, JOBS_DIR)

    @property
    def manifest_path(self) -> str:
        return os.path.join(self.outdir, machines.MANIFEST_NAME)

    def json_path(self, target: Target) -> str:
        return os.path.join(self.outdir, f"{target.label}.json")

    def command(self, target: Target) -> list[str]:
        """The command a host job runs (``--resume`` is added on the node when its file exists)."""
        extra = ["--plot", os.path.join(self.outdir, f"{target.label}.png")] if self.plot else []
        return list(self.program) + list(self.argv) + ["--json", self.json_path(target)] + extra

    def sbatch_for(self, target: Target) -> dict:
        """submitit SlurmExecutor parameters of ``target``'s job."""
        params: dict[str, Any] = {"job_name": f"benchctl-{target.label}", "time": self.time_min, "nodes": 1,
                                  "ntasks_per_node": 1, "exclusive": True, "mem": "0", "setup": list(CPU_SETUP)}
        additional = {}
        for name, value in {**self.sbatch, **target.params}.items():
            if name in _ADDITIONAL:
                additional[name] = value
            else:
                params[name] = value
        if additional:
            params["additional_parameters"] = additional
        return params


def _output_folder(json_path: str | None, targets: list[Target], resume: bool) -> str:
    if not json_path:
        raise ExecutorError("--executor slurm needs --json DIR: a folder on a file system every node shares, "
                            "which gets one results file per host")
    if json_path.endswith(".json"):
        raise ExecutorError(f"--json {json_path}: with --executor slurm, --json names a folder, which gets one "
                            f"results file per host (<host>.json)")
    path = os.path.abspath(json_path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ExecutorError(f"--json {json_path}: exists and is not a folder")
    held = [f"{t.label}.json" for t in targets if os.path.exists(os.path.join(path, f"{t.label}.json"))]
    if os.path.exists(os.path.join(path, machines.MANIFEST_NAME)):
        held.append(machines.MANIFEST_NAME)
    if held and not resume:
        raise ExecutorError(f"--json {json_path} already holds {', '.join(held)}: continue those runs with "
                            f"--resume, or give another folder")
    return path


def plan_hosts(opts: argparse.Namespace, argv: list[str], program: list[str], cwd: str | None = None) -> HostPlan:
    """Check the options against each other and decide every host's job; raises ExecutorError."""
    common: dict[str, Any] = {}
    for item in getattr(opts, "slurm", None) or []:
        name, value = item if isinstance(item, tuple) else parse_slurm_option(item)
        if name in common:
            raise ExecutorError(f"--slurm {name}=... given twice")
        common[name] = value
    hosts = getattr(opts, "hosts", None)
    targets = parse_hosts(hosts) if isinstance(hosts, (str, int)) else list(hosts or parse_hosts(1))
    for target in targets:
        for name in target.params:
            if name in common:
                raise ExecutorError(f"--hosts sets the {name} of each host and --slurm {name}={common[name]} sets "
                                    f"it for all: say it in one place")
    resume = bool(getattr(opts, "resume", False))
    outdir = _output_folder(getattr(opts, "json_path", None), targets, resume)
    time_min = common.pop("time", DEFAULT_TIME_MIN)
    return HostPlan(outdir=outdir, targets=targets, sbatch=common, time_min=time_min, program=list(program),
                    argv=node_argv(list(argv)), cwd=os.path.abspath(cwd or os.getcwd()), resume=resume,
                    plot=bool(getattr(opts, "plot", None)), command_line=list(program) + list(argv))


def _require_submitit():
    try:
        import submitit
    except ImportError:
        raise ExecutorError(f"--executor slurm needs submitit: {INSTALL_HINT}") from None
    return submitit


def _require_slurm_commands() -> None:
    missing = [cmd for cmd in ("sbatch", "srun") if shutil.which(cmd) is None]
    if missing:
        raise ExecutorError(f"--executor slurm needs Slurm's {' and '.join(missing)} on PATH: run it on a login "
                            f"node of the cluster")


def slurm_executor(folder: str, target: Target, plan: HostPlan):
    """The submitit executor of ``target``'s job: Slurm, with :meth:`HostPlan.sbatch_for`'s parameters.

    ``run_with_executor(executor_factory=...)`` takes another function of the same
    signature (tests pass one that builds ``submitit.LocalExecutor``)."""
    submitit = _require_submitit()
    executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=MAX_REQUEUES)
    executor.update_parameters(**plan.sbatch_for(target))
    return executor


# ---- on the node -----------------------------------------------------------------------------------------


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


# ---- the controller --------------------------------------------------------------------------------------


@dataclass
class _Host:
    """A host's jobs as the controller sees them; :meth:`entry` is its manifest entry."""

    target: Target
    json_path: str
    sbatch: dict = field(default_factory=dict)
    job: Any = None                # the submitit job running now, None when none is
    jobs: list = field(default_factory=list)
    requeues: int = 0
    status: str = "pending"        # submitted, ok, failed, not submitted
    message: str | None = None

    def entry(self) -> dict:
        return {"label": self.target.label, "json": os.path.basename(self.json_path), "target": self.target.params,
                "sbatch": self.sbatch, "status": self.status, "message": self.message, "requeues": self.requeues,
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
    manifest = {"schema": machines.MANIFEST_SCHEMA, "version": machines.MANIFEST_VERSION, "created": plan.created,
                "updated": now(), "command": plan.command_line, "cwd": plan.cwd, "executor": "slurm",
                "time_min": plan.time_min, "sbatch": plan.sbatch, "hosts": [h.entry() for h in hosts]}
    document.atomic_write_text(plan.manifest_path, json.dumps(manifest, indent=1, default=str))


def _submit_one(plan: HostPlan, factory: Callable, host: _Host, run: HostRun, why: str, out) -> bool:
    try:
        job = factory(plan.job_folder, host.target, plan).submit(run)
    except Exception as exc:  # sbatch refused this host (unknown partition, account, ...): it never runs
        host.status, host.message = "not submitted", f"submission failed: {_summary(exc)}"
        host.jobs.append({"job_id": None, "why": why, "submitted_at": now(), "error": _tail(str(exc))})
        print(f"  {host.target.label}: {host.message}", file=out, flush=True)
        return False
    host.job, host.status, host.message = job, "submitted", None
    host.jobs.append({"job_id": str(job.job_id), "why": why, "submitted_at": now()})
    print(f"  {host.target.label}: job {job.job_id} ({why})", file=out, flush=True)
    return True


def submit(plan: HostPlan, executor_factory: Callable | None = None, out=sys.stdout) -> list[_Host]:
    """Submit one job per host; a host whose submission fails is kept, as not submitted."""
    factory = executor_factory or slurm_executor
    os.makedirs(plan.job_folder, exist_ok=True)
    hosts = [_Host(t, plan.json_path(t), plan.sbatch_for(t)) for t in plan.targets]
    print(f"submitting {len(hosts)} host job(s); results in {plan.outdir} (one file per host, "
          f"manifest {machines.MANIFEST_NAME}):", file=out, flush=True)
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
    elif exit_status == 2:
        said = "the command was refused on the node (exit status 2; see its stderr)"
    elif exit_status not in (0, 1):
        said = f"the run exited with status {exit_status}"
    else:
        said = "the run ended early"
    return f"{said}; {_runs(done)}"


def _finished(plan: HostPlan, factory: Callable, host: _Host, out) -> None:
    """Record a host's finished job; resubmit it once (resuming) when its command did not finish.

    The command finished when it exited 0 or 1 (1: some worker failed, which the
    file records) and left a readable results file."""
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
    if done is not None and exit_status in (0, 1):
        host.status, host.message = "ok", None
        print(f"{where}: done, {_runs(done)}", file=out, flush=True)
        return
    why = _failure(exit_status, error, done)
    if exit_status != 2 and host.requeues < MAX_REQUEUES:
        host.requeues += 1
        print(f"{where}: failed: {why}; resubmitting once, resuming its results file:", file=out, flush=True)
        run = HostRun(host.target.label, plan.command(host.target), host.json_path, plan.cwd, host.requeues)
        _submit_one(plan, factory, host, run, f"resubmitted after: {why}", out)
        return
    host.status, host.message = "failed", why
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
    anything is submitted, on bad options. Returns 0 when every host left
    complete results, 1 when one did not (the view lists it and why), 130
    when interrupted (the jobs keep running).
    """
    out = out or sys.stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    program = list(program) if program else default_program()
    plan = plan_hosts(opts, argv, program)
    _require_submitit()
    if executor_factory is None:
        _require_slurm_commands()
    hosts = submit(plan, executor_factory, out)
    try:
        print("waiting for the jobs (Ctrl-C stops waiting, not the jobs)", file=out, flush=True)
        collect(plan, hosts, executor_factory, poll_s, out)
    except KeyboardInterrupt:
        _save_manifest(plan, hosts)
        running = [h.jobs[-1]["job_id"] for h in hosts if h.job is not None]
        print(f"stopped waiting; job(s) {' '.join(running)} keep running (scancel cancels them); "
              f"python -m benchctl compare {plan.outdir} reads what they leave", file=out, flush=True)
        return 130
    print("", file=out)
    print(machines.format_machines(machines.load([plan.outdir])), file=out, flush=True)
    return 0 if all(h.status == "ok" for h in hosts) else 1
