"""The settings a matrix cell can have, and how each one is applied and read back.

A setting is a small class (an abstract :class:`Setting`) with five duties:

* ``canonical(value)``: validate a value (from the CLI's text or from Python)
  and return its canonical JSON form, or raise :class:`SettingError`;
* ``check_available()``: runner side, before any worker: raise
  :class:`SettingUnavailable` if this build or machine cannot apply it at all;
* ``environment(value, env, cell)``: runner side, before the worker starts:
  edit the worker's environment (thread-pool sizes, allocator, extra vars);
* ``apply(value)``: worker side, after ``import torch``: change process
  state and return what was observed right after the change;
* ``readback(value)``: worker side, after the workload: the state the
  workload actually ran under (threads created during the run included);
* ``during(value)``: worker side, at the end of every timed iteration: a cheap
  check of what the process runs under now, in the setting's own values, so that
  a probe the workload's own code undoes (``torch.set_num_threads(2)`` in its
  ``setup()``) is seen and never judged. ``threads``, ``ftz``, ``pools``, ``clamp``, ``anomaly``,
  ``inference``, ``cudnn_benchmark``, ``matmul_precision`` and ``isa`` have one: user code changes
  them in-process (a pool resized by threadpoolctl, a thread count set past the usable CPUs, a file
  that assigns ``ATEN_CPU_CAPABILITY`` before ``import torch``, ...). ``alloc``, ``thp`` (torch reads
  its variable once) and ``only`` are fixed before the workload starts, ``pin`` places the team at its
  creation, ``sync`` is the worker's own clock, ``cuda_init`` happens before the workload, and
  ``env``/``busy``/``omp_wait`` read back after the run whatever the code left (their after-run readback).

Cells hold setting values and workload parameters side by side; a matrix key
that is not a setting name is a workload parameter.
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import _plugins, _validate, anomaly, contention, cuda_state, fpenv, inference, other_pools, thread_clamp
from ._setting import Setting, SettingError, SettingUnavailable, split_values
from .causes.thp import setting as _thp
from . import threads
from . import alloc as _alloc

__all__ = ["SettingError", "SettingUnavailable", "Setting", "SETTINGS", "ONLY_PHASE_ENV", "CAPABILITY_ENV",
           "cpu_capability", "PASSIVE_WAIT", "RUNTIME_WAIT_VARIABLES", "is_setting", "split_values",
           "parse_assignment", "canonical_value", "canonical_matrix", "check_available", "cell_environment",
           "format_value", "cell_label", "split_cell", "ordered"]



class FlushDenormals(Setting):
    """``ftz``: flush denormals (FTZ+DAZ) with benchctl.fpenv, census of every thread."""

    name = "ftz"
    help = "off | thread | openmp | process: FTZ/DAZ via benchctl.fpenv, per-thread census read back"
    order = 30
    needs_torch = True
    SCOPES = ("thread", "openmp", "process")

    def canonical(self, value: Any) -> str:
        if value is False:
            return "off"
        if value is True:
            return "process"
        return self._choice(value, ("off",) + self.SCOPES)

    def check_available(self) -> None:
        ok, reason = fpenv.supported()
        if not ok:
            raise SettingUnavailable(f"ftz cannot be applied here: {reason}")

    def apply(self, value: str) -> Any:
        if value == "off":
            return None  # a fresh process starts with FTZ/DAZ clear; the readback shows it
        return fpenv.set_flush_denormal(True, scope=value)

    # No per-iteration counter shows subnormal arithmetic (no PMU event here), so
    # the generic rules never name this mechanism; the denormal cause does, from
    # the values' census and the CPU's penalty profile.
    probe = "process"
    mechanism = "arithmetic on subnormal (denormal) numbers, which FTZ/DAZ removes"

    def facts(self, observed: dict) -> dict:
        return {"flushed": observed.get("flushed"), "threads": observed.get("threads")}

    def facts_phrase(self, facts: dict) -> str:
        return f"FTZ/DAZ read back on {facts['flushed']}/{facts['threads']} threads" if facts.get("threads") else ""

    def during(self, value: str) -> str:
        # The calling thread's MXCSR (the thread that runs the iterations): "off" once the code cleared
        # it (torch.set_flush_denormal(False)), "thread" when it set it in an ftz=off cell.
        flushed = fpenv.is_flushed(fpenv.thread_state())
        if flushed == (value != "off"):
            return value
        return "thread" if flushed else "off"

    def readback(self, value: str) -> dict:
        census = fpenv.census(scope="process")
        reached = [t for t in census if t.get("reached", True)]
        flushed = [t for t in reached if fpenv.is_flushed(t)]
        return {
            "census": census,
            "threads": len(census),
            "reached": len(reached),
            "flushed": len(flushed),
            "all_flushed": bool(reached) and len(flushed) == len(census),
            "none_flushed": not flushed,
        }


class ThreadCount(Setting):
    """``threads``: intra-op thread count for torch and every BLAS/OpenMP pool."""

    name = "threads"
    help = "N: intra-op threads (OMP_NUM_THREADS/MKL_NUM_THREADS at start, benchctl.threads after import)"
    order = 10
    needs_torch = True

    def canonical(self, value: Any) -> int:
        text_count = isinstance(value, str) and value.strip().isdecimal()  # isdigit() admits "²", int() does not
        try:
            return _validate.count("threads", int(value) if text_count else value, 1)
        except _validate.ArgumentError:
            raise SettingError(f"threads={value!r}: expected a positive integer") from None

    def environment(self, value: int, env: dict[str, str], cell: dict) -> dict[str, str]:
        # Sized at start as well: pools created before our call then agree.
        return {**env, "OMP_NUM_THREADS": str(value), "MKL_NUM_THREADS": str(value)}

    def apply(self, value: int) -> Any:
        return threads.set_num_threads(value)

    probe = 1
    evidence_counter = "context_switches_per_iter"
    mechanism = "more threads than the CPUs can run at once"

    def readback(self, value: int) -> Any:
        return threads.get_num_threads()

    def during(self, value: int) -> int:
        import torch  # imported by the worker before any setting that needs it

        return torch.get_num_threads()


class Pinning(Setting):
    """``pin``: place the OpenMP team from the worker's start, census read back after the run.

    The placement is given through :func:`benchctl.threads.launch_env`
    (``OMP_PLACES``/``OMP_PROC_BIND`` or ``KMP_AFFINITY``), so the OpenMP
    runtime binds each team thread as it creates it and the initial thread at
    start-up. Pinning again in-process would be wrong here: the bound initial
    thread sees a one-CPU mask, so every policy would collapse onto one CPU.
    """

    name = "pin"
    help = "off | compact | scatter | [cpu,cpu,...]: place torch's OpenMP team (benchctl.threads.launch_env)"
    order = 20
    needs_torch = True
    POLICIES = ("off", "compact", "scatter")
    # Count variables launch_env returns: a pin cell must not change the
    # thread count (that is the threads setting's job), or pin=off vs compact
    # would compare two things at once.
    _COUNT_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")

    def canonical(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            cpus = value
        elif isinstance(value, str) and value.strip().startswith("["):
            try:
                cpus = json.loads(value)
            except json.JSONDecodeError:
                raise SettingError(f"pin={value!r}: a CPU list is written [0,1,...]") from None
        else:
            return self._choice(value, self.POLICIES)
        if not cpus or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus):
            raise SettingError(f"pin={value!r}: a CPU list must hold non-negative integers")
        if len(set(cpus)) != len(cpus):
            raise SettingError(f"pin={value!r}: CPU ids repeat")
        return list(cpus)

    def environment(self, value: Any, env: dict[str, str], cell: dict) -> dict[str, str]:
        if value == "off":
            return env
        n = cell.get("threads")
        if n is None:
            # Places for every allowed (or listed) CPU; the count variables are
            # dropped below, leaving torch's own default thread count.
            count = len(value) if isinstance(value, list) else len(os.sched_getaffinity(0))
        else:
            count = n
        try:
            placement = threads.launch_env(value, count)
        except ValueError as e:
            raise SettingError(f"pin={format_value(value)}: {e}") from None
        if n is None:
            placement = {k: v for k, v in placement.items() if k not in self._COUNT_VARS}
        return {**env, **placement}

    probe = "compact"
    evidence_counter = "cpu_migrations_per_iter"
    mechanism = "threads migrating between CPUs"

    def facts(self, observed: dict) -> dict:
        return {"team_single_cpu": observed.get("team_single_cpu")}

    def facts_phrase(self, facts: dict) -> str:
        return "each team thread read back on one CPU" if facts.get("team_single_cpu") else ""

    def readback(self, value: Any) -> Any:
        census = threads.census()
        team = [t for t in census if t.get("omp_thread") is not None]
        return {
            "census": census,
            "team_single_cpu": bool(team) and all(len(t.get("allowed_cpus") or []) == 1 for t in team),
        }


class Allocator(Setting):
    """``alloc``: which malloc the worker runs with (environment only), observed from inside."""

    name = "alloc"
    help = "default | retain | jemalloc | tcmalloc: glibc tunables or LD_PRELOAD of a system allocator"
    order = 0

    def canonical(self, value: Any) -> str:
        return self._choice(value, tuple(_alloc.ALLOCATORS))

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        try:
            return _alloc.get(value).environment(env)
        except _alloc.AllocatorError as e:
            raise SettingUnavailable(str(e)) from None

    def owns(self, value: str) -> tuple[str, ...]:
        return _alloc.OWNED_VARIABLES

    probe = "retain"  # and each preloadable allocator installed here (the allocator cause's probes)
    evidence_counter = "minor_faults_per_iter"
    mechanism = "memory returned to the OS and faulted back in"

    def facts(self, observed: dict) -> dict:
        return {"large_block_mapping": observed.get("large_block_mapping"),
                "preload_mapped": observed.get("preload_mapped")}

    def facts_phrase(self, facts: dict) -> str:
        where = facts.get("large_block_mapping")
        return f"a 64 MiB malloc read back from {where}" if where else ""

    def readback(self, value: str) -> dict:
        return _alloc.observe()


class ExtraEnvironment(Setting):
    """``env``: extra environment variables for the worker, read back from inside it."""

    name = "env"
    help = "NAME=VALUE or [A=1,B=2] or none: extra environment variables"
    order = 0

    def canonical(self, value: Any) -> dict[str, str]:
        pairs = self._pairs(value, "NAME=VALUE (or [A=1,B=2] for several)")
        for name, val in pairs.items():
            if not name or name != name.strip() or any(c in name for c in "=\0[],") or not isinstance(val, str):
                raise SettingError(f"env: invalid variable {name!r}={val!r} (names without '=', '[', ']', ',' or "
                                   f"edge spaces (the syntax of env=[A=1,B=2]), string values)")
            if val != val.strip() or any(c in val for c in "\0[],"):
                # --set text could not carry it back: a value is written as it is inside [A=1,B=2].
                raise SettingError(f"env: the value of {name} ({val!r}) cannot be written in env=[A=1,B=2]: no "
                                   "',', '[', ']' or NUL, no leading or trailing space")
        return dict(sorted(pairs.items()))

    def environment(self, value: dict, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, **value}

    def owns(self, value: dict) -> tuple[str, ...]:
        return tuple(value)

    def readback(self, value: dict) -> dict:
        return {name: os.environ.get(name) for name in value}


class BusyPool(Setting):
    """``busy``: another BLAS pool kept busy beside the workload (:mod:`benchctl.contention`)."""

    name = "busy"
    help = "off | pool: keep numpy's BLAS pool busy on every allowed CPU beside the workload"
    order = 40  # after threads: the competing pool takes all CPUs whatever torch was given

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "pool"))

    def apply(self, value: str) -> Any:
        return contention.start_busy_pool() if value == "pool" else None

    probe = "pool"
    evidence_counter = "context_switches_per_iter"
    mechanism = "two thread pools competing for the same CPUs"

    def facts(self, observed: dict) -> dict:
        return {"running": observed.get("running"), "products": observed.get("products")}

    def facts_phrase(self, facts: dict) -> str:
        return "a busy BLAS pool read back running beside it" if facts.get("running") else ""

    def readback(self, value: str) -> dict:
        return contention.busy_pool_state()


class CapOtherPools(Setting):
    """``pools``: every thread pool other than torch's own held at one thread (:mod:`benchctl.other_pools`)."""

    name = "pools"
    help = ("off | capped: hold every pool but torch's own (numpy's OpenBLAS, BLIS, an MKL of its own) at one "
            "thread: OPENBLAS_NUM_THREADS/BLIS_NUM_THREADS=1 at start, threadpoolctl after import")
    order = 15  # after threads (which sizes every pool), before pin
    needs_torch = True  # torch's own pools must be loaded to be told apart

    def __init__(self) -> None:
        self._capped: list = []  # the controllers capped at apply: read cheaply after every iteration

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "capped"))

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, **other_pools.START_ENV} if value == "capped" else env

    def owns(self, value: str) -> tuple[str, ...]:
        return tuple(other_pools.START_ENV) if value == "capped" else ()

    def apply(self, value: str) -> Any:
        if value != "capped":
            return None
        found = other_pools.cap()
        self._capped = other_pools.controllers(torch_own=False)
        return [p.text for p in found]

    probe = "capped"
    evidence_counter = "context_switches_per_iter"
    mechanism = "another library's thread pool competing with torch's for the same CPUs"

    def facts(self, observed: dict) -> dict:
        return {"others": observed.get("others"), "capped": observed.get("capped")}

    def facts_phrase(self, facts: dict) -> str:
        others = facts.get("others")
        return f"read back at one thread each: {', '.join(others)}" if others and facts.get("capped") else ""

    def during(self, value: str) -> str | None:
        if value != "capped":
            return None
        sizes = [lib.get_num_threads() for lib in self._capped]
        return value if all(n == 1 for n in sizes) else "off"

    def readback(self, value: str) -> dict:
        others = other_pools.others()
        return {"others": [p.text for p in others], "capped": other_pools.capped(others)}


