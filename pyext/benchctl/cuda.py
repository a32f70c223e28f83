"""Time GPU work with CUDA events, the way the GPU saw it.

A host clock around asynchronous CUDA launches measures the launches, not the
kernels. :func:`time_calls` records one CUDA event pair per call on the
caller's current stream and synchronizes once, after the last call, so each
sample is the GPU time between the pair (milliseconds, ~0.5 µs resolution).

The CUDA runtime (libcudart) is not linked at build time. It is found here, at
run time, in this order, and opened by the native core:

1. ``$BENCHCTL_CUDART`` alone, when set (a path or a soname);
2. the libcudart files already mapped into this process (the copy torch uses);
3. the CUDA runtime wheels beside torch (``nvidia/cu<major>/lib``,
   ``nvidia/cuda_runtime/lib`` under each site-packages directory);
4. the loader's search for ``libcudart.so.<torch's major>``, then ``.13``,
   ``.12``, ``.11`` and ``libcudart.so``.

The first candidate that opens and has every needed symbol wins.
:func:`available` says whether timing can work and, when not, why (torch built
without CUDA, no runtime found and what was tried, no driver, no device).
Every timing entry point raises :class:`CudaUnavailable` with that same reason.
"""

from __future__ import annotations

import glob
import os
import re
import site
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from . import _native, _validate
from .errors import UnavailableError

__all__ = [
    "ENV_VAR", "L2_FLUSH_FACTOR", "CudaError", "CudaUnavailable", "Diagnosis", "diagnose", "available",
    "runtime", "l2_flush_bytes", "time_calls", "device_info",
]

ENV_VAR = "BENCHCTL_CUDART"
#: How many times the device's L2 the flush buffer is: a write of twice the
#: cache evicts whatever the timed call left in it.
L2_FLUSH_FACTOR = 2
_SYSTEM_MAJORS = ("13", "12", "11")

#: A CUDA runtime call failed (``.call``, ``.code`` and the runtime's text).
CudaError = _native.CudaError


class CudaUnavailable(UnavailableError, RuntimeError):
    """CUDA timing cannot run here; the message says why."""


@dataclass(frozen=True)
class Diagnosis:
    """What the search for a usable CUDA runtime and device found."""

    available: bool
    reason: str
    runtime: Any = None  # _native.CudaRuntime when one opened
    tried: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (candidate, outcome)
    device_count: int = 0


def _torch_cuda_major() -> str | None:
    import torch

    return torch.version.cuda.split(".")[0] if torch.version.cuda else None


def _loaded_runtimes(maps_path: str = "/proc/self/maps") -> list[str]:
    """Paths of libcudart files mapped into this process, in map order."""
    found: list[str] = []
    try:
        with open(maps_path) as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if os.path.basename(path).startswith("libcudart.so") and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def _site_dirs() -> list[str]:
    import torch

    dirs = [os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))]
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # some virtualenv layouts lack it
        pass
    dirs += [p for p in sys.path if p]
    return dirs


def _wheel_runtimes(site_dirs: Sequence[str], cuda_major: str | None) -> list[str]:
    """libcudart files shipped by NVIDIA's runtime wheels under `site_dirs`.

    Files whose soname major matches torch's CUDA (`cuda_major`) come first.
    """
    subdirs = [f"cu{cuda_major}"] if cuda_major else []
    subdirs.append("cuda_runtime")
    found: list[str] = []
    for base in site_dirs:
        for sub in subdirs:
            for path in sorted(glob.glob(os.path.join(base, "nvidia", sub, "lib", "libcudart.so*"))):
                if path not in found:
                    found.append(path)
    if cuda_major:
        found.sort(key=lambda p: not p.endswith(f".so.{cuda_major}"))
    return found


def _system_sonames(cuda_major: str | None) -> list[str]:
    """Sonames for the dynamic loader's own search, torch's major first."""
    majors = ([cuda_major] if cuda_major else []) + [m for m in _SYSTEM_MAJORS if m != cuda_major]
    return [f"libcudart.so.{m}" for m in majors] + ["libcudart.so"]


def _candidate_paths() -> list[str]:
    """Where to look for the CUDA runtime, in order (see the module docstring)."""
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        return [override]
    major = _torch_cuda_major()
    ordered = _loaded_runtimes() + _wheel_runtimes(_site_dirs(), major) + _system_sonames(major)
    out: list[str] = []
    seen: set[str] = set()
    for c in ordered:
        key = os.path.realpath(c) if os.sep in c else c
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _open_runtime(candidates: Sequence[str]) -> tuple[Any, list[tuple[str, str]]]:
    """Open the first candidate that loads with every needed symbol.

    Returns ``(runtime or None, [(candidate, outcome), ...])`` for each tried.
    """
    tried: list[tuple[str, str]] = []
    for c in candidates:
        if os.sep in c and not os.path.exists(c):
            tried.append((c, "no such file"))
            continue
        try:
            rt = _native.CudaRuntime(c)
        except (RuntimeError, ValueError) as e:
            tried.append((c, str(e)))
            continue
        tried.append((c, "opened"))
        return rt, tried
    return None, tried


