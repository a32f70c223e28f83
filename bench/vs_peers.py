#!/usr/bin/env python3
"""benchctl against the tools users pick instead: the same A/Bs timed with torch.utils.benchmark, pyperf and benchctl.

    python bench/vs_peers.py [--seconds 20] [--repeats 5] [--only ftz|threads|inference]
                             [--tools torch,pyperf,benchctl] [--json FILE [--force]] [--background]

The A/Bs (workloads and arms: bench/vs_peers_workloads.py), each ratio B/A:
  ftz        FTZ/DAZ on a float32 multiply of subnormal inputs; benchctl: --set ftz=off,process; the others:
             torch.set_flush_denormal(True) in their process. That covers the calling thread only, so every tool
             runs this A/B on one thread (benchctl: --set threads=1; the others: torch.set_num_threads(1)).
  threads    one thread against two on a 384x384 matmul; benchctl: --set threads=1,2; the others:
             torch.set_num_threads (torch.utils.benchmark: Timer(num_threads=...)).
  inference  inference mode on a 4-layer MLP, one thread; benchctl: --set inference=off,on; the others wrap
             each call in torch.inference_mode().

Each tool gets --seconds of wall time per A/B and repetition (A and B together, its start included), and each
repetition of each tool starts from a fresh interpreter (tools interleaved, their order rotated every
repetition):
  torch     torch.utils.benchmark.Timer(...).blocked_autorange(min_run_time=...) for A, then B, in one process,
            as users do; each arm about 45% of the time left after the import. It reports a median and an
            IQR per arm, no interval of a ratio; the interval here treats each arm's blocks as the units: the
            ratio of the geometric means of B's and A's per-call block times, with a Welch t interval on the
            difference of their mean logs (the blocks of one process taken as independent draws).
  pyperf    a pyperf script (Runner.bench_time_func) with A and B as two benchmarks, run in turn, each in
            --processes P worker processes (plus the one that calibrates its loops) of pyperf's own
            --warmups 1 --values 3 --min-time 0.1, P sized so that both fit the time; one value per process
            (the mean of its values): the ratio of the geometric means over processes, with a Welch t interval
            on the logs. pyperf itself reports mean +- stdev per benchmark.
  benchctl  python -m benchctl run FILE:TARGET --set ... --repeat auto --first-rounds N --budget SECONDS, each
            process timing its share of 90% of SECONDS over the workers of the first N rounds, less a worker's
            cost beyond its timing, measured per A/B before the repetitions from its first round (the median of
            a few runs), as explain sizes its workers from its probe worker (--arg seconds=...); the interval is
            benchctl's own comparison of B's cell against A's. An A/B that switches in a running process is timed
            paired: B alternating with A in blocks of iterations in the same processes, each of them also timing
            the paired A/A control as a third arm, and no process of the baseline's own (5 workers in 5 rounds, as
            explain runs a paired probe its budget sizes); its interval is over the ratio inside each process,
            processes as the units (--unpaired would compare per-process medians instead). Otherwise A, B and the
            A/A control's second arm run 3 fresh processes each. Each comparison's method is kept in --json.

Printed per A/B and tool: each repetition's ratio B/A, its 95% interval and width (hi - lo), its wall time,
whether it holds the median of all repetitions' ratios of that A/B (every tool's); then whether the tool's
repetitions contradict each other (two of its intervals that do not overlap), how many of its intervals hold
that median, and the narrowest honest interval per second: among its intervals that hold the median, the
smallest width x sqrt(wall seconds) (the width at one second of wall time, widths shrinking as 1/sqrt(time)).
--json FILE keeps every figure, each tool's raw per-block or per-process values and its own summaries.
Progress goes to stderr. Without pyperf installed its rows say "pyperf not installed"
(pip install 'benchctl[pyperf]').
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from benchctl._cli import exit_status, preflight
from benchctl._results.tdist import t_quantile

BENCH = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(BENCH, "vs_peers_workloads.py")
BACKGROUND = os.path.join(BENCH, "background_load.py")

SCHEMA = "benchctl.vs_peers"
CONFIDENCE = 0.95
AB_NAMES = ("ftz", "threads", "inference")
TOOLS = ("torch", "pyperf", "benchctl")
TOOL_TITLES = {"torch": "torch.utils.benchmark", "pyperf": "pyperf", "benchctl": "benchctl"}
NOT_INSTALLED = "pyperf not installed"

#: The share of the time left after its import that torch.utils.benchmark gives each arm.
TIMER_SHARE = 0.45
#: pyperf's own defaults, written out (warm-ups given, so that only the loops are calibrated).
PYPERF_VALUES, PYPERF_WARMUPS, PYPERF_MIN_TIME = 3, 1, 0.1

METHODS = {
    "torch": ("Timer(...).blocked_autorange(min_run_time) for A, then B, in one fresh process; ratio of the "
              "geometric means of B's and A's per-call block times, Welch t interval on the difference of their "
              "mean logs, blocks as the units (taken as independent); the tool's own median and IQR per arm "
              "are kept"),
    "pyperf": ("Runner.bench_time_func, A then B as two benchmarks, each in its own worker processes "
               f"(--values {PYPERF_VALUES} --warmups {PYPERF_WARMUPS} --min-time {PYPERF_MIN_TIME}); one value "
               "per process (the mean of its values); ratio of the geometric means over processes, Welch t "
               "interval on the logs; the tool's own mean and stdev per arm are kept"),
    "benchctl": ("benchctl run --repeat auto --first-rounds N --budget SECONDS (N: 5 where B is timed paired, 3 "
                 "otherwise); its own comparison of B's cell against A's "
                 "(B timed paired with A inside each process: the ratio inside each process, processes as the "
                 "units; the method of each is kept)"),
}


# ---------------------------------------------------------------------------------------------------------------
# Statistics (pure)

def log_ratio_interval(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    """B over A from per-unit values (blocks of one process, or processes): the ratio of their geometric means,
    with a Welch t interval on the difference of their mean logs. ``{"ratio", "ci95": (lo, hi) | None, "df"}``;
    no interval with fewer than two units on a side."""
    if not a or not b:
        raise ValueError("log_ratio_interval: each arm needs at least one value")
    if any(not (v > 0 and math.isfinite(v)) for v in (*a, *b)):
        raise ValueError("log_ratio_interval: values must be positive and finite")
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    d = statistics.fmean(lb) - statistics.fmean(la)
    if len(la) < 2 or len(lb) < 2:
        return {"ratio": math.exp(d), "ci95": None, "df": None}
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0.0:
        return {"ratio": math.exp(d), "ci95": (math.exp(d), math.exp(d)), "df": float(len(la) + len(lb) - 2)}
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    half = t_quantile(0.5 + confidence / 2, df) * se
    return {"ratio": math.exp(d), "ci95": (math.exp(d - half), math.exp(d + half)), "df": df}


def holds(interval: Sequence[float] | None, value: float | None) -> bool | None:
    """Whether ``interval`` holds ``value``; None when either is missing."""
    if interval is None or value is None:
        return None
    return interval[0] <= value <= interval[1]


def contradicting_pairs(intervals: Sequence[Sequence[float] | None]) -> list[tuple[int, int]]:
    """Index pairs (i < j) of intervals that do not overlap: two repetitions that contradict each other.
    Missing intervals contradict nothing."""
    pairs = []
    for i, first in enumerate(intervals):
        for j in range(i + 1, len(intervals)):
            second = intervals[j]
            if first is not None and second is not None and (first[1] < second[0] or second[1] < first[0]):
                pairs.append((i, j))
    return pairs


def width_per_second(interval: Sequence[float], wall_s: float) -> float:
    """An interval's width (hi - lo) scaled to one second of wall time: width x sqrt(seconds)."""
    return (interval[1] - interval[0]) * math.sqrt(wall_s)


