"""Running a settings matrix: each repetition of each cell in a fresh worker process.

* :mod:`.schedule`: the interleaved order of the workers;
* :mod:`.recorder`: what a workload reports its iterations and notes to;
* :mod:`.worker`: one cell in a fresh process (``python -m benchctl.run.worker``);
* :mod:`.runner`: the whole matrix, written crash-safe after every worker.

May import the controls at the package root, :mod:`benchctl.system`,
:mod:`benchctl.results` and :mod:`benchctl.workloads`; nothing above
(``studies``, ``cli``).
"""

from .runner import run_matrix

__all__ = ["run_matrix"]
