"""Checks of the things that make timings on this machine wrong or noisy.

Each check is a small class with a ``name``, a ``title`` and a
``run(probe) -> CheckResult``; :data:`CHECKS` lists them in the order they are
reported. A finding's status is

* ``OK``: nothing to fix;
* ``WARN``: this will distort or blur timings; ``advice`` says how to fix it;
* ``INFO``: worth knowing, or not checkable here (``summary`` says why);
* ``ERROR``: the check itself could not run (a bug or a broken system).

:func:`run_checks` runs them all; ``python -m benchctl doctor [--json]``
prints the result and exits 0 unless a check ended in ERROR.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Optional, Sequence

from .. import clock, counters, fpenv, omp
from ..topology import cpu_topology
from . import metadata

__all__ = ["OK", "WARN", "INFO", "ERROR", "CheckResult", "Probe", "Check", "CHECKS", "run_checks", "as_data"]

OK, WARN, INFO, ERROR = "OK", "WARN", "INFO", "ERROR"

# Other work on the CPUs we may run on, as a share of their capacity, above
# which timings visibly suffer (a 10% busy neighbour already adds preemptions
# and cache misses to every multi-millisecond iteration).
BUSY_SHARE_WARN = 0.10
# A sibling hyperthread this busy shares the core's execution units with us.
SIBLING_BUSY_WARN = 0.20
CPU_SAMPLE_S = 0.25
_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass
class CheckResult:
    name: str
    title: str
    status: str
    summary: str
    advice: Optional[str] = None
    data: dict[str, Any] = field(default_factory=dict)


class Probe:
    """Facts several checks need, each gathered once and only when asked for.

    Tests replace a fact by assigning the attribute (``probe.cpu_busy = {...}``).
    """

    @cached_property
    def allowed_cpus(self) -> list[int]:
        return sorted(os.sched_getaffinity(0))

    @cached_property
    def topology(self) -> dict[str, Any]:
        """:func:`benchctl.topology.cpu_topology`: our CPUs, their cores and SMT siblings."""
        return cpu_topology()

    @cached_property
    def threadpools(self) -> list[dict[str, Any]]:
        return metadata.threadpools()

    @cached_property
    def openmp_runtimes(self) -> list[dict[str, str]]:
        """:func:`benchctl.omp.runtimes`: the OpenMP runtimes mapped into this process."""
        return omp.runtimes()

    @cached_property
    def torch_num_threads(self) -> Optional[int]:
        """torch's intra-op thread count, or None when torch is not imported (doctor does not import it)."""
        torch = sys.modules.get("torch")
        return None if torch is None else torch.get_num_threads()

    @cached_property
    def load_average(self) -> tuple[float, float, float]:
        return os.getloadavg()

    @cached_property
    def cpu_busy(self) -> dict[int, float]:
        """Busy share of each CPU over a short sleep of ours (so: other processes' work)."""
        def sample() -> dict[int, tuple[int, int]]:
            out = {}
            with open("/proc/stat") as f:
                for line in f:
                    if line.startswith("cpu") and line[3].isdigit():
                        name, *ticks = line.split()
                        t = [int(v) for v in ticks]
                        idle = t[3] + (t[4] if len(t) > 4 else 0)  # idle + iowait
                        out[int(name[3:])] = (sum(t[:8]), idle)  # guest time is already in user
            return out

        before = sample()
        time.sleep(CPU_SAMPLE_S)
        after = sample()
        busy = {}
        for c, (total, idle) in after.items():
            if c in before:
                d_total = total - before[c][0]
                d_idle = idle - before[c][1]
                busy[c] = 0.0 if d_total <= 0 else max(0.0, 1.0 - d_idle / d_total)
        return busy


class Check:
    name = ""
    title = ""

    def run(self, probe: Probe) -> CheckResult:
        raise NotImplementedError

    def finding(self, status: str, summary: str, advice: Optional[str] = None, **data: Any) -> CheckResult:
        return CheckResult(self.name, self.title, status, summary, advice, data)