def analyse(rows: list[dict], tools: Iterable[str]) -> dict:
    """One A/B's rows (every tool's repetitions, each ``{"tool", "repetition", "ratio", "ci95", "wall_s",
    "error", ...}``) judged: the median of every measured ratio, each row's width and whether it holds that
    median, and per tool its contradicting pairs of repetitions, how many of its intervals hold the median and
    its narrowest honest interval per second. Returns ``{"median_ratio", "rows", "tools"}``."""
    ratios = [r["ratio"] for r in rows if r.get("ratio") is not None]
    median = statistics.median(ratios) if ratios else None
    judged = []
    for row in rows:
        ci = row.get("ci95")
        row = {**row, "ci95": None if ci is None else [ci[0], ci[1]]}
        row["width"] = None if ci is None else ci[1] - ci[0]
        row["holds_median"] = holds(ci, median)
        row["width_sqrt_s"] = None if ci is None or not row.get("wall_s") else width_per_second(ci, row["wall_s"])
        judged.append(row)
    summaries = {}
    for tool in tools:
        mine = [r for r in judged if r["tool"] == tool]
        with_ci = [r for r in mine if r["ci95"] is not None]
        pairs = [(with_ci[i]["repetition"], with_ci[j]["repetition"])
                 for i, j in contradicting_pairs([r["ci95"] for r in with_ci])]
        honest = [r for r in with_ci if r["holds_median"]]
        best = min(honest, key=lambda r: r["width_sqrt_s"]) if honest else None
        errors = sorted({r["error"] for r in mine if r.get("error")})
        summaries[tool] = {
            "repetitions": len(mine),
            "measured": sum(r.get("ratio") is not None for r in mine),
            "with_interval": len(with_ci),
            "contradicting_pairs": [list(p) for p in pairs],
            "pairs_compared": len(with_ci) * (len(with_ci) - 1) // 2,
            "hold_median": len(honest),
            "narrowest_honest": None if best is None else {
                "repetition": best["repetition"], "width": best["width"], "wall_s": best["wall_s"],
                "width_sqrt_s": best["width_sqrt_s"]},
            "errors": errors,
        }
    return {"median_ratio": median, "rows": judged, "tools": summaries}