class ClampThreads(Setting):
    """``clamp``: torch's thread count held at the usable CPUs, the code's own calls clamped
    (:mod:`benchctl.thread_clamp`)."""

    name = "clamp"
    help = ("off | usable: hold torch's thread count at the CPUs it may use (its CPU mask, the cgroup quota), also "
            "when the workload's code calls torch.set_num_threads; what the code asked for is read back")
    order = 12  # after threads: it cuts whatever count was set
    needs_torch = True

    def __init__(self) -> None:
        self._clamp: thread_clamp.ThreadClamp | None = None

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "usable"))

    def apply(self, value: str) -> Any:
        if value != "usable":
            return None
        self._clamp = thread_clamp.ThreadClamp()
        return self._clamp.install()

    probe = "usable"
    evidence_counter = "context_switches_per_iter"
    mechanism = "more threads than the CPU mask or the cgroup quota lets it run at once"

    def facts(self, observed: dict) -> dict:
        return {k: observed.get(k) for k in ("usable", "ran", "asked")}

    def facts_phrase(self, facts: dict) -> str:
        if not facts.get("usable"):
            return ""
        asked = facts.get("asked") or []
        code = f"its code asked for {', '.join(map(str, asked))} thread(s) (torch.set_num_threads); " if asked else ""
        return f"{code}torch ran {facts.get('ran')} on the {facts['usable']} CPU(s) it may use"

    def during(self, value: str) -> str | None:
        if value != "usable" or self._clamp is None:
            return None
        if self._clamp.holds():
            return value
        state = self._clamp.state()
        return f"{state['ran']} threads on {state['usable']} CPUs"

    def readback(self, value: str) -> dict:
        return self._clamp.state() if value == "usable" and self._clamp is not None else {}


