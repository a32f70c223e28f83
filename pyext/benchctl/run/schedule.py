"""In which order the worker processes of a matrix run.

Repetitions are interleaved: every cell runs once per round, so slow drift
of the machine (thermal state, other load) is shared by all cells instead of
falling on whichever cell ran last. A seed shuffles the order within each
round, reproducibly, so a periodic disturbance cannot line up with one cell.
"""

from __future__ import annotations

import random

from .. import _validate

__all__ = ["interleaved"]


def interleaved(n_cells: int, repeat: int, shuffle_seed: int | None = None) -> list[tuple[int, int]]:
    """``(cell_index, repetition)`` pairs: ``repeat`` rounds over all cells.

    Without a seed each round runs the cells in matrix order (round-robin);
    with one each round is shuffled by ``random.Random(shuffle_seed)``.
    """
    _validate.count("the number of cells", n_cells, 1)
    repeat = _validate.count("repeat", repeat, 1)
    rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
    order = []
    for repetition in range(repeat):
        cells = list(range(n_cells))
        if rng is not None:
            rng.shuffle(cells)
        order += [(cell, repetition) for cell in cells]
    return order
