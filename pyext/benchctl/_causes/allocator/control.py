"""glibc malloc's state in this process, read back: where its big blocks would come from now.

glibc serves a request of at least its *mmap threshold* with a mapping of its own, which
``free`` unmaps again; smaller requests come from the heap, whose free top is given back
once it exceeds the *trim threshold*. Both move: freeing a mapped block larger than the
threshold (up to :data:`DYNAMIC_THRESHOLD_MAX`) raises the mmap threshold to that block's
size and the trim threshold to twice it, unless a tunable or ``MALLOC_*_`` variable fixed
them (any of :data:`FIXING_TUNABLES` turns the adjustment off). A process that has freed
big tensors therefore maps fewer of its next ones, and memory returned to the OS has to be
faulted in again on every reuse.

:func:`read` reports that state (:class:`MallocState`): ``mallinfo2()``'s totals, the
largest free block of the main arena (``malloc_info``), and the mmap threshold, found by
allocating blocks and watching ``mallinfo2``: a request glibc maps raises its mapped-block
count, one below the threshold grows the heap instead (free blocks, which glibc tries first,
are used up before a size counts). The allocations happen in a forked child, so the probe
changes nothing here (freeing a probe block would raise the very threshold it measures);
glibc exposes the threshold through no call. The fork has one cost: every page the parent
writes afterwards faults once (its page-table entries were write-protected for the child;
76,812 faults on rewriting 300 MiB, measured here), so only a reading after the timed work
should probe; ``read(probe=False)`` takes ``mallinfo2()`` alone, in this process, allocating
nothing.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DEFAULT_MMAP_THRESHOLD", "DYNAMIC_THRESHOLD_MAX", "TRIM_PER_MMAP", "PROBE_MAX_BYTES", "FIXING_TUNABLES",
           "MallocState", "fixed_by", "read", "size_text"]

#: glibc's initial mmap threshold (DEFAULT_MMAP_THRESHOLD_MIN).
DEFAULT_MMAP_THRESHOLD = 128 << 10
#: The dynamic threshold never rises above this on 64-bit glibc (DEFAULT_MMAP_THRESHOLD_MAX).
DYNAMIC_THRESHOLD_MAX = 32 << 20
#: glibc's dynamic trim threshold is this many times its mmap threshold (set together on every rise).
TRIM_PER_MMAP = 2
#: The probe's largest request: above the dynamic maximum, so a fixed higher threshold shows as "above".
PROBE_MAX_BYTES = 64 << 20
#: Tunables whose setting turns glibc's dynamic threshold off (mallopt's do_set_* set no_dyn_threshold),
#: each with its environment spelling.
FIXING_TUNABLES = {
    "glibc.malloc.mmap_threshold": "MALLOC_MMAP_THRESHOLD_",
    "glibc.malloc.trim_threshold": "MALLOC_TRIM_THRESHOLD_",
    "glibc.malloc.top_pad": "MALLOC_TOP_PAD_",
    "glibc.malloc.mmap_max": "MALLOC_MMAP_MAX_",
}
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def size_text(nbytes: int | None) -> str:
    """``"128 KiB"``, ``"25.7 MiB"``: a block size as the sentences give it."""
    if nbytes is None:
        return "unknown"
    if nbytes < 1 << 20:
        return f"{nbytes / 1024:.0f} KiB"
    if nbytes < 1 << 30:
        return f"{nbytes / (1 << 20):.3g} MiB"
    return f"{nbytes / (1 << 30):.3g} GiB"


@dataclass(frozen=True)
class MallocState:
    """One readback of glibc malloc in a process.

    ``library``: the file that defines the ``malloc`` this process calls (another allocator
    preloaded: the glibc fields below are then None). From ``mallinfo2()``: ``heap_bytes``
    (arena: heap memory obtained from the OS), ``free_bytes`` (fordblks: free inside it),
    ``top_bytes`` (keepcost: the releasable top of the main arena), ``mapped_blocks`` and
    ``mapped_bytes`` (hblks, hblkhd: blocks that have their own mmap). ``largest_free_bytes``:
    the largest free block of the main arena, its top included (``malloc_info``).
    ``threshold_bytes``: glibc's mmap threshold now, to a page (None: above ``probe_max_bytes``);
    ``heap_below_bytes``: the largest probe below it, served by growing the heap. A request at or
    above the threshold is mapped (and unmapped on free) unless a free heap block can hold it.
    ``fixed``: the tunables/variables set in this process that fixed the thresholds.
    ``probed``: False for a ``mallinfo2()``-only reading (no largest free block, no threshold).
    """

    library: str
    heap_bytes: int | None = None
    free_bytes: int | None = None
    top_bytes: int | None = None
    mapped_blocks: int | None = None
    mapped_bytes: int | None = None
    largest_free_bytes: int | None = None
    threshold_bytes: int | None = None
    heap_below_bytes: int | None = None
    probe_max_bytes: int = PROBE_MAX_BYTES
    fixed: tuple[str, ...] = ()
    probed: bool = True

    @property
    def is_glibc(self) -> bool:
        return self.heap_bytes is not None

    @property
    def dynamic(self) -> bool:
        """Whether glibc still adjusts its thresholds here (no tunable fixed them)."""
        return not self.fixed

    @property
    def raised(self) -> bool:
        """Whether the threshold stands above glibc's initial one (freed mapped blocks raised it, or a tunable)."""
        return self.threshold_bytes is None or self.threshold_bytes > DEFAULT_MMAP_THRESHOLD

    def maps(self, nbytes: int) -> bool | None:
        """Whether a request of ``nbytes`` would get its own mapping now: at or above the threshold and larger
        than any free block of the main arena. None where this is not glibc's state."""
        if not self.is_glibc or not self.probed:
            return None
        return self.threshold_bytes is not None and nbytes >= self.threshold_bytes and nbytes > self.largest_free_bytes

    def threshold_text(self) -> str:
        """``"128 KiB"``, or ``"above 64 MiB"`` where no probe was mapped."""
        if not self.probed:
            return "not probed"
        if self.threshold_bytes is None:
            return f"above {size_text(self.probe_max_bytes)}"
        return size_text(self.threshold_bytes)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "fixed": list(self.fixed)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "MallocState":
        return cls(**{**data, "fixed": tuple(data.get("fixed", ()))})