class AnomalyDetection(Setting):
    """``anomaly``: torch's autograd anomaly detection as the code sets it, or kept off against its calls
    (:mod:`benchctl.anomaly`)."""

    name = "anomaly"
    help = ("code | off: autograd anomaly detection as the workload's code sets it, or kept off against "
            "its set_detect_anomaly/detect_anomaly calls")
    order = 50  # after torch is imported and the thread settings applied; nothing else depends on it
    needs_torch = True

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "off"))

    def apply(self, value: str) -> Any:
        return anomaly.keep_off() if value == "off" else anomaly.state()

    # No counter shows it: the cause reads the mode in the probe worker's call (its evidence).
    probe = "off"
    mechanism = ("autograd anomaly detection, which records a Python traceback for every op autograd records "
                 "and checks every gradient for NaN: a debugging aid left on")

    def facts(self, observed: dict) -> dict:
        return {"enabled": observed.get("enabled"), "refused": observed.get("refused")}

    def facts_phrase(self, facts: dict) -> str:
        refused = facts.get("refused")
        if facts.get("enabled") is not False or refused is None:
            return ""
        if not refused:
            return "read back off after the run"
        return f"kept off against {refused} call{'s' * (refused != 1)} of the code that turned it on"

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "on" if the code switched it on by a way around the guard.
        if value == "code":
            return None
        return "on" if anomaly.is_on() else "off"

    def readback(self, value: str) -> dict:
        return anomaly.state()


