"""Memory-allocator choices for a fresh process, and how to see which one it got.

An allocator is chosen through the environment of a process before it starts
(glibc reads ``GLIBC_TUNABLES`` and the loader honours ``LD_PRELOAD`` only at
start-up), so each choice here is a small class that edits an environment
dict, and :func:`observe` runs inside the started process to report what it
actually got.

* ``default``: glibc malloc with its default thresholds; allocator libraries,
  ``glibc.malloc.*`` tunables and glibc's older ``MALLOC_*_`` variables
  inherited from the caller are removed, so "default" means the same
  everywhere (the readback shows each of those variables unset).
* ``retain``: glibc malloc told to keep freed memory. Large blocks normally
  come from ``mmap`` and go back to the OS on ``free``, and the heap top is
  trimmed once 128 KiB are free, so a loop that frees and reallocates big
  tensors page-faults them in again every iteration. Raising both thresholds
  keeps the memory mapped (measured in DESIGN.md: it removes the seed-1 gap).
* ``jemalloc`` / ``tcmalloc``: the system library, preloaded.
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
from typing import Any

from ._validate import ArgumentError
from .errors import UnavailableError

__all__ = [
    "RETAIN_TUNABLES", "GLIBC_MALLOC_ENV", "OWNED_VARIABLES", "AllocatorError", "Allocator", "GlibcDefault",
    "GlibcRetain", "PreloadedAllocator", "Jemalloc", "Tcmalloc", "ALLOCATORS", "get", "observe",
]

# Blocks up to 4 GiB come from the heap instead of their own mmap, and the heap
# is trimmed only when 16 GiB at its top are free: i.e. effectively never.
RETAIN_TUNABLES = {
    "glibc.malloc.mmap_threshold": "4294967296",
    "glibc.malloc.trim_threshold": "17179869184",
}
_MALLOC_TUNABLE_PREFIX = "glibc.malloc."
# glibc's environment spellings of its malloc tunables: any of these inherited
# would make "default" quietly behave like another allocator choice.
GLIBC_MALLOC_ENV = (
    "MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "MALLOC_CHECK_", "MALLOC_MMAP_MAX_",
    "MALLOC_MMAP_THRESHOLD_", "MALLOC_PERTURB_", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_",
)
#: Every variable an allocator choice decides; another setting may not set them.
OWNED_VARIABLES = ("GLIBC_TUNABLES", "LD_PRELOAD") + GLIBC_MALLOC_ENV
_PROBE_BYTES = 64 << 20


class AllocatorError(UnavailableError, ValueError):
    """The requested allocator is not installed here (says what to install)."""


def _split_tunables(text: str) -> list[tuple[str, str]]:
    pairs = []
    for item in filter(None, text.split(":")):
        name, _, value = item.partition("=")
        pairs.append((name, value))
    return pairs


def _join_tunables(pairs: list[tuple[str, str]]) -> str:
    return ":".join(f"{name}={value}" for name, value in pairs)


def _library_dirs() -> list[str]:
    """Where system allocator libraries live: the multiarch and usual lib dirs."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = []
    for prefix in ("/usr/lib", "/lib", "/usr/local/lib"):
        if multiarch:
            dirs.append(os.path.join(prefix, multiarch))
        dirs.append(prefix)
    dirs += ["/usr/lib64", "/lib64", os.path.join(sys.prefix, "lib")]
    if os.environ.get("CONDA_PREFIX"):
        dirs.append(os.path.join(os.environ["CONDA_PREFIX"], "lib"))
    return dirs


class Allocator:
    """One allocator choice: ``name`` and how it edits a child's environment."""

    name = ""
    help = ""

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """Return a copy of ``env`` that gives a new process this allocator."""
        out = {k: v for k, v in env.items() if k not in GLIBC_MALLOC_ENV}
        _strip_preloaded_allocators(out)
        pairs = [(n, v) for n, v in _split_tunables(out.get("GLIBC_TUNABLES", ""))
                 if not n.startswith(_MALLOC_TUNABLE_PREFIX)]
        if pairs:
            out["GLIBC_TUNABLES"] = _join_tunables(pairs)
        else:
            out.pop("GLIBC_TUNABLES", None)
        return out


class GlibcDefault(Allocator):
    name = "default"
    help = "glibc malloc, default thresholds"