# ---------------------------------------------------------------------------------------------------------------
# The table (pure)

def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _interval(ci: Sequence[float] | None) -> str:
    return "none" if ci is None else f"[{ci[0]:.4g}, {ci[1]:.4g}]"


def _yes_no(flag: bool | None) -> str:
    return "no interval" if flag is None else ("yes" if flag else "NO")


def format_table(results: dict, what: dict[str, str] | None = None) -> str:
    """The plain-text report of :func:`analyse`'s results, keyed by A/B name."""
    out = []
    for name, res in results.items():
        rows, median = res["rows"], res["median_ratio"]
        header = f"{name}: {what[name]}" if what and name in what else name
        out.append(header)
        out.append(f"median of all {sum(r.get('ratio') is not None for r in rows)} ratios B/A (every tool): "
                   f"{_num(median)}")
        head = ("tool", "rep", "B/A", "95% interval", "width", "wall s", "holds median")
        table, errors = [head], {}
        for row in rows:
            title = TOOL_TITLES.get(row["tool"], row["tool"])
            if row.get("ratio") is None:
                errors[len(table)] = (title, str(row["repetition"]), row.get("error") or "no ratio")
                table.append(None)
                continue
            table.append((title, str(row["repetition"]), _num(row["ratio"]), _interval(row["ci95"]),
                          _num(row["width"]), f"{row['wall_s']:.1f}" if row.get("wall_s") else "-",
                          _yes_no(row["holds_median"])))
        cols = [r for r in table if r is not None]
        widths = [max(len(r[i]) for r in cols) for i in range(len(head))]
        for k, r in enumerate(table):
            if r is None:  # a failed row: its text runs on
                title, rep, text = errors[k]
                out.append(f"  {title:<{widths[0]}}  {rep:>{widths[1]}}  {text}")
                continue
            out.append("  " + "  ".join(c.ljust(w) if i in (0, 3) else c.rjust(w)
                                        for i, (c, w) in enumerate(zip(r, widths))).rstrip())
            if k == 0:
                out.append("  " + "  ".join("-" * w for w in widths))
        for tool, s in res["tools"].items():
            title = TOOL_TITLES.get(tool, tool)
            if not s["measured"]:
                out.append(f"  {title}: {'; '.join(s['errors']) or 'nothing measured'}")
                continue
            n_pairs = len(s["contradicting_pairs"])
            which = ", ".join(f"{i}/{j}" for i, j in s["contradicting_pairs"])
            contradict = ("fewer than two intervals: no pair to compare" if s["with_interval"] < 2 else
                          f"{n_pairs} of {s['pairs_compared']} pairs of repetitions contradict"
                          + (f" ({which})" if n_pairs else ""))
            best = s["narrowest_honest"]
            narrow = ("narrowest honest interval: none" if best is None else
                      f"narrowest honest interval: width {_num(best['width'])} in {best['wall_s']:.1f} s = "
                      f"{_num(best['width_sqrt_s'])} x sqrt(s) (rep {best['repetition']})")
            out.append(f"  {title}: {contradict}; {s['hold_median']} of {s['with_interval']} intervals hold the "
                       f"median; {narrow}" + (f"; failed: {'; '.join(s['errors'])}" if s["errors"] else ""))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Child processes: each in its own session, stopped with its whole group on error, timeout or Ctrl-C

class ToolError(Exception):
    """One tool's repetition failed: the message is the row's text."""


def _stop_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """End the process group ``proc`` leads (it was started in a session of its own): SIGINT, the clean stop
    (benchctl run saves its file and kills its worker, whose session is its own), then SIGKILL for the group."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=grace_s)  # its pipes read, so that nothing it writes as it stops blocks it
    except (ProcessLookupError, subprocess.TimeoutExpired, ValueError, OSError):
        pass
    try:  # what is left of the group, the leader included if it did not stop
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.communicate(timeout=grace_s)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def run_child(cmd: list[str], timeout_s: float) -> tuple[str, float]:
    """Run ``cmd``; return (its stdout, wall seconds). A nonzero exit or a timeout raises :class:`ToolError`
    with the last line of its stderr; Ctrl-C ends it first."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.path.dirname(BENCH),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        raise ToolError(f"timed out after {timeout_s:.0f} s") from None
    except BaseException:
        _stop_group(proc)
        raise
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise ToolError(f"exit status {proc.returncode}: {_last_line(err) or _last_line(out)}")
    return out, wall


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _child_timeout(seconds: float) -> float:
    return 4 * seconds + 180