class InferenceMode(Setting):
    """``inference``: each timed call of a user workload under ``torch.inference_mode()``
    (:mod:`benchctl.inference`)."""

    name = "inference"
    help = ("off | on: run each timed call of a callable or setup()/run(state) workload under "
            "torch.inference_mode()")
    order = 50
    needs_torch = True

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "on"))

    def apply(self, value: str) -> Any:
        return inference.enable() if value == "on" else inference.state()

    # No counter shows it: the cause reads what records a graph in the probe worker's call (its evidence).
    probe = "on"
    mechanism = ("autograd recording a graph for every op on tensors that require grad, for gradients the "
                 "call never uses")

    def facts(self, observed: dict) -> dict:
        return {"calls": observed.get("calls"), "held": observed.get("held")}

    def facts_phrase(self, facts: dict) -> str:
        calls = facts.get("calls")
        return f"{facts.get('held')} of {calls} timed calls read back under it" if calls else ""

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "off" once a call ran without the mode holding to its end
        # (the code turned it off, or nothing wrapped the call: a workload that times itself).
        if value == "off":
            return None
        return "on" if inference.held() else "off"

    def readback(self, value: str) -> dict:
        return inference.state()


class SyncClock(Setting):
    """``sync``: whether the worker's clock waits for the GPU before each read (:mod:`benchctl.cuda_state`)."""

    name = "sync"
    help = "off | cuda: torch.cuda.synchronize() before each clock read of a timed iteration (once CUDA is in use)"
    order = 60
    needs_torch = True

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("off", "cuda"))

    def apply(self, value: str) -> Any:
        return cuda_state.synchronizing(value == "cuda")

    # No counter shows it: the async-clock cause reads one call's host clock against its CUDA events.
    probe = "cuda"
    mechanism = ("asynchronous CUDA launches: a host clock read without waiting for the GPU measures the "
                 "launches, not the GPU's work")

    def facts(self, observed: dict) -> dict:
        return {"synced": observed.get("synced")}

    def facts_phrase(self, facts: dict) -> str:
        synced = facts.get("synced")
        return f"{synced} clock reads waited for the GPU" if synced else ""

    def readback(self, value: str) -> dict:
        return cuda_state.sync_state()