def _version_text(v: int) -> str:
    """CUDA's integer version (13000) as text ("13.0")."""
    return f"{v // 1000}.{(v % 1000) // 10}"


def diagnose(candidates: Sequence[str] | None = None) -> Diagnosis:
    """Search for a runtime and a device now (uncached); say what was found."""
    import torch

    if torch.version.cuda is None:
        return Diagnosis(False, f"torch {torch.__version__} was built without CUDA (torch.version.cuda is None)")
    if candidates is None:
        candidates = _candidate_paths()
    rt, opened = _open_runtime(candidates)
    tried = tuple(opened)
    if rt is None:
        listing = "; ".join(f"{c} ({why})" for c, why in tried) or "no candidates"
        return Diagnosis(False, f"no CUDA runtime library (libcudart) could be opened; tried: {listing}", None, tried)
    try:
        where = f"CUDA runtime {rt.path} (version {_version_text(rt.runtime_version())})"
        driver = rt.driver_version()
        count_error = None
        try:
            count = rt.device_count()
        except CudaError as e:
            count, count_error = 0, e
    except CudaError as e:
        return Diagnosis(False, f"CUDA runtime {rt.path} is unusable: {e}", rt, tried)
    if driver == 0:
        why = f"; {count_error}" if count_error else ""
        reason = f"no NVIDIA driver: {where} reports driver version 0 (libcuda not loadable){why}"
        return Diagnosis(False, reason, rt, tried)
    if count_error is not None:
        reason = f"no usable GPU: {where} with driver CUDA {_version_text(driver)}: {count_error}"
        return Diagnosis(False, reason, rt, tried)
    if count == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return Diagnosis(False, f"no CUDA device: {where} sees 0 devices (CUDA_VISIBLE_DEVICES={visible!r})", rt, tried)
    if not torch.cuda.is_available():
        reason = f"{where} sees {count} device(s) but torch.cuda.is_available() is False"
        return Diagnosis(False, reason, rt, tried, count)
    return Diagnosis(True, f"{count} device(s) via {where}, driver CUDA {_version_text(driver)}", rt, tried, count)


_cached: Diagnosis | None = None


def _diagnosis() -> Diagnosis:
    global _cached
    if _cached is None:
        _cached = diagnose()
    return _cached


def _require() -> Diagnosis:
    d = _diagnosis()
    if not d.available:
        raise CudaUnavailable(f"CUDA timing is unavailable: {d.reason}")
    return d


def available() -> tuple[bool, str]:
    """``(True, what was found)`` or ``(False, why not)``; searched once per process."""
    d = _diagnosis()
    return d.available, d.reason


def runtime():
    """The opened :class:`benchctl._native.CudaRuntime` (raises when unavailable)."""
    return _require().runtime


def l2_flush_bytes(device: int | None = None) -> int:
    """Bytes the L2 flush writes on `device`: L2_FLUSH_FACTOR times its L2."""
    _require()
    import torch

    idx = torch.cuda.current_device() if device is None else device
    l2 = int(getattr(torch.cuda.get_device_properties(idx), "L2_cache_size", 0) or 0)
    if l2 <= 0:
        raise RuntimeError(f"cuda:{idx} reports no L2 cache size: cannot size an L2 flush")
    return L2_FLUSH_FACTOR * l2


def _graph_replay(fn: Callable[[], Any], warmup: int) -> Callable[[], Any]:
    """Capture one call of `fn` in a CUDA graph; return the graph's replay."""
    import torch

    # Capture needs the call's one-time setup (allocations, library handles)
    # done first, on a side stream, as torch's graph docs require.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(warmup, 1)):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay  # the bound method keeps the graph alive


def time_calls(
    fn: Callable[[], Any],
    n: int,
    warmup: int = 3,
    flush_l2: bool = False,
    graph: bool = False,
) -> np.ndarray:
    """GPU milliseconds of each of `n` calls of `fn`, from CUDA events.

    `warmup` untimed calls come first. With `flush_l2`, a buffer of
    :func:`l2_flush_bytes` is overwritten before every call, outside the timed
    pair. With `graph`, one call of `fn` is captured in a CUDA graph and each
    sample times one replay (launch overhead removed). Only work `fn` queues on
    the current stream is timed.
    """
    d = _require()
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    n = _validate.count("n", n, 1)
    warmup = _validate.count("warmup", warmup, 0)
    import torch

    device = torch.cuda.current_device()
    flush = None
    if flush_l2:
        buffer = torch.empty(l2_flush_bytes(device), dtype=torch.uint8, device=device)
        flush = buffer.zero_
    timed = _graph_replay(fn, warmup) if graph else fn
    for _ in range(warmup):
        if flush is not None:
            flush()
        timed()
    torch.cuda.synchronize(device)
    stream = torch.cuda.current_stream(device).cuda_stream
    return d.runtime.time_calls(timed, n, stream, flush)