# ---------------------------------------------------------------------------------------------------------------
# torch.utils.benchmark

_TIMER_CODE = ("import sys; sys.path.insert(0, {bench!r}); import vs_peers; "
               "vs_peers.timer_worker(sys.argv[1], float(sys.argv[2]), float(sys.argv[3]))")


def timer_worker(name: str, seconds: float, launched: float) -> None:
    """In a fresh interpreter: arm A, then arm B of A/B ``name`` with ``Timer.blocked_autorange``, each given
    :data:`TIMER_SHARE` of the time left of ``seconds`` since ``launched`` (a ``time.time()``); prints one JSON
    line of each arm's per-call block times and the tool's own median and IQR."""
    from torch.utils import benchmark

    import vs_peers_workloads as w

    out = {}
    min_run_time = max(0.05, TIMER_SHARE * (seconds - (time.time() - launched)))  # the same for both arms
    for which in ("A", "B"):
        call = w.prepare(name, which)
        timer = benchmark.Timer("call()", globals={"call": call}, num_threads=w.ABS[name].arm(which).threads,
                                label=name, sub_label=which)
        m = timer.blocked_autorange(min_run_time=min_run_time)
        out[which] = {"times_s": list(m.times), "number_per_run": m.number_per_run, "median_s": m.median,
                      "iqr_s": m.iqr, "mean_s": m.mean, "min_run_time_s": min_run_time}
        w.reset()
    print(json.dumps(out))


def run_timer(name: str, seconds: float) -> dict:
    code = _TIMER_CODE.format(bench=BENCH)
    out, wall = run_child([sys.executable, "-c", code, name, repr(seconds), repr(time.time())],
                          _child_timeout(seconds))
    arms = _json_line(out)
    est = log_ratio_interval(arms["A"]["times_s"], arms["B"]["times_s"])
    detail = {which: {"blocks": len(arm["times_s"]), "number_per_run": arm["number_per_run"],
                      "median_s": arm["median_s"], "iqr_s": arm["iqr_s"], "min_run_time_s": arm["min_run_time_s"],
                      "times_s": arm["times_s"]} for which, arm in arms.items()}
    detail["median_ratio"] = arms["B"]["median_s"] / arms["A"]["median_s"]
    return {"ratio": est["ratio"], "ci95": est["ci95"], "df": est["df"], "wall_s": wall, "detail": detail}


def _json_line(out: str) -> dict:
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ToolError(f"no result printed: {_last_line(out)}")


# ---------------------------------------------------------------------------------------------------------------
# pyperf

_PYPERF_SCRIPT = '''\
"""pyperf's side of bench/vs_peers.py, A/B {name}: arm A, then arm B, each its own benchmark."""
import sys
import time

import pyperf

sys.path.insert(0, {bench!r})
_calls = {{}}


def timed(loops, which):
    import vs_peers_workloads as w  # here, not above: only the workers need torch

    if which not in _calls:
        _calls[which] = w.prepare({name!r}, which)
    call = _calls[which]
    w.apply({name!r}, which)
    started = time.perf_counter()
    for _ in range(loops):
        call()
    return time.perf_counter() - started


runner = pyperf.Runner()
for which in ("A", "B"):
    runner.bench_time_func({name!r} + "-" + which, timed, which)
'''


def pyperf_installed() -> bool:
    return importlib.util.find_spec("pyperf") is not None


def pyperf_processes(seconds: float, startup_s: float) -> int:
    """Worker processes per pyperf benchmark so that A and B, each with one more that calibrates its loops, fit
    in ``seconds``: a worker costs an interpreter start and its warm-ups and values (each value at least
    ``--min-time``, up to twice that with loops in powers of two). Never under 2: one process gives no
    interval."""
    per_worker = startup_s + (PYPERF_WARMUPS + PYPERF_VALUES) * PYPERF_MIN_TIME * 1.5
    return max(2, math.floor(seconds / 2 / per_worker) - 1)


def run_pyperf(name: str, seconds: float, startup_s: float, workdir: str, tag: str) -> dict:
    script = os.path.join(workdir, f"pyperf_{name}.py")
    if not os.path.exists(script):
        with open(script, "w", encoding="utf-8") as f:
            f.write(_PYPERF_SCRIPT.format(name=name, bench=BENCH))
    output = os.path.join(workdir, f"pyperf_{name}_{tag}.json")
    processes = pyperf_processes(seconds, startup_s)
    _, wall = run_child([sys.executable, script, "--processes", str(processes), "--values", str(PYPERF_VALUES),
                         "--warmups", str(PYPERF_WARMUPS), "--min-time", str(PYPERF_MIN_TIME), "--quiet",
                         "--output", output], _child_timeout(seconds))
    import pyperf

    suite = pyperf.BenchmarkSuite.load(output)
    per_process, detail = {}, {"processes": processes}
    for which in ("A", "B"):
        bench = suite.get_benchmark(f"{name}-{which}")
        values = [list(run.values) for run in bench.get_runs() if run.values]
        per_process[which] = [statistics.fmean(v) for v in values]
        detail[which] = {"per_process_s": per_process[which], "values_s": values, "loops": bench.get_loops(),
                         "mean_s": bench.mean(), "stdev_s": bench.stdev() if bench.get_nvalue() > 1 else None}
    est = log_ratio_interval(per_process["A"], per_process["B"])
    return {"ratio": est["ratio"], "ci95": est["ci95"], "df": est["df"], "wall_s": wall, "detail": detail}


