"""The context every result carries: machine, kernel, libraries, settings.

:func:`collect` returns one JSON-serialisable dict. Each section is gathered by
its own function; a section that cannot be read holds ``{"error": "..."}``
instead of failing the collection, and a value the system does not expose
(no cpufreq in a VM, say) is None. :mod:`benchctl.doctor` judges the same
facts.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from typing import Any, Callable, Optional

from .. import clock, counters
from .._procfs import cpu_model, cpuinfo_fields, read_text
from ..topology import cpu_topology, parse_cpu_list

__all__ = ["SECTIONS", "collect", "cpu", "cpu_model", "topology", "clocksource", "frequency", "isolation",
           "kernel", "libc", "python", "packages", "threadpools", "environment", "git_revision"]

SYS_CPU = "/sys/devices/system/cpu"
# benchctl's own package directory (this module lives in its system/ subpackage).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# CPU flags that change what kernels run or how time is kept.
_FLAG_PREFIXES = ("avx512", "amx")
_FLAGS = ("avx", "avx2", "fma", "f16c", "constant_tsc", "nonstop_tsc", "tsc_known_freq",
          "rdtscp", "hypervisor", "sse4_2")

# Environment variables that change threading, allocation or loading.
_ENV_PREFIXES = ("OMP_", "KMP_", "MKL_", "GOMP_", "MALLOC_", "OPENBLAS_", "BENCHCTL_", "PYTORCH_",
                 "TORCH_", "CUDA_")
_ENV_NAMES = ("GLIBC_TUNABLES", "LD_PRELOAD", "LD_LIBRARY_PATH")


def _cpu_list(path: str) -> list[int]:
    """A sysfs CPU list file as ids ([] where the file is missing or empty)."""
    text = read_text(path)
    return parse_cpu_list(text) if text else []


def cpu() -> dict[str, Any]:
    """Model, vendor, family/model/stepping and the flags of interest (first CPU's entry)."""
    fields = cpuinfo_fields()
    flags = (fields.get("flags") or fields.get("Features") or "").split()
    return {
        "model_name": cpu_model(fields),
        "vendor": fields.get("vendor_id") or fields.get("CPU implementer"),
        "family": fields.get("cpu family") or fields.get("CPU architecture"),
        "model": fields.get("model") or fields.get("CPU part"),
        "stepping": fields.get("stepping") or fields.get("CPU revision"),
        "microcode": fields.get("microcode"),
        "machine": platform.machine(),
        "flags_of_interest": sorted(f for f in flags if f in _FLAGS or f.startswith(_FLAG_PREFIXES)),
    }


def topology(sysfs_root: str = "/sys") -> dict[str, Any]:
    """The machine's CPUs, cores, sockets and NUMA nodes, and those this process may use.

    Built on :func:`benchctl.topology.cpu_topology` (a core is its set of SMT
    siblings), once over every online CPU and once over the allowed ones.
    """
    ours = cpu_topology(sysfs_root)
    machine = cpu_topology(sysfs_root, allowed=ours["online_cpus"])
    smt_active = read_text(os.path.join(sysfs_root, "devices", "system", "cpu", "smt", "active"))
    return {
        "logical_cpus": len(machine["online_cpus"]),
        "cores": len(machine["cores"]),
        "sockets": len(machine["sockets"]),
        "threads_per_core": max((len(c["siblings"]) for c in machine["cores"]), default=1),
        "smt_active": None if smt_active is None else smt_active == "1",
        "numa_nodes": machine["numa_nodes"],
        "allowed_cpus": ours["allowed_cpus"],
        "allowed_cores": len(ours["cores"]),
        "source": machine["source"],
    }


def clocksource() -> dict[str, Any]:
    base = "/sys/devices/system/clocksource/clocksource0"
    available = read_text(f"{base}/available_clocksource")
    return {"current": read_text(f"{base}/current_clocksource"),
            "available": available.split() if available else None}


def frequency() -> dict[str, Any]:
    """Governor, driver and turbo/boost state where cpufreq exposes them (None otherwise)."""
    governors, drivers, cur_khz = {}, set(), {}
    for c in _cpu_list(f"{SYS_CPU}/online"):
        base = f"{SYS_CPU}/cpu{c}/cpufreq"
        gov = read_text(f"{base}/scaling_governor")
        if gov is not None:
            governors[str(c)] = gov
        drv = read_text(f"{base}/scaling_driver")
        if drv:
            drivers.add(drv)
        cur = read_text(f"{base}/scaling_cur_freq")
        if cur and cur.isdigit():
            cur_khz[str(c)] = int(cur)
    no_turbo = read_text(f"{SYS_CPU}/intel_pstate/no_turbo")
    boost = read_text(f"{SYS_CPU}/cpufreq/boost")
    if no_turbo is not None:
        turbo, turbo_source = no_turbo == "0", "intel_pstate/no_turbo"
    elif boost is not None:
        turbo, turbo_source = boost == "1", "cpufreq/boost"
    else:
        turbo, turbo_source = None, None
    return {
        "cpufreq_visible": bool(governors or drivers),
        "governors": governors or None,
        "drivers": sorted(drivers) or None,
        "current_khz": cur_khz or None,
        "turbo": turbo,
        "turbo_source": turbo_source,
    }


def isolation() -> dict[str, Any]:
    """isolcpus/nohz_full as the kernel applied them and as the command line asked."""
    cmdline = (read_text("/proc/cmdline") or "").split()
    asked = {k: v for k, _, v in (a.partition("=") for a in cmdline)
             if k in ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity")}
    return {
        "isolated": _cpu_list(f"{SYS_CPU}/isolated"),
        "nohz_full": _cpu_list(f"{SYS_CPU}/nohz_full"),
        "cmdline": asked,
    }


def kernel() -> dict[str, Any]:
    uname = platform.uname()
    return {"system": uname.system, "release": uname.release, "version": uname.version,
            "perf_event_paranoid": counters.perf_event_paranoid(),
            "transparent_hugepage": read_text("/sys/kernel/mm/transparent_hugepage/enabled")}


def libc() -> dict[str, Any]:
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        version = None
    name, ver = platform.libc_ver()
    return {"gnu_libc_version": version, "libc": name or None, "libc_version": ver or None}


def python() -> dict[str, Any]:
    return {"version": platform.python_version(), "implementation": platform.python_implementation(),
            "executable": sys.executable, "compiler": platform.python_compiler()}


def packages() -> dict[str, Any]:
    """Versions of benchctl, numpy, torch and torchvision; torch's threading build."""
    from importlib import metadata as importlib_metadata

    out: dict[str, Any] = {}
    for dist in ("benchctl", "numpy", "torch", "torchvision", "threadpoolctl"):
        try:
            out[dist] = importlib_metadata.version(dist)
        except importlib_metadata.PackageNotFoundError:
            out[dist] = None
    try:
        import torch
    except Exception as exc:  # a broken torch install is a fact worth recording
        out["torch_import_error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["torch_runtime_version"] = torch.__version__
    out["torch_parallel_info"] = torch.__config__.parallel_info()
    out["torch_num_threads"] = torch.get_num_threads()
    out["torch_num_interop_threads"] = torch.get_num_interop_threads()
    out["torch_cuda"] = torch.version.cuda
    out["torch_cuda_available"] = bool(torch.cuda.is_available())
    return out


def threadpools() -> list[dict[str, Any]]:
    """OpenMP/BLAS libraries loaded in this process (threadpoolctl)."""
    from threadpoolctl import threadpool_info
    return threadpool_info()


def environment() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES}


def clock_info() -> dict[str, Any]:
    return clock.info()


def counter_availability() -> dict[str, Any]:
    with counters.CounterGroup("process") as group:
        return group.describe()


def git_revision(package_dir: Optional[str] = None) -> Optional[dict[str, Any]]:
    """Revision of benchctl's own git checkout, when benchctl runs from one.

    ``package_dir`` (default: this package's directory) counts as a checkout
    only if it is ``pyext/benchctl`` under the repository's top level: an
    installed copy that merely sits inside some other project's checkout
    (a virtual environment in it, say) must not record that project's HEAD.
    None otherwise, or without git.
    """
    here = os.path.realpath(package_dir or _PACKAGE_DIR)

    def git(*args: str) -> Optional[str]:
        try:
            done = subprocess.run(["git", "-C", here, *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or os.path.realpath(os.path.join(top, "pyext", "benchctl")) != here:
        return None
    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None,
            "branch": git("rev-parse", "--abbrev-ref", "HEAD")}


SECTIONS: dict[str, Callable[[], Any]] = {
    "cpu": cpu,
    "topology": topology,
    "clocksource": clocksource,
    "frequency": frequency,
    "isolation": isolation,
    "kernel": kernel,
    "libc": libc,
    "python": python,
    "packages": packages,
    "threadpools": threadpools,
    "environment": environment,
    "clock": clock_info,
    "counters": counter_availability,
    "git": git_revision,
}


def collect() -> dict[str, Any]:
    """Every section of :data:`SECTIONS`, plus when, how loaded and how launched.

    Importing torch (for its versions and ``parallel_info``) happens here if
    the caller has not already done it.
    """
    out: dict[str, Any] = {
        "collected_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "command_line": list(sys.argv),
        "load_average": list(os.getloadavg()),
    }
    for name, section in SECTIONS.items():
        try:
            out[name] = section()
        except Exception as exc:  # one unreadable section must not lose the others
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
