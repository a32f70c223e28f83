"""Planted cause: torch.compile recompiling every step. As in pytorch #114293, a compiled function
loops ``for i in range(start + 1, end)`` with ``start`` the step number: dynamo unrolls the loop and
guards on ``start``'s value, so every step fails the guard and compiles again (2.3 s each there).
The recompile limit is raised, as dynamo's warning on reaching it suggests, so it keeps compiling
rather than falling back to eager. The ``eager`` backend keeps dynamo's tracing and guards (what
recompiles) without inductor's code generation, so a step stays short: inductor works here with the installed
gcc, but its first compile of a two-op function (``x * 2 + 1``) took 67 s on this loaded machine
(2026-12-02).

Measured outside benchctl (an earlier script of ``bench/plant_toggles.py``'s kind: each variant 5
fresh processes, 20 steps each; 2026-12-02, this 2-CPU machine loaded by other work): process medians
of 77-126 ms a step compiled, 0.011-0.020 ms with the fix (the loop left uncompiled,
``accumulate._torchdynamo_orig_callable``).
"""

import torch
import torch._dynamo

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
# Each compile also allocates and frees: on CI, alloc=tcmalloc made it 1.72x faster [1.54, 1.92] (faults/iter
# 8,238 -> 45), a real second cause the allocator cause is right to name beside it.
PLANT = {"target": "Steps", "cause": "recompiles", "also": ["allocator"], "fixed": {"target": "Uncompiled"}}

ROWS, WIDTH, WINDOW = 256, 8, 3
torch._dynamo.config.recompile_limit = ROWS  # "consider increasing torch._dynamo.config.recompile_limit"


@torch.compile(backend="eager")
def accumulate(x, start, end):
    for i in range(start + 1, end):
        x[i] = x[i] + x[i - 1]
    return x


class Steps:
    @staticmethod
    def setup():
        torch.set_num_threads(1)
        return {"x": torch.zeros(ROWS, WIDTH), "step": 0}

    @staticmethod
    def run(state):
        state["step"] += 1
        start = state["step"] % (ROWS - WINDOW)
        return accumulate(state["x"], start, start + WINDOW)


class Uncompiled(Steps):
    """The fix: the loop over the changing bound left uncompiled (bench/plant_toggles.py times it)."""

    @staticmethod
    def run(state):
        state["step"] += 1
        start = state["step"] % (ROWS - WINDOW)
        return accumulate._torchdynamo_orig_callable(state["x"], start, start + WINDOW)
