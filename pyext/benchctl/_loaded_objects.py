"""Whether the process's set of shared objects changed: the dynamic linker's own counts of loads and unloads.

glibc's ``dl_iterate_phdr`` hands its callback, with each object, ``dlpi_adds`` and ``dlpi_subs``: how many
objects the linker has loaded and unloaded since the process started. Their pair changes whenever a library
comes or goes, so a list built from the loaded libraries (threadpoolctl's pool controllers, ~0.8 ms to build)
can be kept until it does. Read through ctypes with a callback that stops at the first object: ~1.5 us here.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["generation"]


class _PhdrInfo(ctypes.Structure):
    # struct dl_phdr_info (<link.h>) up to the counts; ``size`` says whether this libc fills them.
    _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p), ("phdr", ctypes.c_void_p),
                ("phnum", ctypes.c_uint16), ("adds", ctypes.c_ulonglong), ("subs", ctypes.c_ulonglong)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t, ctypes.c_void_p)


def _iterate():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function = libc.dl_iterate_phdr
    except (OSError, AttributeError):  # no glibc-style linker (macOS): callers rebuild every time
        return None
    function.argtypes = [_CALLBACK, ctypes.c_void_p]
    function.restype = ctypes.c_int
    return function


_DL_ITERATE_PHDR = _iterate()


def generation() -> tuple[int, int] | None:
    """(objects loaded, objects unloaded) since the process started, or None where the linker does not say."""
    if _DL_ITERATE_PHDR is None:
        return None
    seen: list[tuple[int, int]] = []

    def first(info, size, _data) -> int:
        if size >= _PhdrInfo.subs.offset + _PhdrInfo.subs.size:
            seen.append((info.contents.adds, info.contents.subs))
        return 1  # the counts are the process's, the same in every object's record: one is enough

    _DL_ITERATE_PHDR(_CALLBACK(first), None)
    return seen[0] if seen else None