def fixed_by(env: dict[str, str] | os._Environ = os.environ) -> tuple[str, ...]:
    """``NAME=VALUE`` of each tunable or ``MALLOC_*_`` variable in ``env`` that fixes glibc's thresholds."""
    found = []
    for item in filter(None, env.get("GLIBC_TUNABLES", "").split(":")):
        name, _, value = item.partition("=")
        if name in FIXING_TUNABLES:
            found.append(f"{name}={value}")
    found += [f"{var}={env[var]}" for var in FIXING_TUNABLES.values() if var in env]
    return tuple(found)


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.mallinfo2.restype = _Mallinfo2
    libc.mallinfo2.argtypes = []
    return libc


def _malloc_library(libc: ctypes.CDLL) -> str:
    """The shared object whose ``malloc`` this process calls (dladdr of the symbol)."""
    info = _DlInfo()
    address = ctypes.cast(libc.malloc, ctypes.c_void_p)
    if not libc.dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return "unknown"
    return os.path.basename(info.dli_fname.decode(errors="replace"))


def _malloc_info(libc: ctypes.CDLL) -> str:
    """``malloc_info(0, ...)``'s XML, through an in-memory stream."""
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        return ""
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    return ctypes.string_at(buf, size.value).decode(errors="replace") if buf.value else ""


def _largest_free(xml: str, top: int) -> int:
    """The main arena's largest free block: the biggest bin's ``to`` in its ``<heap nr="0">``, or its top."""
    main = re.search(r'<heap nr="0">(.*?)</heap>', xml, re.S)
    sizes = [int(m) for m in re.findall(r'<(?:size|unsorted) from="\d+" to="(\d+)"', main.group(1))] if main else []
    return max(sizes + [top])


