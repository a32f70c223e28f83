"""The same matrix on several machines through Slurm (submitit): one job per host, each run there as locally.

``--executor slurm`` turns a command line (``python -m benchctl run ...``, a
seed script, ``explain``) into one Slurm job per target machine. Each job has
a node to itself (``--exclusive``, all of its memory) and gives its one task
every CPU of that node, and runs the *same* command there without the executor
options and with ``--json <folder>/<host>.json``: a fresh worker per cell,
interleaved repetitions and a crash-safe results file, exactly as on a
workstation. benchctl schedules nothing itself.

One module per job:

* :mod:`.options`: the executor options, parsed and checked (:class:`ExecutorError`);
* :mod:`.plan`: every host's job, decided before anything is submitted (:class:`HostPlan`);
* :mod:`.node`: on the node, the host's run as a submitit job (:class:`HostRun`);
* :mod:`.controller`: submit, wait, resubmit, and the manifest (:func:`run_with_executor`).

Faults:

* a job that Slurm preempts, or whose time limit nears, is requeued once
  through submitit's checkpointing (:meth:`HostRun.checkpoint`) and resumes
  its results file (``--resume``); a second time it is not requeued;
* a job that fails otherwise (node failure, the run killed, a node that cannot
  run it, a bug) is resubmitted once the same way by the waiting controller
  (:func:`collect`), unless the command itself was refused (exit status
  :attr:`benchctl.errors.ExitCode.USER_ERROR`: a second try would be refused too);
* a host that never ran (submission refused, job failed twice) is listed as
  missing with its job's error and stderr tail: in the folder's manifest
  (:mod:`benchctl._results.manifest`) and in the cross-machine view
  (:mod:`benchctl._results.machines`, ``python -m benchctl compare DIR``).

submitit is optional (``pip install 'benchctl[slurm]'``): this package imports
without it, and :class:`HostRun` is checkpointable by duck typing (submitit
calls any ``checkpoint`` method its job's callable has).
"""

from .controller import collect, run_with_executor, submit
from .node import STOP_GRACE_S, HostRun
from .options import (DEFAULT_TIME_MIN, EXECUTORS, INSTALL_HINT, JOBS_DIR, NODE_ENV, SLURM_OPTIONS, ExecutorError,
                      ExecutorUnavailable, Target, add_executor_arguments, default_program, node_argv, parse_hosts,
                      parse_slurm_option, parse_time, use_slurm)
from .plan import CPU_SETUP, MAX_REQUEUES, HostPlan, plan_hosts, slurm_executor

__all__ = ["EXECUTORS", "MAX_REQUEUES", "DEFAULT_TIME_MIN", "STOP_GRACE_S", "NODE_ENV", "JOBS_DIR", "INSTALL_HINT",
           "SLURM_OPTIONS", "CPU_SETUP", "ExecutorError", "ExecutorUnavailable", "Target", "HostPlan", "HostRun",
           "parse_time", "parse_slurm_option", "parse_hosts", "add_executor_arguments", "use_slurm", "node_argv",
           "default_program", "plan_hosts", "slurm_executor", "submit", "collect", "run_with_executor"]
