"""The planted workloads of this folder, each read from its own ``PLANT`` declaration.

Adding a cause to ``benchctl explain`` is one class in ``benchctl.studies.causes`` and one file here
that declares ``PLANT = {"target": NAME, "cause": CAUSE_NAME}`` (``None``: nothing is planted):
``tests/test_explain.py`` and ``bench/explain_planted.py`` find it here. The files are read, not
imported (importing one would start what it plants).

A plant also declares the fix its public report established, ``"fixed": {...}``, which
``bench/plant_toggles.py`` times against the plant in fresh processes, outside benchctl: any of
``"env"`` (variables the fixed process starts with), ``"after_setup"`` (a statement run, with
``torch`` imported, after ``setup()`` and before the timed calls), ``"target"`` (another target of
the same file, the code written the fixed way) and ``"warmup"`` (calls made before timing).
"""

from __future__ import annotations

import ast
import os

__all__ = ["FOLDER", "FIX_KEYS", "declarations", "plants"]

#: The forms a plant's ``fixed`` may take (see the module's docstring).
FIX_KEYS = ("env", "after_setup", "target", "warmup")

FOLDER = os.path.dirname(os.path.abspath(__file__))


def _declaration(path: str) -> dict | None:
    for node in ast.parse(open(path).read(), path).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PLANT"]:
            return ast.literal_eval(node.value)
    return None


def declarations() -> list[tuple[str, dict]]:
    """(file name, its ``PLANT``) for every file here that declares one, in file order; a ``fixed`` with
    a key outside :data:`FIX_KEYS` is refused."""
    found = []
    for name in sorted(os.listdir(FOLDER)):
        if name.endswith(".py") and name != os.path.basename(__file__):
            plant = _declaration(os.path.join(FOLDER, name))
            if plant is not None:
                unknown = set(plant.get("fixed") or {}) - set(FIX_KEYS)
                if unknown:
                    raise ValueError(f"{name}: PLANT['fixed'] has {sorted(unknown)}; it takes {', '.join(FIX_KEYS)}")
                found.append((name, plant))
    return found


def plants() -> list[tuple[str, str | None]]:
    """(``file.py:target``, the cause it plants or None), for every file here that declares one;
    the planted causes first, in file order, then those that plant nothing."""
    found = [(f"{name}:{plant['target']}", plant["cause"]) for name, plant in declarations()]
    return sorted(found, key=lambda p: p[1] is None)
