"""The executor options of a command (``--executor``, ``--slurm NAME=VALUE``, ``--hosts``), parsed and checked.

Also what a host job's command keeps of the controller's command line
(:func:`node_argv`) and how this program starts again on a node
(:func:`default_program`). Nothing here submits or needs submitit.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ...errors import UnavailableError, UserError
from ..._results import manifest

__all__ = ["EXECUTORS", "DEFAULT_TIME_MIN", "NODE_ENV", "JOBS_DIR", "INSTALL_HINT", "SLURM_OPTIONS",
           "ExecutorError", "ExecutorUnavailable", "Target", "parse_time", "parse_slurm_option", "parse_hosts",
           "add_executor_arguments", "use_slurm", "node_argv", "default_program"]

EXECUTORS = ("local", "slurm")
DEFAULT_TIME_MIN = 60

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

# What every host job sets itself: refused in --slurm, with the reason.
_OWN = {"exclusive": "every host job has its node to itself", "nodes": "one node per host job",
        "ntasks": "one task per host job", "ntasks_per_node": "one task per host job",
        "setup": "set by benchctl", "array": "one job per host"}

# Options of the controller's command line that a host job's command must not repeat,
# and whether each takes a value.
_CONTROLLER_OPTIONS = {"--executor": True, "--slurm": True, "--hosts": True, "--json": True, "--plot": True,
                       "--resume": False}
# A host label that would name one of the folder's other files.
_RESERVED_LABELS = (os.path.splitext(manifest.NAME)[0], JOBS_DIR)


class ExecutorError(UserError, ValueError):
    """Options that cannot run as asked (bad --slurm, --hosts or --json); nothing was submitted."""


class ExecutorUnavailable(UnavailableError, ExecutorError):
    """This machine cannot submit Slurm jobs (no submitit, no sbatch); nothing was submitted."""


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
            raise ExecutorError(f"{' and '.join(given)} {'needs' if len(given) == 1 else 'need'} --executor slurm")
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