class TscCheck(Check):
    name = "tsc"
    title = "invariant TSC and clocksource"

    def run(self, probe: Probe) -> CheckResult:
        info = clock.info()
        cs = metadata.clocksource()
        data = dict(tick_source=info["source"], invariant=info["invariant"], reason=info["reason"],
                    clocksource=cs["current"], available_clocksources=cs["available"])
        if not info["invariant"] and info["source"] == "clock_gettime" and "forced" not in info["reason"]:
            return self.finding(
                WARN, f"no usable cycle counter: {info['reason']}",
                "benchctl times with clock_gettime instead (slower to read, still correct); "
                "on a VM ask for an invariant TSC (e.g. KVM: -cpu host,+invtsc)", **data)
        if cs["current"] in ("hpet", "acpi_pm"):
            return self.finding(
                WARN, f"clocksource is {cs['current']}: every clock_gettime is a slow device read",
                "switch to tsc where offered: echo tsc > "
                "/sys/devices/system/clocksource/clocksource0/current_clocksource", **data)
        if cs["current"] not in (None, "tsc", "arch_sys_counter"):
            return self.finding(
                INFO, f"ticks from {info['source']} ({info['reason']}); clocksource is {cs['current']}",
                "other tools' timers go through this clocksource; tsc is the cheapest where offered",
                **data)
        return self.finding(OK, f"ticks from {info['source']} ({info['reason']}); "
                                f"clocksource {cs['current'] or 'unknown'}", **data)


class FrequencyCheck(Check):
    name = "frequency"
    title = "frequency governor and turbo"

    def run(self, probe: Probe) -> CheckResult:
        f = metadata.frequency()
        if not f["cpufreq_visible"] and f["turbo"] is None:
            return self.finding(
                INFO, "frequency scaling is not visible (no cpufreq in sysfs: a VM or a fixed clock); "
                      "governor and turbo cannot be checked from here", **f)
        problems, fixes = [], []
        governors = set((f["governors"] or {}).values())
        if governors and governors != {"performance"}:
            problems.append(f"governor {', '.join(sorted(governors))}")
            fixes.append("cpupower frequency-set -g performance")
        if f["turbo"]:
            problems.append(f"turbo/boost on ({f['turbo_source']})")
            fixes.append("echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"
                         if f["turbo_source"] == "intel_pstate/no_turbo"
                         else "echo 0 > /sys/devices/system/cpu/cpufreq/boost")
        if problems:
            return self.finding(WARN, "; ".join(problems) + ": the clock speed follows load and heat",
                                "for stable comparisons: " + " and ".join(fixes), **f)
        return self.finding(OK, f"governor {', '.join(sorted(governors)) or 'n/a'}, turbo "
                                f"{'off' if f['turbo'] is False else 'unknown'}", **f)


class SmtSiblingsCheck(Check):
    name = "smt_siblings"
    title = "SMT siblings of our CPUs busy"

    def run(self, probe: Probe) -> CheckResult:
        topo = probe.topology
        ours = set(topo["allowed_cpus"])
        smt_cores = [c for c in topo["cores"] if len(c["siblings"]) > 1]
        if not smt_cores:
            return self.finding(OK, "no SMT siblings share a core with our CPUs", cores=len(topo["cores"]))
        busy = probe.cpu_busy
        hot = {s: busy[s] for core in smt_cores for s in core["siblings"]
               if s not in ours and busy.get(s, 0.0) >= SIBLING_BUSY_WARN}
        data = dict(smt_cores=[{"cpus": c["cpus"], "siblings": c["siblings"]} for c in smt_cores],
                    busy={str(k): round(v, 3) for k, v in busy.items()})
        if hot:
            listing = ", ".join(f"cpu{c} {v:.0%}" for c, v in sorted(hot.items()))
            return self.finding(
                WARN, f"hyperthread siblings of our CPUs are busy ({listing}): they share execution units",
                "keep siblings idle (move other work away, e.g. taskset), run one thread per core, "
                "or disable SMT: echo off > /sys/devices/system/cpu/smt/control", **data)
        return self.finding(
            INFO, "SMT is on; the siblings of our CPUs were idle just now",
            "pin one benchmark thread per physical core (benchctl.threads.pin) so that two of our "
            "own threads never share a core", **data)


