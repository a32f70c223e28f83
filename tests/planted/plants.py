"""The planted workloads of this folder, each read from its own ``PLANT`` declaration.

Adding a cause to ``benchctl explain`` is one class in ``benchctl._studies.causes`` and one file here
that declares ``PLANT = {"target": NAME, "cause": CAUSE_NAME}`` (``None``: nothing is planted):
``tests/test_explain.py`` and ``bench/explain_planted.py`` find it here. The files are read, not
imported (importing one would start what it plants).

A plant also declares the fix its public report established, ``"fixed": {...}``, which
``bench/plant_toggles.py`` times against the plant in fresh processes, outside benchctl: any of
``"env"`` (variables the fixed process starts with), ``"after_setup"`` (a statement run, with
``torch`` imported, after ``setup()`` and before the timed calls), ``"target"`` (another target of
the same file, the code written the fixed way) and ``"warmup"`` (calls made before timing).

More optional keys: ``"device": "cuda"``, a plant that runs only where torch sees a CUDA device
(:func:`plants` leaves it out elsewhere), and ``"also"``, causes that judge the same evidence and are
right to be named with the planted one; ``"unverified"``, why the planted cause has not yet been
seen named here (the slow tier then runs its test as a non-strict xfail); and ``"cpu_lacks"``, CPU flags
of which the cause needs none: on a CPU with any of them the file plants nothing (half precision is
native arithmetic on a CPU with avx512_fp16), and :func:`plants` lists it as planting nothing.
"""

from __future__ import annotations

import ast
import os

__all__ = ["FOLDER", "FIX_KEYS", "DEVICES", "cause_here", "declaration", "declarations", "devices_here", "plants"]

#: The forms a plant's ``fixed`` may take (see the module's docstring).
FIX_KEYS = ("env", "after_setup", "target", "warmup")

FOLDER = os.path.dirname(os.path.abspath(__file__))
#: The devices a plant can declare; one without ``"device"`` runs on the CPU.
DEVICES = ("cpu", "cuda")


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


def declaration(target: str) -> dict:
    """The ``PLANT`` of ``file.py:target``."""
    return _declaration(os.path.join(FOLDER, target.split(":")[0]))


def devices_here() -> tuple[str, ...]:
    """The devices plants can run on here: the CPU, and CUDA where torch sees a device."""
    import torch

    return DEVICES if torch.cuda.is_available() else ("cpu",)


def cause_here(plant: dict) -> str | None:
    """The cause ``plant`` plants on this machine: None where the CPU has a flag the cause needs absent."""
    from benchctl._causes.isa.probe import cpu_flags

    lacks = set(plant.get("cpu_lacks", ()))
    return None if lacks & (cpu_flags() or frozenset()) else plant["cause"]


def plants(devices: tuple[str, ...] | None = None) -> list[tuple[str, str | None]]:
    """(``file.py:target``, the cause it plants or None), for every file here that declares one and runs on
    one of ``devices`` (None: the devices this machine has); the planted causes first, in file order, then
    those that plant nothing (here: see ``"cpu_lacks"``)."""
    devices = devices_here() if devices is None else devices
    found = [(f"{name}:{plant['target']}", cause_here(plant)) for name, plant in declarations()
             if plant.get("device", "cpu") in devices]
    return sorted(found, key=lambda p: p[1] is None)
