"""The plan of a multi-host run: every host's job (command, results file, sbatch parameters), decided and
checked before anything is submitted, and the submitit executor that submits one."""

from __future__ import annotations

import argparse
import os
import shutil
from dataclasses import dataclass, field
from typing import Any

from ..._results import manifest
from ..launch import now
from .options import (DEFAULT_TIME_MIN, INSTALL_HINT, JOBS_DIR, ExecutorError, ExecutorUnavailable, Target,
                      node_argv, parse_hosts, parse_slurm_option)

__all__ = ["MAX_REQUEUES", "CPU_SETUP", "HostPlan", "plan_hosts", "require_submitit", "require_slurm_commands",
           "slurm_executor"]

#: A preempted, timed-out or failed host job is run again at most this many times.
MAX_REQUEUES = 1

# Passed as extra #SBATCH lines: submitit has no parameter of that name.
_ADDITIONAL = ("reservation",)

#: srun gives the job's one task this many CPUs; the batch step of an exclusive node has
#: them all. Slurm releases differ in which of the two variables srun reads.
CPU_SETUP = ("export SLURM_CPUS_PER_TASK=$SLURM_CPUS_ON_NODE",
             "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_ON_NODE")


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
        return os.path.join(self.outdir, manifest.NAME)

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
    if os.path.exists(os.path.join(path, manifest.NAME)):
        held.append(manifest.NAME)
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


def require_submitit():
    """submitit, or ExecutorUnavailable saying how to install it."""
    try:
        import submitit
    except ImportError:
        raise ExecutorUnavailable(f"--executor slurm needs submitit: {INSTALL_HINT}") from None
    return submitit


def require_slurm_commands() -> None:
    """Raise ExecutorUnavailable unless sbatch and srun are on PATH (this is a login node)."""
    missing = [cmd for cmd in ("sbatch", "srun") if shutil.which(cmd) is None]
    if missing:
        raise ExecutorUnavailable(f"--executor slurm needs Slurm's {' and '.join(missing)} on PATH: run it on a login "
                            f"node of the cluster")


def slurm_executor(folder: str, target: Target, plan: HostPlan):
    """The submitit executor of ``target``'s job: Slurm, with :meth:`HostPlan.sbatch_for`'s parameters.

    ``run_with_executor(executor_factory=...)`` takes another function of the same
    signature (tests pass one that builds ``submitit.LocalExecutor``)."""
    submitit = require_submitit()
    executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=MAX_REQUEUES)
    executor.update_parameters(**plan.sbatch_for(target))
    return executor