class LoadCheck(Check):
    name = "load"
    title = "other work on our CPUs"

    def run(self, probe: Probe) -> CheckResult:
        ours = probe.allowed_cpus
        busy = probe.cpu_busy
        busy_cpus = sum(busy.get(c, 0.0) for c in ours)
        load1 = probe.load_average[0]
        data = dict(allowed_cpus=ours, busy_cpus_now=round(busy_cpus, 3), load_average_1min=load1,
                    sample_s=CPU_SAMPLE_S)
        share = busy_cpus / len(ours)
        # The sample says what runs now; a load average above our CPU count says
        # work came and went over the last minute (it lags, so only then).
        if share >= BUSY_SHARE_WARN or load1 > len(ours):
            return self.finding(
                WARN, f"other processes kept {busy_cpus:.2f} of our {len(ours)} CPUs busy while we slept "
                      f"{CPU_SAMPLE_S * 1000:.0f} ms (1-min load average {load1:.2f})",
                "stop other work (top shows what), or restrict it and the benchmark to separate CPUs "
                "(taskset / cgroups); timings taken now are noisier and slower", **data)
        return self.finding(OK, f"our {len(ours)} CPUs were {share:.0%} busy with other work; "
                                f"1-min load {load1:.2f}", **data)


def _first_int(value: str) -> Optional[int]:
    head = value.split(",")[0].strip()  # OMP_NUM_THREADS may be a per-level list
    return int(head) if head.isdigit() else None


class ThreadCountCheck(Check):
    name = "thread_oversubscription"
    title = "thread-count variables and pools vs our CPUs"

    def run(self, probe: Probe) -> CheckResult:
        n = len(probe.allowed_cpus)
        env = {k: os.environ[k] for k in _THREAD_ENV if k in os.environ}
        too_many, bad = [], []
        for k, v in env.items():
            count = _first_int(v)
            if count is None:
                bad.append(f"{k}={v!r}")
            elif count > n:
                too_many.append(f"{k}={count}")
        pools = [dict(library=p.get("internal_api"), path=p.get("filepath"), num_threads=p.get("num_threads"))
                 for p in probe.threadpools]
        for p in pools:
            if (p["num_threads"] or 0) > n:
                too_many.append(f"{p['library']} pool of {p['num_threads']} ({os.path.basename(p['path'] or '')})")
        torch_threads = probe.torch_num_threads
        if torch_threads is not None and torch_threads > n:
            too_many.append(f"torch.get_num_threads()={torch_threads}")
        data = dict(allowed_cpus=n, environment=env, pools=pools, torch_num_threads=torch_threads)
        if too_many or bad:
            parts = []
            if too_many:
                parts.append(f"more threads than the {n} CPUs we may use: {', '.join(too_many)}")
            if bad:
                parts.append(f"unparsable: {', '.join(bad)}")
            return self.finding(
                WARN, "; ".join(parts),
                f"set OMP_NUM_THREADS (and MKL_/OPENBLAS_NUM_THREADS) to at most {n}, or "
                "torch.set_num_threads; oversubscribed pools spin and preempt each other", **data)
        if not env:
            return self.finding(
                INFO, f"no thread-count variable set: pools pick their own size (now "
                      f"{', '.join(str(p['num_threads']) for p in pools) or 'none loaded'} for {n} CPUs)",
                "set OMP_NUM_THREADS explicitly so every run (and every process) agrees", **data)
        return self.finding(OK, f"thread counts fit the {n} CPUs we may use", **data)


class FtzDazCheck(Check):
    name = "ftz_daz"
    title = "FTZ/DAZ state of every thread"

    def run(self, probe: Probe) -> CheckResult:
        ok, why = fpenv.supported()
        if not ok:
            return self.finding(INFO, f"FTZ/DAZ cannot be read here: {why}")
        census = fpenv.census()
        reached = [t for t in census if t.get("reached")]
        missed = [t for t in census if not t.get("reached")]
        states = {(t["ftz"], t["daz"]) for t in reached}
        data = dict(threads=len(census), unreached=[t.get("tid") for t in missed],
                    census=[{k: t.get(k) for k in ("tid", "name", "ftz", "daz", "reached")} for t in census])
        if len(states) > 1:
            flushing = sum(1 for t in reached if fpenv.is_flushed(t))
            return self.finding(
                WARN, f"threads disagree: {flushing} of {len(reached)} flush denormals, the others do not",
                "torch.set_flush_denormal reaches only the calling thread; use "
                "benchctl.fpenv.set_flush_denormal(on, scope='process') so every thread agrees", **data)
        if missed:
            return self.finding(
                INFO, f"{len(missed)} of {len(census)} threads did not answer the census",
                "they may be blocked in a system call; their FP state is unknown", **data)
        mode = _fp_mode(*states.pop()) if states else "none read"
        return self.finding(OK, f"all {len(reached)} threads agree: {mode}", **data)


