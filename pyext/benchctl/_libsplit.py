"""Where a window's CPU time goes, by library: the native sampler's samples (:func:`benchctl._native.lib_sampler_start`)
named by the kind of object they fell in, read back as :class:`LibrarySplit`.

Each thread of the process is interrupted once per ``period_us`` of its own CPU time and the instruction
it was at is noted; after the window each address is mapped to the object loaded there and the object's
path to a :class:`Kind`. A CPU-time clock counts kernel time too, but a signal is delivered on the way
back to user space, so a sample never lands in the kernel: time in a system call or a page fault is
charged to the user instruction that entered it. The kernel's share is therefore measured apart, as the
process's system time over the window against its user and system time together (``getrusage``: every
thread of the process, also those that exited, as the kernel accounts it, which on most kernels is
apportioned from scheduler ticks), and the libraries share the rest (the user time) in proportion to
their samples. That proportion assumes kernel time is spread over the libraries like user time: code
that makes many system calls or faults many pages in is over-counted by it.
"""

from __future__ import annotations

import contextlib
import enum
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator

from . import _native, omp

__all__ = ["Kind", "kind", "KindSamples", "ObjectSamples", "ThreadSamples", "LibrarySplit", "Window", "sampling",
           "open_signal", "PERIOD_US", "CAPACITY"]

#: One sample per this many microseconds of each thread's CPU time.
PERIOD_US = 1000
#: Samples one window can store (12 bytes each): some 500 thread-seconds of CPU time at 1 ms.
CAPACITY = 1 << 19
#: Objects a split keeps by name, most samples first (the rest count in their kind only).
TOP_OBJECTS = 8
#: The normal quantile of a two-sided 95% interval (:meth:`LibrarySplit.share_at_least`).
_Z95 = 1.959964
#: Kinds whose share rounds below this are left out of :meth:`LibrarySplit.text`.
SHOWN_SHARE = 0.005


class Kind(str, enum.Enum):
    """What a sample's object is; the value is its name in words (and in a results file)."""

    INTERPRETER = "Python interpreter"  # libpython or a static python, and its lib-dynload modules
    TORCH_CPU = "libtorch_cpu"          # torch's CPU ops, with the MKL and oneDNN x86 wheels link into it
    TORCH_PYTHON = "libtorch_python"    # torch's Python bindings: argument parsing, conversions
    TORCH_OTHER = "other torch code"    # c10, libtorch, the libraries torch bundles, inductor's kernels
    OPENMP = "OpenMP runtime"           # libgomp, libiomp5, libomp (omp.runtime_kind)
    OPENBLAS = "OpenBLAS"               # numpy's (scipy's) bundled OpenBLAS, or a system one
    NUMPY = "NumPy"                     # numpy's extension modules and the other libraries it bundles
    LIBC = "libc"                       # glibc (libc, libm, the loader) and the kernel's vDSO
    BENCHCTL = "benchctl extension"     # benchctl's own native core
    UNNAMED = "code in no loaded object"  # JIT-compiled code (oneDNN's kernels, say)
    OTHER = "other"
    KERNEL = "kernel"                   # never an object's: the process's system time (see the module)


# Name prefixes of glibc's objects and of the kernel's vDSO.
_LIBC_PREFIXES = ("libc.", "libc-", "libm.", "libm-", "libmvec", "libpthread", "libdl.", "librt.", "ld-linux",
                  "ld64.", "linux-vdso", "linux-gate")
_OPENBLAS_PREFIXES = ("libopenblas", "libscipy_openblas")
_TORCH_DIRS = {"torch", "torch.libs"}
_NUMPY_DIRS = {"numpy", "numpy.libs"}
_PYTHON_NAME = re.compile(r"^(lib)?python\d*(\.\d+)*(\.so.*)?$")


def _same_file(a: str, b: str | None) -> bool:
    return b is not None and os.path.realpath(a) == os.path.realpath(b)


