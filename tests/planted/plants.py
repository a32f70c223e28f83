"""The planted workloads of this folder, each read from its own ``PLANT`` declaration.

Adding a cause to ``benchctl explain`` is one class in ``benchctl.studies.causes`` and one file here
that declares ``PLANT = {"target": NAME, "cause": CAUSE_NAME}`` (``None``: nothing is planted):
``tests/test_explain.py`` and ``bench/explain_planted.py`` find it here. The files are read, not
imported (importing one would start what it plants).
"""

from __future__ import annotations

import ast
import os

__all__ = ["FOLDER", "plants"]

FOLDER = os.path.dirname(os.path.abspath(__file__))


def _declaration(path: str) -> dict | None:
    for node in ast.parse(open(path).read(), path).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PLANT"]:
            return ast.literal_eval(node.value)
    return None


def plants() -> list[tuple[str, str | None]]:
    """(``file.py:target``, the cause it plants or None), for every file here that declares one;
    the planted causes first, in file order, then those that plant nothing."""
    found = []
    for name in sorted(os.listdir(FOLDER)):
        if name.endswith(".py") and name != os.path.basename(__file__):
            plant = _declaration(os.path.join(FOLDER, name))
            if plant is not None:
                found.append((f"{name}:{plant['target']}", plant["cause"]))
    return sorted(found, key=lambda p: p[1] is None)