def _served_by_mmap(libc: ctypes.CDLL, nbytes: int) -> bool:
    """Whether glibc serves a request of ``nbytes`` with a mapping of its own: whether ``nbytes`` is at
    least its mmap threshold. glibc looks for a free heap block before it compares the request with
    the threshold, so requests are repeated (the blocks kept: the child that probes exits) until
    neither a free block nor the heap's top can serve one: then glibc maps it (at or above the
    threshold) or grows the heap (below it). Each repetition takes ``nbytes`` of free space, so
    the free bytes bound the loop."""
    info = libc.mallinfo2()
    for _ in range(info.fordblks // nbytes + 2):
        if not libc.malloc(nbytes):
            raise MemoryError(nbytes)
        after = libc.mallinfo2()
        if after.hblks > info.hblks:
            return True
        if after.arena > info.arena:
            return False
        info = after
    raise RuntimeError(f"{nbytes}-byte requests were neither mapped nor grew the heap")


def _probe_threshold(libc: ctypes.CDLL) -> tuple[int | None, int | None]:
    """(glibc's mmap threshold to a page, the largest probe below it), or (None, the probe's maximum)
    when even that is not mapped: halving from :data:`PROBE_MAX_BYTES` to the first size the heap
    serves, then bisecting. Never frees: run it where that is harmless."""
    if not _served_by_mmap(libc, PROBE_MAX_BYTES):
        return None, PROBE_MAX_BYTES
    above = PROBE_MAX_BYTES
    below = above // 2
    while below >= _PAGE and _served_by_mmap(libc, below):
        above, below = below, below // 2
    if below < _PAGE:
        return above, 0
    while above - below > _PAGE:
        mid = (below + above) // 2 // _PAGE * _PAGE
        if _served_by_mmap(libc, mid):
            above = mid
        else:
            below = mid
    return above, below


def _read_here(libc: ctypes.CDLL, probe: bool = True) -> MallocState:
    library = _malloc_library(libc)
    fixed = fixed_by()
    if not library.startswith("libc."):
        return MallocState(library=library, fixed=fixed, probed=probe)
    info = libc.mallinfo2()  # first, before anything here allocates
    if not probe:
        return MallocState(library=library, heap_bytes=info.arena, free_bytes=info.fordblks, top_bytes=info.keepcost,
                           mapped_blocks=info.hblks, mapped_bytes=info.hblkhd, fixed=fixed, probed=False)
    largest = _largest_free(_malloc_info(libc), info.keepcost)
    threshold, below = _probe_threshold(libc)
    return MallocState(library=library, heap_bytes=info.arena, free_bytes=info.fordblks, top_bytes=info.keepcost,
                       mapped_blocks=info.hblks, mapped_bytes=info.hblkhd, largest_free_bytes=largest,
                       threshold_bytes=threshold, heap_below_bytes=below, fixed=fixed)


def read(probe: bool = True) -> MallocState:
    """This process's malloc state now, probed in a forked child so that nothing here changes; with
    ``probe=False``, or while another Python thread runs, ``mallinfo2()`` alone, read here without a fork.

    The child inherits the heap and the thresholds as they are; it allocates, reports and exits
    without cleanup (``os._exit``). Raises OSError when the child cannot be started or reports nothing.
    """
    libc = _libc()
    if not probe or threading.active_count() > 1:
        # Another Python thread may be inside a BLAS call (the busy setting's pool, the workload's own
        # thread): OpenBLAS's fork handler then waits for its pool forever, and the worker hangs in
        # fork (seen here beside busy=pool). Such a process is read without the fork.
        return _read_here(libc, probe=False)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: probe, report, exit at once (no atexit, no flush of the parent's buffers)
        code = 1
        try:
            os.close(r)
            os.write(w, json.dumps(_read_here(libc).to_json()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    try:
        with os.fdopen(r, "rb") as pipe:
            payload = pipe.read()
    finally:
        _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not payload:
        raise OSError(f"the malloc probe's child exited with {os.waitstatus_to_exitcode(status)} and no report")
    return MallocState.from_json(json.loads(payload))
