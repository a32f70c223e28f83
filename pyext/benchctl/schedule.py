"""Which cells a matrix has, and in which order their worker processes run.

Repetitions are interleaved: every cell runs once per round, so slow drift
of the machine (thermal state, other load) is shared by all cells instead of
falling on whichever cell ran last. A seed shuffles the order within each
round, reproducibly, so a periodic disturbance cannot line up with one cell.
"""

from __future__ import annotations

import itertools
import random
from typing import Any


def expand(matrix: dict[str, list]) -> list[dict[str, Any]]:
    """Every combination of the matrix values, as cell dicts in matrix-key order.

    An empty matrix has one cell: ``{}`` (the workload with its arguments).
    """
    keys = list(matrix)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(matrix[k] for k in keys))]


def interleaved(n_cells: int, repeat: int, shuffle_seed: int | None = None) -> list[tuple[int, int]]:
    """``(cell_index, repetition)`` pairs: ``repeat`` rounds over all cells.

    Without a seed each round runs the cells in matrix order (round-robin);
    with one each round is shuffled by ``random.Random(shuffle_seed)``.
    """
    if n_cells < 1:
        raise ValueError("a matrix needs at least one cell")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be a positive integer, got {repeat!r}")
    rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
    order = []
    for repetition in range(repeat):
        cells = list(range(n_cells))
        if rng is not None:
            rng.shuffle(cells)
        order += [(cell, repetition) for cell in cells]
    return order