def kind(path: str) -> Kind:
    """The kind of the loaded object at ``path`` (as the loader names it; ``..`` allowed)."""
    path = os.path.normpath(path)
    name = os.path.basename(path)
    dirs = set(os.path.dirname(path).split(os.sep))
    if omp.runtime_kind(path) is not None:
        return Kind.OPENMP
    if name.startswith("libtorch_cpu"):
        return Kind.TORCH_CPU
    if name.startswith("libtorch_python"):
        return Kind.TORCH_PYTHON
    if dirs & _TORCH_DIRS or any(d.startswith("torchinductor") for d in dirs):
        return Kind.TORCH_OTHER
    if name.startswith(_OPENBLAS_PREFIXES):
        return Kind.OPENBLAS
    if dirs & _NUMPY_DIRS:
        return Kind.NUMPY
    if _PYTHON_NAME.match(name) or "lib-dynload" in dirs or _same_file(path, sys.executable):
        return Kind.INTERPRETER
    if name.startswith(_LIBC_PREFIXES):
        return Kind.LIBC
    if _same_file(path, getattr(_native, "__file__", None)):
        return Kind.BENCHCTL
    return Kind.OTHER


@dataclass(frozen=True)
class KindSamples:
    kind: Kind
    samples: int


@dataclass(frozen=True)
class ObjectSamples:
    path: str
    kind: Kind
    samples: int


@dataclass(frozen=True)
class ThreadSamples:
    tid: int
    name: str
    samples: int


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3g} ms"