class CudnnBenchmark(Setting):
    """``cudnn_benchmark``: cuDNN's autotuner (``torch.backends.cudnn.benchmark``) as the code sets it, or set."""

    name = "cudnn_benchmark"
    help = "code | off | on: torch.backends.cudnn.benchmark as the workload's code sets it, or set after its import"
    order = 60
    needs_torch = True

    def canonical(self, value: Any) -> str:
        if isinstance(value, bool):
            return "on" if value else "off"
        return self._choice(value, ("code", "off", "on"))

    def apply(self, value: str) -> Any:
        return cuda_state.cudnn_benchmark() if value == "code" else cuda_state.set_cudnn_benchmark(value)

    probe = "off"
    mechanism = ("cuDNN autotuning (torch.backends.cudnn.benchmark): each convolution shape not seen before "
                 "times every algorithm before it runs")

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "on" once the code's own setup() or run() switched it back.
        return None if value == "code" else cuda_state.cudnn_benchmark()

    def readback(self, value: str) -> str:
        return cuda_state.cudnn_benchmark()


class MatmulPrecision(Setting):
    """``matmul_precision``: torch's float32 matmul precision as the code sets it, or set after its import."""

    name = "matmul_precision"
    help = ("code | highest | high | medium: torch.set_float32_matmul_precision after the workload's import "
            "(high: TF32 matmuls on GPUs that have it)")
    order = 60
    needs_torch = True

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code",) + cuda_state.PRECISIONS)

    def apply(self, value: str) -> Any:
        return cuda_state.matmul_precision() if value == "code" else cuda_state.set_matmul_precision(value)

    # The TF32 cause chooses its probe from the precision the code runs (the other one); this is the usual.
    probe = "high"
    mechanism = ("float32 matmuls at full float32 precision, where TF32 tensor cores run them several times "
                 "faster with a 10-bit mantissa")

    def during(self, value: str) -> str | None:
        return None if value == "code" else cuda_state.matmul_precision()

    def readback(self, value: str) -> str:
        return cuda_state.matmul_precision()


