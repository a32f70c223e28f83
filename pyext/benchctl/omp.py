"""The OpenMP runtimes loaded in this process, and the team torch runs on.

torch wheels bundle their own libgomp (``torch/lib/libgomp*.so.1``); conda
builds often use ``libiomp5``; other programs may load a second runtime beside
it. Settings that must reach every OpenMP worker (FTZ, pinning) run native code
on the team of the runtime torch uses, through that runtime's own fork entry
point (``GOMP_parallel`` / ``__kmpc_fork_call``).
"""

from __future__ import annotations

import os
import sys

from . import _native, _validate

__all__ = [
    "runtime_kind", "runtimes", "torch_runtime", "resolve_runtime", "team_census",
]


# Each runtime kind and the file-name prefixes that identify it. Wheels rename
# the copies they bundle (libgomp-a34b3233.so.1), so names are matched by
# prefix; a new runtime is one more row. Offload plugins and libomptarget
# share a prefix with a runtime but are not one.
_RUNTIME_PREFIXES = (
    ("libgomp", ("libgomp.", "libgomp-")),
    ("libiomp5", ("libiomp5",)),
    ("libomp", ("libomp.", "libomp-")),
)
_NOT_RUNTIMES = ("libgomp-plugin-",)


def runtime_kind(path: str) -> str | None:
    """The OpenMP runtime kind a shared library's path names, or None if it is not one."""
    name = os.path.basename(path)
    if name.startswith(_NOT_RUNTIMES):
        return None
    for kind, prefixes in _RUNTIME_PREFIXES:
        if name.startswith(prefixes):
            return kind
    return None


def runtimes() -> list[dict]:
    """OpenMP runtimes mapped into this process: ``[{"kind", "path"}]`` in load order."""
    found = []
    for path in _native.loaded_libraries():
        kind = runtime_kind(path)
        if kind is not None:
            found.append({"kind": kind, "path": path})
    return found


def _torch_dir() -> str | None:
    torch = sys.modules.get("torch")
    if torch is None or not getattr(torch, "__file__", None):
        return None
    return os.path.dirname(os.path.realpath(torch.__file__))


def torch_runtime() -> dict | None:
    """The runtime torch's parallel regions use, or None when torch is not imported.

    Preference: a runtime inside torch's own package directory (the bundled
    copy); else Intel's libiomp5 (MKL builds link torch to it); else the first
    one loaded.
    """
    torch_dir = _torch_dir()
    if torch_dir is None:
        return None
    found = runtimes()
    for rt in found:
        if os.path.realpath(rt["path"]).startswith(torch_dir + os.sep):
            return rt
    for rt in found:
        if rt["kind"] == "libiomp5":
            return rt
    return found[0] if found else None


def resolve_runtime(runtime: dict | None = None) -> dict:
    """``runtime`` itself, or torch's; raise RuntimeError when there is none."""
    if runtime is not None:
        return runtime
    rt = torch_runtime()
    if rt is None:
        loaded = runtimes()
        if sys.modules.get("torch") is None:
            raise RuntimeError("torch is not imported, so there is no torch OpenMP team; import torch first")
        raise RuntimeError(f"torch uses no loaded OpenMP runtime (loaded: {loaded or 'none'})")
    return rt


def team_census(num_threads: int = 0, runtime: dict | None = None) -> list[dict]:
    """Run an empty region on the team and report each thread.

    Returns ``[{"omp_thread", "tid", "cpu"}]`` ordered by thread number.
    ``num_threads=0`` uses the runtime's current default (torch sets it with
    ``torch.set_num_threads``). ``runtime`` defaults to :func:`torch_runtime`.
    """
    num_threads = _validate.count("num_threads", num_threads, 0)
    rt = resolve_runtime(runtime)
    members = _native.omp_team_members(rt["kind"], rt["path"], num_threads)
    return [{"omp_thread": m.omp_thread, "tid": m.tid, "cpu": m.cpu} for m in members]