_NVML_FIELDS = ("driver_version", "sm_clock_mhz", "memory_clock_mhz", "max_sm_clock_mhz",
                "max_memory_clock_mhz", "temperature_c", "power_w", "pstate")


def _proc_driver_version() -> str | None:
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module\s+(\S+)", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def _nvml_handle(pynvml, uuid: str) -> tuple[Any, str]:
    """NVML's handle for the device torch calls `uuid`, and how it was matched."""
    # torch's uuid has no "GPU-" prefix; NVML's does. Matching by uuid stays
    # right under CUDA_VISIBLE_DEVICES, where CUDA's and NVML's indices differ.
    try:
        return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"), "NVML"
    except pynvml.NVMLError:
        if pynvml.nvmlDeviceGetCount() != 1:
            raise
        return pynvml.nvmlDeviceGetHandleByIndex(0), "NVML (its only device; uuid not matched)"


def _nvml_readings(uuid: str) -> tuple[dict[str, Any], str, str | None]:
    """({field: value or NVMLError}, source, why not) from NVML."""
    try:
        import pynvml
    except ImportError:
        return {}, "", "pynvml (nvidia-ml-py) is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return {}, "", f"nvmlInit failed: {e}"
    out: dict[str, Any] = {}
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        out["driver_version"] = driver.decode() if isinstance(driver, bytes) else driver
        h, source = _nvml_handle(pynvml, uuid)
        reads = {
            "sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "memory_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "max_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
            "max_memory_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "power_w": lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "pstate": lambda: f"P{pynvml.nvmlDeviceGetPerformanceState(h)}",
        }
        for key, read in reads.items():
            try:
                out[key] = read()
            except pynvml.NVMLError as e:
                out[key] = e  # reported per field by device_info
    except pynvml.NVMLError as e:
        return out, "NVML", f"NVML: {e}"
    finally:
        pynvml.nvmlShutdown()
    return out, source, None


def _properties(idx: int, props, rt, torch) -> tuple[dict[str, Any], dict[str, str]]:
    """What torch's device properties and the CUDA runtime state, and the source of each."""
    info: dict[str, Any] = {
        "index": idx,
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "uuid": str(getattr(props, "uuid", "")) or None,
        "total_memory_bytes": int(props.total_memory),
        "multiprocessors": int(props.multi_processor_count),
        "l2_cache_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None,
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda,
        "runtime_path": rt.path,
        "runtime_version": _version_text(rt.runtime_version()),
        "driver_cuda_version": _version_text(rt.driver_version()),
    }
    sources: dict[str, str] = {k: "torch.cuda.get_device_properties" for k in info}
    for k in ("runtime_path", "runtime_version", "driver_cuda_version"):
        sources[k] = "CUDA runtime (benchctl native)"
    sources["torch_version"] = sources["torch_cuda_version"] = "torch"
    return info, sources


def _add_live_readings(info: dict[str, Any], sources: dict[str, str], props) -> dict[str, str]:
    """Add the driver version, clocks, temperature, power and P-state (NVML, else fallbacks);
    return why each reading that is still None is missing."""
    unavailable: dict[str, str] = {}
    nvml, nvml_source, nvml_why = _nvml_readings(info["uuid"] or "")
    for key in _NVML_FIELDS:
        value = nvml.get(key)
        if isinstance(value, Exception):
            info[key], unavailable[key] = None, f"NVML: {value}"
        elif value is not None:
            info[key], sources[key] = value, nvml_source
        else:
            info[key], unavailable[key] = None, nvml_why or "NVML gave no reading"
    if info["driver_version"] is None:
        proc = _proc_driver_version()
        if proc:
            info["driver_version"], sources["driver_version"] = proc, "/proc/driver/nvidia/version"
            unavailable.pop("driver_version", None)
    # torch's properties state the maximum clocks (kHz) when NVML cannot.
    for key, attr in (("max_sm_clock_mhz", "clock_rate"), ("max_memory_clock_mhz", "memory_clock_rate")):
        khz = getattr(props, attr, None)
        if info[key] is None and khz:
            info[key], sources[key] = khz / 1000.0, f"torch.cuda.get_device_properties.{attr}"
            unavailable.pop(key, None)
    return unavailable


def device_info(device: int | None = None) -> dict[str, Any]:
    """What torch.cuda, the CUDA runtime and NVML say about `device`.

    Keys with no reading are None, and ``unavailable`` says why for each.
    ``sources`` says where each reading came from.
    """
    d = _require()
    import torch

    idx = torch.cuda.current_device() if device is None else _validate.count("device", device, 0)
    props = torch.cuda.get_device_properties(idx)
    info, sources = _properties(idx, props, d.runtime, torch)
    sources["index"] = "torch.cuda.current_device" if device is None else "argument"
    unavailable = _add_live_readings(info, sources, props)
    info["sources"] = sources
    info["unavailable"] = unavailable
    return info