def _fp_mode(ftz: bool, daz: bool | None) -> str:
    if daz is None:
        return "FTZ on (this CPU has no separate DAZ)" if ftz else "IEEE default (FTZ off)"
    if ftz and daz:
        return "FTZ and DAZ on"
    if ftz or daz:
        return "FTZ on, DAZ off" if ftz else "DAZ on, FTZ off"
    return "IEEE default (FTZ/DAZ off)"


class PerfEventsCheck(Check):
    name = "perf_events"
    title = "perf_event_paranoid and PMU counters"

    def run(self, probe: Probe) -> CheckResult:
        with counters.CounterGroup("process") as group:
            d = group.describe()
        paranoid = counters.perf_event_paranoid()
        software_missing = {k: v for k, v in d["unavailable"].items() if k not in counters.HARDWARE_EVENTS}
        hardware_missing = {k: v for k, v in d["unavailable"].items() if k in counters.HARDWARE_EVENTS}
        data = dict(d, perf_event_paranoid=paranoid)
        if software_missing:
            return self.finding(
                WARN, "software counters missing from perf: " +
                      "; ".join(f"{k}: {v}" for k, v in software_missing.items()),
                "run as root / with CAP_PERFMON, or sysctl kernel.perf_event_paranoid=1; until then "
                "faults and context switches come from getrusage (whole process)", **data)
        if hardware_missing:
            reasons = sorted(set(hardware_missing.values()))
            return self.finding(
                INFO, f"software counters work (paranoid={paranoid}); hardware counters unavailable: "
                      f"{'; '.join(reasons)}",
                "cycles/instructions need a PMU: bare metal, or a VM with PMU passthrough "
                "(e.g. KVM -cpu host,pmu=on)", **data)
        return self.finding(OK, f"software and hardware counters available (paranoid={paranoid})", **data)


class OpenMpRuntimesCheck(Check):
    name = "openmp_runtimes"
    title = "OpenMP runtimes loaded"

    def run(self, probe: Probe) -> CheckResult:
        runtimes = probe.openmp_runtimes
        paths = sorted({os.path.realpath(r["path"]) for r in runtimes})
        data = dict(runtimes=[dict(kind=r["kind"], path=r["path"]) for r in runtimes])
        if len(paths) > 1:
            return self.finding(
                WARN, f"{len(paths)} OpenMP runtimes loaded: {', '.join(paths)}",
                "each keeps its own thread pool (oversubscription), and FTZ/pinning applied to "
                "torch's team does not reach the other; make both libraries use one runtime "
                "(same build channel, or MKL_THREADING_LAYER=GNU for MKL with torch's libgomp)", **data)
        if not paths:
            return self.finding(INFO, "no OpenMP runtime loaded in this process", **data)
        return self.finding(OK, f"one OpenMP runtime: {paths[0]}", **data)


CHECKS: tuple[Check, ...] = (
    TscCheck(),
    FrequencyCheck(),
    SmtSiblingsCheck(),
    LoadCheck(),
    ThreadCountCheck(),
    FtzDazCheck(),
    PerfEventsCheck(),
    OpenMpRuntimesCheck(),
)


def run_checks(checks: Optional[Sequence[Check]] = None, probe: Optional[Probe] = None) -> list[CheckResult]:
    """Run ``checks`` (default :data:`CHECKS`) sharing one :class:`Probe`.

    A check that raises becomes an ERROR finding; the others still run.
    """
    checks = CHECKS if checks is None else checks
    probe = probe or Probe()
    findings = []
    for check in checks:
        try:
            findings.append(check.run(probe))
        except Exception as exc:
            findings.append(CheckResult(check.name, check.title, ERROR,
                                    f"the check could not run: {type(exc).__name__}: {exc}"))
    return findings


def as_data(findings: Sequence[CheckResult]) -> dict[str, Any]:
    """CheckResults as JSON-serialisable data: ``{"checks": [...], "counts": {status: n}}``."""
    counts = {s: sum(f.status == s for f in findings) for s in (OK, WARN, INFO, ERROR)}
    return {"checks": [asdict(f) for f in findings], "counts": counts}
