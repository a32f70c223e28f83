"""The thread pools in this process other than torch's own, and capping them at one thread.

numpy's OpenBLAS (or a BLIS, or an MKL numpy loads for itself) keeps a pool of its own beside torch's
OpenMP team; each pool sizes itself to every CPU, and their threads spin for a while after their work,
so a program that alternates numpy products and torch ops runs two full pools on the same CPUs.
:func:`cap` holds every such pool at one thread (torch's own team keeps its count): at the worker's
start through :data:`START_ENV` (pools loaded later start capped) and after import through threadpoolctl
(pools already loaded). Torch's own pools are its OpenMP runtime and whatever library ships inside
torch's package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ... import omp

__all__ = ["START_ENV", "Pool", "controllers", "pools", "others", "cap", "capped"]

#: Read by OpenBLAS and BLIS when they load: their pools start with one thread.
START_ENV = {"OPENBLAS_NUM_THREADS": "1", "BLIS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class Pool:
    """One pool threadpoolctl sees: its library's prefix, API, size, and whether it is torch's own."""

    prefix: str
    user_api: str
    num_threads: int
    torch_own: bool

    @property
    def text(self) -> str:
        return f"{self.prefix} {self.user_api} x{self.num_threads}"


def _torch_own(filepath: str) -> bool:
    runtime = omp.torch_runtime()
    if runtime is not None and os.path.realpath(runtime["path"]) == os.path.realpath(filepath):
        return True
    import torch

    return os.path.realpath(filepath).startswith(os.path.dirname(os.path.realpath(torch.__file__)) + os.sep)


def controllers(torch_own: bool | None = None) -> list:
    """threadpoolctl's controller of each pool loaded now (only torch's own, or only the others, when asked)."""
    from threadpoolctl import ThreadpoolController

    libs = ThreadpoolController().lib_controllers  # a fresh one: libraries loaded since count too
    return [lib for lib in libs if torch_own is None or _torch_own(lib.filepath) == torch_own]


def pools() -> list[Pool]:
    """Every pool loaded now."""
    return [Pool(lib.prefix, lib.user_api, lib.get_num_threads(), _torch_own(lib.filepath)) for lib in controllers()]


def others() -> list[Pool]:
    """The pools loaded now that are not torch's own."""
    return [p for p in pools() if not p.torch_own]


def capped(found: list[Pool] | None = None) -> bool:
    """Whether every pool other than torch's own (of ``found``, default those loaded now) has one thread."""
    return all(p.num_threads <= 1 for p in (others() if found is None else found) if not p.torch_own)


def cap() -> list[Pool]:
    """Set every pool other than torch's own to one thread; the pools read back after it."""
    for lib in controllers(torch_own=False):
        if lib.get_num_threads() != 1:
            lib.set_num_threads(1)
    return pools()