class CudaInit(Setting):
    """``cuda_init``: create the CUDA context and library handles before the workload runs, or leave it lazy."""

    name = "cuda_init"
    help = "lazy | eager: create the CUDA context and cuBLAS handle (one small matmul) before the workload runs"
    order = 60
    needs_torch = True

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("lazy", "eager"))

    def apply(self, value: str) -> Any:
        if value == "eager":
            return cuda_state.init_eagerly()
        return {"initialized": cuda_state.initialized(), "reason": None}

    probe = "eager"
    mechanism = ("the first CUDA call of a process creating the context and the library handles, and loading "
                 "its kernels, inside the first timed iteration")

    def facts(self, observed: dict) -> dict:
        return {"initialized": observed.get("initialized"), "eager": observed.get("eager")}

    def facts_phrase(self, facts: dict) -> str:
        return "the CUDA context created before the workload ran" if facts.get("eager") and facts.get(
            "initialized") else ""

    def readback(self, value: str) -> dict:
        return {"initialized": cuda_state.initialized(), "eager": value == "eager"}


#: The environment variable through which ``only`` tells the worker's recorder which phase runs.
ONLY_PHASE_ENV = "BENCHCTL_ONLY_PHASE"


class OnlyPhase(Setting):
    """``only``: run one phase of the workload alone (its ``rec.runs(phase)`` says which), or all of them.

    Comparing a phase run alone, in a fresh process, with the same phase
    after the others shows what the earlier phases leave behind (seed 1's gap).
    Only workloads that ask ``rec.runs(phase)`` before each phase can skip one.
    """

    name = "only"
    help = "all | PHASE: run only this phase of a workload that asks rec.runs(phase)"
    order = 0

    def canonical(self, value: Any) -> str:
        text = str(value).strip()
        if not text or any(c in text for c in "=,[]"):
            raise SettingError(f"only={value!r}: name one phase, or all")
        return text

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        out = {k: v for k, v in env.items() if k != ONLY_PHASE_ENV}
        if value != "all":
            out[ONLY_PHASE_ENV] = value
        return out

    def owns(self, value: str) -> tuple[str, ...]:
        return (ONLY_PHASE_ENV,)

    def readback(self, value: str) -> dict:
        return {"phase": os.environ.get(ONLY_PHASE_ENV, "all")}


class Combination(Setting):
    """``with``: several settings as one value of one axis, e.g. ``[alloc=retain,threads=1]`` or ``none``.

    A matrix axis of combinations measures each against the first (a star of
    single changes around a baseline) where crossing every axis would cost too
    many cells. The worker applies the settings inside as if each were an axis.
    """

    name = "with"
    help = "none | [NAME=V,NAME=V...]: several settings as one value"

    def canonical(self, value: Any) -> dict[str, Any]:
        out = {}
        for name, inner in self._pairs(value, "[NAME=VALUE,...] (or none)").items():
            if name == self.name or name not in SETTINGS:
                raise SettingError(f"with: {name!r} is not a setting that can be combined "
                                   f"({', '.join(n for n in SETTINGS if n != self.name)})")
            try:
                out[name] = SETTINGS[name].canonical(inner)
            except SettingError as e:
                raise SettingError(f"with: {e}") from None
        return dict(sorted(out.items()))


#: The wait variables that make idle OpenMP team threads sleep at once instead of spinning ...
PASSIVE_WAIT = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}
#: ... and those each runtime reads (benchctl.omp's kinds).
RUNTIME_WAIT_VARIABLES = {"libgomp": ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"),
                          "libiomp5": ("OMP_WAIT_POLICY", "KMP_BLOCKTIME"),
                          "libomp": ("OMP_WAIT_POLICY", "KMP_BLOCKTIME")}