# ---------------------------------------------------------------------------------------------------------------
# benchctl

def _ab(name: str):
    """A/B ``name`` of bench/vs_peers_workloads.py (its workload class and benchctl's matrix)."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    import vs_peers_workloads

    return vs_peers_workloads.ABS[name]


def _benchctl_plan(name: str):
    """benchctl's matrix plan of A/B ``name``, paired where it can be."""
    from benchctl._run import runner

    ab = _ab(name)
    return runner.plan_matrix(f"{WORKLOADS}:{ab.target}", {}, ab.matrix, paired=True)


def benchctl_first_rounds(name: str, plan=None) -> int:
    """The rounds benchctl runs for A/B ``name`` (its ``plan``, where already made) before it first judges, as
    explain chooses them where its budget sizes the workers (as here: :meth:`BenchctlCosts.seconds_per_process`):
    5 where B is timed paired with A, 3 otherwise (:func:`benchctl._run.rounds.first_rounds`)."""
    from benchctl._run import rounds

    plan = _benchctl_plan(name) if plan is None else plan
    return rounds.first_rounds(plan.every_cell_paired, sized_to_budget=True)


def benchctl_planned(name: str) -> tuple[int, float]:
    """(the workers benchctl's first rounds run for A/B ``name``, their timed work in workers' worth), as
    ``benchctl explain`` plans them: A and B in fresh processes and the A/A control's second arm, 3 each; where
    B is timed paired with A, 5 paired processes (:func:`benchctl_first_rounds`), each also timing the paired A/A
    control (half as many iterations again), and none of the baseline's own."""
    from benchctl._run import rounds

    plan = _benchctl_plan(name)
    counts = (len(plan.cells), rounds.AUTO, not plan.every_cell_paired, len(plan.pairs),
              benchctl_first_rounds(name, plan))
    return rounds.planned_processes(*counts), rounds.planned_timed_shares(*counts)


#: The time target of the benchctl workers per A/B that measure what a worker and the command cost beyond it.
CALIBRATION_S = 1.0
#: Samples of benchctl's costs per A/B, whose median sizes its repetitions: one sample beside the neighbour fell on
#: a burst (5.06 s outside the budget, where the other passes measured 1.77-1.89 s) and left every repetition of
#: that A/B 15 s of its 20.
CALIBRATION_SAMPLES = 3
#: The share of its budget benchctl's first rounds are sized to fill: sized to all of it, the last planned worker
#: fitted only when no worker ran slower than the others (the budget starts a worker only when it is expected to
#: fit), and every paired A/B of 20 s ran 2 of its 3 planned processes, quiet and under the neighbour.
BENCHCTL_FILL = 0.9


@dataclass(frozen=True)
class BenchctlCosts:
    """What benchctl's command costs an A/B beyond its workers' time targets, measured before the repetitions (as
    explain sizes its workers from its probe worker): ``worker_s``, each worker of the first round, with the
    runner's work around it; ``outside_s``, the command's own start and its report, outside its --budget.
    A fresh interpreter's import of torch (the other tools' start, 1.7-1.8 s here) taken as a worker's cost left
    ~0.4 s of each out (measured: 2.0-2.2 s); with the workers' costs measured and the whole 20 s as its budget,
    the command took 24.5-25.2 s."""

    worker_s: float
    outside_s: float

    def budget_s(self, seconds: float) -> float:
        """The --budget that keeps the command within ``seconds`` (at least :data:`CALIBRATION_S`)."""
        return max(CALIBRATION_S, seconds - self.outside_s)

    def seconds_per_process(self, seconds: float, planned: tuple[int, float]) -> float:
        """The time target of each worker: what :data:`BENCHCTL_FILL` of :meth:`budget_s` leaves after each of the
        ``planned`` workers of the first rounds costs ``worker_s``, over their timed work (:func:`benchctl_planned`);
        at least 0.05 s."""
        workers, shares = planned
        return max(0.05, (BENCHCTL_FILL * self.budget_s(seconds) - workers * self.worker_s) / shares)

    def to_json(self) -> dict:
        return {"worker_s": self.worker_s, "outside_s": self.outside_s}