@dataclass(frozen=True)
class LibrarySplit:
    """One window's CPU time by library. ``kinds``: weighted samples by :class:`Kind` (no KERNEL: see the
    module), most first; ``objects``: the :data:`TOP_OBJECTS` objects with the most; ``threads``: every
    thread timed, with its samples; ``samples``: all stored (``dropped``: taken once the buffer was full,
    in no kind); ``cpu_ns`` and ``kernel_ns``: the process's user plus system time and its system time over
    the window; ``wall_ns``; ``period_ns``: one sample per this much of a thread's CPU time; ``not_timed``:
    threads no timer could be armed on (``timer_error``: why, for the first); ``unsampled``: why the window
    could not be sampled at all ("" when it was)."""

    kinds: tuple[KindSamples, ...] = ()
    objects: tuple[ObjectSamples, ...] = ()
    threads: tuple[ThreadSamples, ...] = ()
    samples: int = 0
    dropped: int = 0
    cpu_ns: int = 0
    kernel_ns: int = 0
    wall_ns: int = 0
    period_ns: int = 0
    not_timed: int = 0
    timer_error: str = ""
    unsampled: str = ""

    @classmethod
    def from_native(cls, raw: Any) -> "LibrarySplit":
        """From a :class:`benchctl._native.LibSamples`."""
        counts: dict[Kind, int] = {Kind.UNNAMED: raw.unmapped} if raw.unmapped else {}
        objects = [ObjectSamples(os.path.normpath(o.path), kind(o.path), o.samples) for o in raw.objects]
        for o in objects:
            counts[o.kind] = counts.get(o.kind, 0) + o.samples
        kinds = sorted((KindSamples(k, n) for k, n in counts.items()), key=lambda s: -s.samples)
        return cls(tuple(kinds), tuple(objects[:TOP_OBJECTS]),
                   tuple(ThreadSamples(t.tid, t.name, t.samples) for t in raw.threads), raw.samples, raw.dropped,
                   raw.user_ns + raw.system_ns, raw.system_ns, raw.wall_ns, raw.period_ns, raw.not_timed,
                   raw.timer_error)

    @classmethod
    def not_sampled(cls, why: str) -> "LibrarySplit":
        """A split of a window the sampler could not open, saying why."""
        return cls(unsampled=why)

    @property
    def sampled(self) -> bool:
        """Whether any sample was taken (else no library's share is known)."""
        return self.samples > 0

    @property
    def threads_seen(self) -> int:
        """Threads at least one sample was taken on."""
        return sum(1 for t in self.threads if t.samples > 0)

    def samples_of(self, of: Kind) -> int:
        return sum(s.samples for s in self.kinds if s.kind is of)

    def share(self, of: Kind) -> float | None:
        """``of``'s share of the window's CPU time: KERNEL's is the system time's; each other kind's, its
        share of the samples times the user time's share. None where not measured (no CPU time, or for a
        library no sample)."""
        kernel = self.kernel_ns / self.cpu_ns if self.cpu_ns > 0 else None
        if of is Kind.KERNEL:
            return kernel
        if not self.sampled:
            return None
        return self.samples_of(of) / self.samples * (1.0 - (kernel or 0.0))

    def share_at_least(self, of: Kind) -> float | None:
        """The lower end of the 95% Wilson interval of ``of``'s share (not KERNEL), its samples taken as draws from
        the user time: a share of a few dozen samples is a rough one (30 calls of a small LSTM gave 28 samples, 38%
        of them in the OpenMP runtime; 300 calls, 326 samples, 71%). None where not measured."""
        if of is Kind.KERNEL or not self.sampled:
            return None
        n, p, z = self.samples, self.samples_of(of) / self.samples, _Z95
        low = (p + z * z / (2 * n) - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n)
        kernel = self.kernel_ns / self.cpu_ns if self.cpu_ns > 0 else 0.0
        return max(0.0, low) * (1.0 - kernel)

    def shares(self) -> list[tuple[Kind, float]]:
        """Every kind with a share (the kernel's included), largest first."""
        found = [(s.kind, self.share(s.kind)) for s in self.kinds]
        if self.share(Kind.KERNEL) is not None:
            found.append((Kind.KERNEL, self.share(Kind.KERNEL)))
        return sorted(((k, v) for k, v in found if v is not None), key=lambda kv: -kv[1])

    def name_of(self, kind: Kind) -> str:
        """``kind`` in words: its value, or for :attr:`Kind.OTHER` the object of that kind with the most samples
        (``"other libraries (mostly libz.so.1)"``: "other" alone names nothing a reader can look up)."""
        if kind is not Kind.OTHER:
            return kind.value
        top = next((o.path for o in self.objects if o.kind is Kind.OTHER), None)
        return "other libraries" + (f" (mostly {os.path.basename(top)})" if top else "")

    def text(self) -> str:
        """``"libtorch_cpu 61%, OpenMP runtime 22%, Python interpreter 9%, kernel 5%, other libraries (mostly
        libz.so.1) 3%"``, or why there is no split."""
        if self.unsampled:
            return f"not sampled: {self.unsampled}"
        if not self.sampled:
            return (f"no CPU time sampled ({_ms(self.cpu_ns)} of CPU time in {_ms(self.wall_ns)}; one sample per "
                    f"{_ms(self.period_ns)} of a thread's CPU time)")
        said = ", ".join(f"{self.name_of(k)} {v:.0%}" for k, v in self.shares() if v >= SHOWN_SHARE)
        return said + (f" ({self.dropped} samples dropped: the buffer was full)" if self.dropped else "")

    def to_json(self) -> dict:
        """JSON-ready fields (kinds by their value); :meth:`from_json` reads them back."""
        return {"kinds": [{"kind": s.kind.value, "samples": s.samples} for s in self.kinds],
                "objects": [{"path": o.path, "kind": o.kind.value, "samples": o.samples} for o in self.objects],
                "threads": [{"tid": t.tid, "name": t.name, "samples": t.samples} for t in self.threads],
                "samples": self.samples, "dropped": self.dropped, "cpu_ns": self.cpu_ns, "kernel_ns": self.kernel_ns,
                "wall_ns": self.wall_ns, "period_ns": self.period_ns, "not_timed": self.not_timed,
                "timer_error": self.timer_error, "unsampled": self.unsampled}

    @classmethod
    def from_json(cls, data: dict) -> "LibrarySplit":
        """From :meth:`to_json`'s fields, or from ``dataclasses.asdict`` of one (kinds as members or values)."""
        return cls(**{**data,
                      "kinds": tuple(KindSamples(Kind(s["kind"]), s["samples"]) for s in data.get("kinds", ())),
                      "objects": tuple(ObjectSamples(o["path"], Kind(o["kind"]), o["samples"])
                                       for o in data.get("objects", ())),
                      "threads": tuple(ThreadSamples(**t) for t in data.get("threads", ()))})


@dataclass
class Window:
    """An open sampling window: its ``signal``; ``result`` once it closed (None until then)."""

    signal: int
    result: LibrarySplit | None = field(default=None)


@contextlib.contextmanager
def sampling(period_us: int = PERIOD_US, capacity: int = CAPACITY) -> Iterator[Window]:
    """Sample every thread of this process (and those it starts) over the block; the yielded
    :class:`Window`'s ``result`` is its :class:`LibrarySplit` after it, also after an exception (the timers
    deleted and the signal's disposition restored). Raises RuntimeError when a window is open already or
    the sampler cannot start here (the reason given), ValueError for a period or capacity out of range."""
    window = Window(_native.lib_sampler_start(period_us, capacity))
    try:
        yield window
    finally:
        window.result = LibrarySplit.from_native(_native.lib_sampler_stop())


def open_signal() -> int:
    """The signal of the open sampling window, 0 when none is open."""
    return _native.lib_sampler_signal()