class OmpWaitPolicy(Setting):
    """``omp_wait``: how idle OpenMP team threads wait, set at the worker's start (the runtimes read it once).

    ``passive`` sets the passive policy of every runtime (libgomp: ``OMP_WAIT_POLICY=PASSIVE``,
    ``GOMP_SPINCOUNT=0``; Intel's and LLVM's: ``KMP_BLOCKTIME=0``): a process may load two
    runtimes (torch's libgomp beside an MKL build's libiomp5), and each ignores the others'
    variables. The readback names the runtimes loaded and the variables the process saw."""

    name = "omp_wait"
    help = ("default | passive: idle OpenMP threads sleep at once (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0, "
            "KMP_BLOCKTIME=0 at start)")

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("default", "passive"))

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, **PASSIVE_WAIT} if value == "passive" else env

    def owns(self, value: str) -> tuple[str, ...]:
        return tuple(PASSIVE_WAIT) if value == "passive" else ()

    probe = "passive"
    # Its counter moves up, not down, when it takes effect (passive threads sleep after each region
    # and are woken for the next): the OpenMP wait cause reads it, the generic rules do not.
    mechanism = "idle OpenMP threads spinning on CPUs the workload's other threads or processes needed"

    def facts(self, observed: dict) -> dict:
        return {"runtimes": observed.get("runtimes"), "variables": observed.get("variables")}

    def facts_phrase(self, facts: dict) -> str:
        variables = ", ".join(f"{k}={v}" for k, v in (facts.get("variables") or {}).items())
        return f"{', '.join(facts.get('runtimes') or ['no runtime'])} started with {variables or 'no wait variable'}"

    def readback(self, value: str) -> dict:
        from . import omp  # the OpenMP runtimes mapped now, torch's among them

        return {"runtimes": sorted({rt["kind"] for rt in omp.runtimes()}),
                "variables": {name: os.environ[name] for name in PASSIVE_WAIT if name in os.environ}}


#: The variable torch reads once, at its first kernel dispatch, to choose its CPU kernels.
CAPABILITY_ENV = "ATEN_CPU_CAPABILITY"


def cpu_capability() -> str:
    """The kernels torch dispatches to in this process, lower-case ("avx512", "avx2", "default")."""
    import torch  # the setting reads torch's own choice; its caller runs torch code anyway

    return torch.backends.cpu.get_cpu_capability().lower()


class KernelCapability(Setting):
    """``isa``: which vector instructions torch's CPU kernels use (``ATEN_CPU_CAPABILITY`` at the worker's start).

    torch reads the variable at its first kernel dispatch and keeps its choice for the process,
    so the setting is environment only; the readback and the in-run check ask torch what it
    chose: a user file that assigns the variable before ``import torch`` replaces the probe, and
    the check after each timed iteration sees it."""

    name = "isa"
    help = (f"default | avx2 | avx512: torch's CPU kernels ({CAPABILITY_ENV} at start), read back from "
            "torch.backends.cpu.get_cpu_capability()")
    CAPABILITIES = ("default", "avx2", "avx512")

    def canonical(self, value: Any) -> str:
        return self._choice(value, self.CAPABILITIES)

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, CAPABILITY_ENV: value}

    def owns(self, value: str) -> tuple[str, ...]:
        return (CAPABILITY_ENV,)

    # No fixed probe: the ISA cause probes the best capability this CPU offers (benchctl.studies.causes.isa).
    mechanism = "torch's kernels dispatched to narrower vector instructions than this CPU has"

    def facts(self, observed: dict) -> dict:
        return {"capability": observed.get("capability")}

    def facts_phrase(self, facts: dict) -> str:
        return f"torch read back dispatching to {facts['capability']} kernels" if facts.get("capability") else ""

    def readback(self, value: str) -> dict:
        return {"capability": cpu_capability(), CAPABILITY_ENV: os.environ.get(CAPABILITY_ENV)}

    def during(self, value: str) -> str:
        return cpu_capability()


#: Every setting by name: those no cause owns (defined here), the built-in causes' (one line each), then those of
#: installed packages (``benchctl.causes`` entry points). The order is ``run --help``'s.
SETTINGS: dict[str, Setting] = {
    s.name: s for s in (FlushDenormals(), ThreadCount(), Pinning(), Allocator(), *_thp.SETTINGS, ExtraEnvironment(),
                        BusyPool(), CapOtherPools(), ClampThreads(), AnomalyDetection(), InferenceMode(), SyncClock(),
                        CudnnBenchmark(), MatmulPrecision(), CudaInit(), KernelCapability(), OmpWaitPolicy(),
                        OnlyPhase(), Combination(), *_plugins.gathered("setting", "SETTINGS"))
}
_WITH = Combination.name


def is_setting(name: str) -> bool:
    return name in SETTINGS


def parse_assignment(text: str) -> tuple[str, list[str]]:
    """``"k=v1,v2"`` -> ``("k", ["v1", "v2"])`` (brackets group: ``pin=[0,1],off``)."""
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SettingError(f"--set {text!r}: write NAME=VALUE[,VALUE...]")
    # An empty value is kept: it is a valid string parameter ("pause_file=,/tmp/p").
    return key, split_values(rest)