def _benchctl_cmd(name: str, budget_s: float, per_process_s: float, path: str) -> list[str]:
    ab = _ab(name)
    return [sys.executable, "-m", "benchctl", "run", f"{WORKLOADS}:{ab.target}", *_set_args(ab.matrix),
            "--repeat", "auto", "--first-rounds", str(benchctl_first_rounds(name)), "--budget", f"{budget_s:g}",
            "--arg", f"seconds={per_process_s:.3g}",
            "--arg", "iterations=1000000", "--json", path, "--no-progress"]


def measure_benchctl_costs(name: str, workdir: str) -> BenchctlCosts:
    """:class:`BenchctlCosts` of A/B ``name``: the median of each cost over :data:`CALIBRATION_SAMPLES` samples
    (:func:`_benchctl_costs_once`), so that one sample on a neighbour's burst does not size every repetition."""
    samples = [_benchctl_costs_once(name, workdir, i) for i in range(CALIBRATION_SAMPLES)]
    return BenchctlCosts(statistics.median(c.worker_s for c in samples),
                         statistics.median(c.outside_s for c in samples))


def _benchctl_costs_once(name: str, workdir: str, sample: int) -> BenchctlCosts:
    """One sample of :class:`BenchctlCosts` of A/B ``name``: its first round (a paired A/B's one worker, carrying
    the paired A/A control; A, B and the control's second arm otherwise) run with a budget shorter than any
    worker (a worker never run has no estimate: the first round runs, no other) and a target of
    :data:`CALIBRATION_S` each, once in this process (its wall time less the workers' targets, per worker) and
    once as the command :func:`run_benchctl` runs (the difference of the two walls: the command's start and
    report), each wall less what the contention gate cost it (:func:`_gate_s`)."""
    from benchctl._results import document
    from benchctl._results.document import cell_id
    from benchctl._run import runner
    from benchctl._run.paired import CARRIER_SCALE

    ab = _ab(name)
    started = time.perf_counter()
    doc = runner.run_matrix(f"{WORKLOADS}:{ab.target}", {"seconds": CALIBRATION_S, "iterations": 10 ** 6},
                            ab.matrix, repeat="auto", budget_s=CALIBRATION_S, progress=False, paired=True)
    wall = time.perf_counter() - started - _gate_s(doc)
    workers = [r for r in doc["runs"] if "carried_by" not in r]
    if not workers or any(r["status"] != "ok" for r in workers):
        raise ToolError(f"benchctl's calibration worker of {name} failed: "
                        f"{next((r.get('error') for r in workers if r['status'] != 'ok'), 'no worker ran')}")
    carriers = {cell_id(r["carried_by"]) for r in doc["runs"] if "carried_by" in r}
    targets = sum(CALIBRATION_S * (CARRIER_SCALE if cell_id(r["cell"]) in carriers else 1.0) for r in workers)
    worker_s = max(0.0, (wall - targets) / len(workers))
    path = os.path.join(workdir, f"benchctl_{name}_calibration{sample}.json")
    cmd = _benchctl_cmd(name, CALIBRATION_S, CALIBRATION_S, path)
    _, command_wall = run_child(cmd, _child_timeout(60.0))
    command_gate_s = _gate_s(document.load(path)) if os.path.exists(path) else 0.0
    return BenchctlCosts(worker_s, max(0.0, command_wall - command_gate_s - wall))


def _gate_s(doc: dict) -> float:
    """What the contention gate cost a run: its set-aside workers and its waits for a quiet moment. A calibration
    leaves it out: under the neighbour two of three samples had a worker set aside, their median said 5.2 s outside
    the budget (1.8-2.4 s without), and each repetition, whose own budget pays for the gate again, had 15 s of its
    20."""
    from benchctl._results import contention_gate

    return contention_gate.quiet_wait_s(doc) + sum(r.get("duration_s") or 0.0 for r in contention_gate.set_aside(doc))


def _set_args(matrix: dict) -> list[str]:
    return [a for key, values in matrix.items() for a in ("--set", f"{key}={','.join(map(str, values))}")]


