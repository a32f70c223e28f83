"""Running a settings matrix: each repetition of each cell in a fresh worker process.

* :mod:`.rounds`: which workers each round runs (``--repeat N`` or ``auto``), the budget;
* :mod:`.recorder`: what a workload reports its iterations and notes to;
* :mod:`.worker`: one cell in a fresh process (``python -m benchctl._run.worker``);
* :mod:`.launch`: launching one worker process and turning what it left into a run record;
* :mod:`.runner`: the whole matrix, written crash-safe after every worker;
* :mod:`.slurm`: the same command on several machines, one Slurm job each (submitit).

May import the controls at the package root, :mod:`benchctl._system`,
:mod:`benchctl._results` and :mod:`benchctl._workloads`; nothing above
(``studies``, ``cli``).
"""

from .runner import run_matrix

__all__ = ["run_matrix"]