def _coerce_param(name: str, value: Any, default: Any) -> Any:
    """A workload parameter from the CLI's text, typed like its default."""
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # 1 and 1.0 must be the same cell (resume matches cells exactly)
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except ValueError:
        raise SettingError(
            f"parameter {name}={value!r}: expected {type(default).__name__} like its default {default!r}"
        ) from None
    if default is None or isinstance(default, (list, dict)):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def canonical_value(key: str, value: Any, params: dict[str, Any]) -> Any:
    """Canonical form of one matrix value: a setting's, or a workload parameter typed like its default."""
    if key in SETTINGS:
        return SETTINGS[key].canonical(value)
    if key not in params:
        raise SettingError(
            f"{key!r} is neither a setting ({', '.join(SETTINGS)}) nor a parameter of this workload "
            f"({', '.join(sorted(params)) or 'none'})"
        )
    return _coerce_param(key, value, params[key])


def canonical_matrix(matrix: dict[str, Any], params: dict[str, Any]) -> dict[str, list]:
    """Validate a matrix ``{key: [values]}``; values canonical, duplicates rejected."""
    out: dict[str, list] = {}
    for key, values in matrix.items():
        if not isinstance(values, (list, tuple)):
            values = [values]
        if not values:
            raise SettingError(f"matrix key {key!r} has no values")
        canon = [canonical_value(key, v, params) for v in values]
        seen = [json.dumps(c, sort_keys=True) for c in canon]
        if len(set(seen)) != len(seen):
            raise SettingError(f"matrix key {key!r} repeats a value: {canon}")
        out[key] = canon
    both = {name for combo in out.get(_WITH, []) for name in combo} & set(out)
    if both:
        raise SettingError(f"{', '.join(sorted(both))} both an axis and inside a with=[...] value: choose one")
    return out


def check_available(matrix: dict[str, list]) -> None:
    """Raise SettingError if a setting in ``matrix`` (or inside a ``with`` value) cannot be applied here."""
    names = {name for name in matrix if name in SETTINGS}
    names |= {inner for combo in matrix.get(_WITH, []) for inner in combo}
    for name in sorted(names):
        SETTINGS[name].check_available()


def cell_environment(cell: dict[str, Any], base: dict[str, str]) -> dict[str, str]:
    """The environment a worker for ``cell`` starts with; raises SettingError before anything runs.

    Each setting edits a copy of ``base`` on its own, so the outcome cannot
    depend on the order of the cell's keys. Two settings that want one
    variable different ways (``env`` setting ``GLIBC_TUNABLES`` while
    ``alloc`` decides it) are an error, not a silent override; two that agree
    (``threads`` and ``pin`` on the thread count) are fine.
    """
    wanted: dict[str, tuple[str | None, str]] = {}  # variable -> (value or None = unset, who)
    flat, _ = split_cell(cell)
    for name, value in flat.items():
        setting = SETTINGS[name]
        alone = setting.environment(value, dict(base), flat)
        written = {v for v in set(alone) | set(base) if alone.get(v) != base.get(v)} | set(setting.owns(value))
        who = f"{name}={format_value(value)}"
        for var in sorted(written):
            if var in wanted and wanted[var][0] != alone.get(var):
                raise SettingError(f"{who} and {wanted[var][1]} both set {var}: choose one of them for this cell")
            wanted[var] = (alone.get(var), who)
    env = dict(base)
    for var, (val, _) in wanted.items():
        if val is None:
            env.pop(var, None)
        else:
            env[var] = val
    return env


def format_value(value: Any) -> str:
    if isinstance(value, dict):
        return "[" + ",".join(f"{k}={format_value(v)}" for k, v in value.items()) + "]" if value else "none"
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


def cell_label(cell: dict[str, Any]) -> str:
    """``"order=eval_only ftz=process"``: the cell in words, keys in matrix order."""
    return " ".join(f"{k}={format_value(v)}" for k, v in cell.items()) or "(single cell)"


def split_cell(cell: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(settings, workload parameters) of a cell; the settings inside a ``with`` value count as settings."""
    settings = {k: v for k, v in cell.items() if k in SETTINGS and k != _WITH}
    settings.update(cell.get(_WITH) or {})
    params = {k: v for k, v in cell.items() if k not in SETTINGS}
    return settings, params


def ordered(settings: dict[str, Any]) -> list[tuple[str, Setting, Any]]:
    return [(n, SETTINGS[n], settings[n]) for n in sorted(settings, key=lambda n: SETTINGS[n].order)]