def run_benchctl(name: str, seconds: float, costs: BenchctlCosts, workdir: str, tag: str) -> dict:
    from benchctl._results import document, queries

    path = os.path.join(workdir, f"benchctl_{name}_{tag}.json")
    per_process = costs.seconds_per_process(seconds, benchctl_planned(name))
    cmd = _benchctl_cmd(name, costs.budget_s(seconds), per_process, path)
    try:
        _, wall = run_child(cmd, _child_timeout(seconds))
    except ToolError as e:
        # Exit status 1: a worker failed; the file still holds every other one, judged below.
        if not (str(e).startswith("exit status 1:") and os.path.exists(path)):
            raise
        wall = None
    doc = document.load(path)
    cells = queries.cells(doc)
    cmp = queries.Comparisons(doc).compare("run", cells[1], cells[0])
    processes = {which: len(queries.process_medians(doc, "run", cell)) for which, cell in zip("AB", cells)}
    failed = len(queries.failed_runs(doc))
    if cmp is None:
        raise ToolError(f"no comparison: {processes['A']} process(es) of A, {processes['B']} of B, {failed} failed")
    if wall is None:
        wall = sum(r.get("duration_s") or 0 for r in doc["runs"])  # not the command's: a lower bound
    ctl = queries.control(doc, "run")
    detail = {"processes": processes, "control_arm_b": len(queries.process_medians(doc, "run", cells[0], "B")),
              "failed": failed, "method": cmp.method, "outcome": cmp.outcome.value, "band": cmp.band,
              "per_process_seconds": per_process, "stopped": doc.get("stopped"),
              "per_process_s": {which: [v / 1e9 for v in queries.process_medians(doc, "run", cell)]
                                for which, cell in zip("AB", cells)},
              "control_ratio": None if ctl is None else ctl.comparison.ratio}
    return {"ratio": cmp.ratio, "ci95": cmp.ci95, "df": cmp.df, "wall_s": wall, "detail": detail}


# ---------------------------------------------------------------------------------------------------------------
# The neighbour, the start, the loop