class GlibcRetain(Allocator):
    name = "retain"
    help = "glibc malloc keeping freed memory (mmap/trim thresholds raised via GLIBC_TUNABLES)"

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        out = super().environment(env)
        pairs = _split_tunables(out.get("GLIBC_TUNABLES", "")) + list(RETAIN_TUNABLES.items())
        out["GLIBC_TUNABLES"] = _join_tunables(pairs)
        return out


class PreloadedAllocator(Allocator):
    """A system allocator library injected with ``LD_PRELOAD``."""

    sonames: tuple[str, ...] = ()
    apt_package = ""

    def find(self) -> str | None:
        for directory in _library_dirs():
            for soname in self.sonames:
                path = os.path.join(directory, soname)
                if os.path.exists(path):
                    return os.path.realpath(path)
        return None

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        path = self.find()
        if path is None:
            raise AllocatorError(
                f"alloc={self.name}: {self.sonames[0]} is not installed: apt-get install {self.apt_package} "
                f"(searched {', '.join(_library_dirs())})"
            )
        out = super().environment(env)
        out["LD_PRELOAD"] = " ".join([path] + out.get("LD_PRELOAD", "").split())
        return out


class Jemalloc(PreloadedAllocator):
    name = "jemalloc"
    help = "jemalloc preloaded (apt-get install libjemalloc2)"
    sonames = ("libjemalloc.so.2", "libjemalloc.so")
    apt_package = "libjemalloc2"


class Tcmalloc(PreloadedAllocator):
    name = "tcmalloc"
    help = "tcmalloc preloaded (apt-get install libgoogle-perftools4)"
    sonames = ("libtcmalloc.so.4", "libtcmalloc_minimal.so.4", "libtcmalloc.so")
    apt_package = "libgoogle-perftools4"


ALLOCATORS: dict[str, Allocator] = {a.name: a for a in (GlibcDefault(), GlibcRetain(), Jemalloc(), Tcmalloc())}
_PRELOAD_MARKERS = ("jemalloc", "tcmalloc", "mimalloc")


def _strip_preloaded_allocators(env: dict[str, str]) -> None:
    kept = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split()
            if not any(m in os.path.basename(p) for m in _PRELOAD_MARKERS)]
    if kept:
        env["LD_PRELOAD"] = " ".join(kept)
    else:
        env.pop("LD_PRELOAD", None)


def get(name: str) -> Allocator:
    try:
        return ALLOCATORS[name]
    except KeyError:
        raise ArgumentError(f"unknown allocator {name!r}; choose one of {', '.join(ALLOCATORS)}") from None


def _mapping_of(address: int) -> str:
    """Name of the /proc/self/maps region holding ``address`` ('[heap]', a file, or 'anonymous')."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi:
                return fields[5] if len(fields) > 5 else "anonymous"
    return "unmapped"


def _probe_large_block(nbytes: int = _PROBE_BYTES) -> str:
    """Allocate and free one ``nbytes`` block with the process's malloc; report where it lived.

    With glibc, ``[heap]`` means large blocks are carved from the heap (kept on
    free: the ``retain`` behaviour) and ``anonymous`` means each gets its own
    mmap (returned to the OS on free: the default).
    """
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    address = libc.malloc(nbytes)
    if not address:
        return "allocation failed"
    try:
        return _mapping_of(address)
    finally:
        libc.free(address)


def _mapped_libraries() -> set[str]:
    """Real paths of the shared objects mapped into this process."""
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 5 and fields[5].startswith("/"):
                paths.add(os.path.realpath(fields[5]))
    return paths


def _is_mapped(preload_entry: str, mapped: set[str]) -> bool:
    # LD_PRELOAD may name a library by path or, like DT_NEEDED, by bare soname.
    if "/" in preload_entry:
        return os.path.realpath(preload_entry) in mapped
    return any(os.path.basename(m).startswith(preload_entry) for m in mapped)


def observe() -> dict[str, Any]:
    """What this process actually got: the variables it saw, preloads mapped, where big blocks go."""
    preload = os.environ.get("LD_PRELOAD", "").replace(":", " ").split()
    mapped = _mapped_libraries()
    return {
        "GLIBC_TUNABLES": os.environ.get("GLIBC_TUNABLES"),
        "LD_PRELOAD": os.environ.get("LD_PRELOAD"),
        "preload_mapped": {p: _is_mapped(p, mapped) for p in preload},
        "malloc_env": {name: os.environ.get(name) for name in GLIBC_MALLOC_ENV},
        "large_block_mapping": _probe_large_block(),
        "large_block_bytes": _PROBE_BYTES,
    }