class Background:
    """``bench/background_load.py`` at its defaults, in a session of its own, for as long as the comparison runs;
    ``--seconds`` only bounds it should this script be killed before it can stop it."""

    def __init__(self, bound_s: float) -> None:
        self.proc = subprocess.Popen([sys.executable, BACKGROUND, "--seconds", f"{bound_s:.0f}"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.report = None

    def stop(self) -> str | None:
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)  # it stops its processes and prints what it took
            except ProcessLookupError:
                pass
        try:
            out, _ = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            _stop_group(self.proc)
            out = ""
        else:
            try:  # its processes have been joined; nothing of its group should remain, and none may
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.report = _last_line(out) or None
        return self.report


def measure_startup() -> float:
    """Seconds a fresh interpreter takes to import the workloads (torch): sizes pyperf's and benchctl's
    processes."""
    code = f"import sys; sys.path.insert(0, {BENCH!r}); import vs_peers_workloads"
    _, wall = run_child([sys.executable, "-c", code], 300)
    return wall


def one(tool: str, name: str, seconds: float, startup_s: float, workdir: str, repetition: int,
        benchctl_costs: BenchctlCosts | None = None) -> dict:
    """One repetition of one tool on one A/B: a row (``error`` set when it failed or cannot run). ``startup_s``: a
    fresh interpreter's import of torch (pyperf's sizing); ``benchctl_costs``: this A/B's
    (benchctl's sizing; measured now where None)."""
    row = {"tool": tool, "ab": name, "repetition": repetition, "ratio": None, "ci95": None, "df": None,
           "wall_s": None, "method": METHODS[tool], "error": None, "detail": {}}
    if tool == "pyperf" and not pyperf_installed():
        return {**row, "error": NOT_INSTALLED}
    tag = f"r{repetition}"
    try:
        if tool == "torch":
            got = run_timer(name, seconds)
        elif tool == "pyperf":
            got = run_pyperf(name, seconds, startup_s, workdir, tag)
        else:
            costs = benchctl_costs if benchctl_costs is not None else measure_benchctl_costs(name, workdir)
            got = run_benchctl(name, seconds, costs, workdir, tag)
    except (ToolError, ValueError, KeyError, IndexError, OSError) as e:
        return {**row, "error": f"failed: {e}"}
    return {**row, **got, "ci95": None if got["ci95"] is None else list(got["ci95"])}


def build_document(opts: argparse.Namespace, names: list[str], tools: list[str], rows: list[dict],
                   startup_s: float | None, background: str | None, complete: bool,
                   benchctl_costs: dict[str, BenchctlCosts] | None = None) -> dict:
    import vs_peers_workloads as w

    return {
        "schema": SCHEMA, "version": 1, "complete": complete,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": [os.path.basename(sys.argv[0]), *sys.argv[1:]],
        "options": {"seconds": opts.seconds, "repeats": opts.repeats, "abs": names, "tools": tools,
                    "background": opts.background},
        "confidence": CONFIDENCE, "startup_s": startup_s,
        "benchctl_costs": {name: c.to_json() for name, c in (benchctl_costs or {}).items()},
        "background_report": background,
        "methods": {tool: METHODS[tool] for tool in tools},
        "abs": {name: {"what": w.ABS[name].what, "matrix": w.ABS[name].matrix,
                       **analyse([r for r in rows if r["ab"] == name], tools)} for name in names},
    }


def _tools(text: str) -> list[str]:
    aliases = {"torch.utils.benchmark": "torch", "timer": "torch"}
    tools = [aliases.get(t.strip(), t.strip()) for t in text.split(",") if t.strip()]
    bad = [t for t in tools if t not in TOOLS]
    if bad or not tools:
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated subset of {','.join(TOOLS)}")
    return list(dict.fromkeys(tools))


def _positive(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: seconds > 0")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1")
    return value


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM ends it as Ctrl-C does: children and the neighbour stopped


def main(argv: list[str] | None = None) -> int:
    doc_lines = __doc__.split("\n\n")
    parser = argparse.ArgumentParser(description=doc_lines[0], epilog="\n\n".join(doc_lines[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=_positive, default=20.0,
                        help="wall seconds per tool, A/B and repetition, A and B together (default 20)")
    parser.add_argument("--repeats", type=_count, default=5, help="repetitions of every tool and A/B (default 5)")
    parser.add_argument("--only", choices=AB_NAMES, default=None, help="one A/B (default: all three)")
    parser.add_argument("--tools", type=_tools, default=list(TOOLS), metavar="T1,T2",
                        help=f"a subset of {','.join(TOOLS)} (torch: torch.utils.benchmark; default: all)")
    preflight.add_results_file(parser, "also write every figure as JSON to FILE")
    parser.add_argument("--background", action="store_true",
                        help="run bench/background_load.py at its defaults (one process, 30%% of one CPU in "
                             "bursts) beside the whole comparison, and stop it after (also on error or Ctrl-C)")
    opts = parser.parse_args(argv)
    preflight.check(opts)  # an existing --json FILE is replaced only with --force

    names = [opts.only] if opts.only else list(AB_NAMES)
    tools = opts.tools
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    runs = len(names) * len(tools) * opts.repeats
    signal.signal(signal.SIGTERM, _interrupt)
    # Ctrl-C even when a shell started this in the background with SIGINT ignored; the tools' processes then
    # start with SIGINT at its default too, the clean stop :func:`_stop_group` sends them.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    background = Background(bound_s=2 * runs * (opts.seconds + 30) + 600) if opts.background else None
    rows: list[dict] = []
    startup_s, benchctl_costs = None, {}
    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="benchctl-vs-peers-")
    complete = False
    try:
        if background:
            _say("background load: bench/background_load.py at its defaults, until the comparison ends")
        _say(f"{runs} runs of {opts.seconds:g} s ({', '.join(names)} x {', '.join(tools)} x {opts.repeats}); "
             f"about {runs * opts.seconds / 60:.1f} min")
        startup_s = measure_startup()
        _say(f"a fresh interpreter imports torch in {startup_s:.1f} s here")
        if "benchctl" in tools:
            for name in names:
                try:
                    benchctl_costs[name] = measure_benchctl_costs(name, workdir)
                except ToolError as e:  # its rows try again, each saying why where it fails again
                    _say(f"benchctl's calibration of {name} failed: {e}")
            _say(f"benchctl beyond its workers' time targets (each A/B's first round, the median of "
                 f"{CALIBRATION_SAMPLES} runs): "
                 + ", ".join(f"{name} {c.worker_s:.1f} s a worker and {c.outside_s:.1f} s outside its budget"
                             for name, c in benchctl_costs.items()))
        done = 0
        for repetition in range(1, opts.repeats + 1):
            shift = (repetition - 1) % len(tools)
            order = tools[shift:] + tools[:shift]  # each tool first in turn: drift hits them alike
            for name in names:
                for tool in order:
                    row = one(tool, name, opts.seconds, startup_s, workdir, repetition, benchctl_costs.get(name))
                    rows.append(row)
                    done += 1
                    said = row["error"] or (f"B/A {row['ratio']:.4g} {_interval(row['ci95'])} in "
                                            f"{row['wall_s']:.1f} s")
                    _say(f"[{done}/{runs}] rep {repetition} {name} {TOOL_TITLES[tool]}: {said}")
                    if opts.json_path:
                        preflight.write_json(opts.json_path, build_document(opts, names, tools, rows, startup_s,
                                                                            None, False, benchctl_costs))
        complete = True
    finally:
        report = background.stop() if background else None
        if report:
            _say(f"background load: {report}")
        if opts.json_path and (rows or complete):
            preflight.write_json(opts.json_path, build_document(opts, names, tools, rows, startup_s, report,
                                                                complete, benchctl_costs))
        for entry in os.listdir(workdir):
            os.unlink(os.path.join(workdir, entry))
        os.rmdir(workdir)
    doc = build_document(opts, names, tools, rows, startup_s, report, True, benchctl_costs)
    import vs_peers_workloads as w

    print(format_table({name: doc["abs"][name] for name in names}, {name: w.ABS[name].what for name in names}), end="")
    for tool in tools:
        print(f"{TOOL_TITLES[tool]}: {METHODS[tool]}")
    print(f"each tool: {opts.seconds:g} s per A/B and repetition; took {(time.monotonic() - started) / 60:.1f} min"
          + (f"; background load: {report}" if report else ""))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except (Exception, KeyboardInterrupt) as error:
        raise SystemExit(int(exit_status(os.path.basename(__file__), error))) from None
