"""bench/vs_peers.py: the interval of a log ratio, the contradiction and holds-median judgements, the table, the
refusal to replace a --json FILE, the neighbour stopped after; and (slow) one tiny run's JSON."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "vs_peers.py")


def _load():
    spec = importlib.util.spec_from_file_location("vs_peers_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


vp = _load()


def _script(*args, timeout=60):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


# --- the interval of a log ratio ------------------------------------------------------------------------------

def test_log_ratio_interval_is_welch_on_the_logs():
    stats = pytest.importorskip("scipy.stats")
    a = [1.00, 1.10, 0.95, 1.05, 1.02]
    b = [0.50, 0.56, 0.47, 0.52]
    got = vp.log_ratio_interval(a, b)
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    d = sum(lb) / len(lb) - sum(la) / len(la)
    assert got["ratio"] == pytest.approx(math.exp(d))
    va = stats.tvar(la) / len(la)
    vb = stats.tvar(lb) / len(lb)
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert got["df"] == pytest.approx(df)
    assert got["ci95"][0] == pytest.approx(math.exp(d - half), rel=1e-6)
    assert got["ci95"][1] == pytest.approx(math.exp(d + half), rel=1e-6)
    # B over A: swapping the arms inverts the ratio and its interval.
    back = vp.log_ratio_interval(b, a)
    assert back["ratio"] == pytest.approx(1 / got["ratio"])
    assert back["ci95"][0] == pytest.approx(1 / got["ci95"][1], rel=1e-6)


def test_log_ratio_interval_without_spread_or_units():
    assert vp.log_ratio_interval([2.0], [1.0, 1.0]) == {"ratio": pytest.approx(0.5), "ci95": None, "df": None}
    same = vp.log_ratio_interval([2.0, 2.0], [1.0, 1.0, 1.0])
    assert same["ratio"] == pytest.approx(0.5) and same["ci95"] == (pytest.approx(0.5), pytest.approx(0.5))
    with pytest.raises(ValueError):
        vp.log_ratio_interval([1.0, -1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        vp.log_ratio_interval([], [1.0])


def test_more_blocks_narrow_the_interval_of_the_same_spread():
    few = vp.log_ratio_interval([1.0, 1.1, 0.9], [2.0, 2.2, 1.8])
    many = vp.log_ratio_interval([1.0, 1.1, 0.9] * 10, [2.0, 2.2, 1.8] * 10)
    assert few["ratio"] == pytest.approx(many["ratio"])
    assert many["ci95"][1] - many["ci95"][0] < (few["ci95"][1] - few["ci95"][0]) / 3


# --- contradictions, the median, the narrowest honest interval ------------------------------------------------

def test_contradicting_pairs_and_holds():
    intervals = [(1.0, 2.0), (1.5, 2.5), (2.6, 3.0), None, (0.5, 1.0)]
    # 1-2 and 2.6-3 do not overlap, nor 1.5-2.5 and 2.6-3, nor 2.6-3 and 0.5-1, nor 1.5-2.5 and 0.5-1;
    # 1-2 and 0.5-1 touch: they overlap.
    assert vp.contradicting_pairs(intervals) == [(0, 2), (1, 2), (1, 4), (2, 4)]
    assert vp.contradicting_pairs([None, (1.0, 2.0)]) == []
    assert vp.holds((1.0, 2.0), 2.0) is True and vp.holds((1.0, 2.0), 2.1) is False
    assert vp.holds(None, 1.0) is None and vp.holds((1.0, 2.0), None) is None


def _row(tool, rep, ratio, ci, wall=10.0, error=None):
    return {"tool": tool, "ab": "ftz", "repetition": rep, "ratio": ratio, "ci95": ci, "wall_s": wall,
            "error": error, "method": "m", "detail": {}}


ROWS = [
    _row("torch", 1, 0.50, (0.49, 0.51)),
    _row("torch", 2, 0.60, (0.59, 0.61)),
    _row("torch", 3, 0.55, (0.548, 0.552), wall=9.0),
    _row("benchctl", 1, 0.54, (0.45, 0.65), wall=16.0),
    _row("benchctl", 2, 0.56, (0.50, 0.62), wall=25.0),
    _row("benchctl", 3, 0.70, None, error=None),
    _row("pyperf", 1, None, None, wall=None, error="pyperf not installed"),
]


def test_analyse_judges_each_row_against_the_median_of_every_tool():
    got = vp.analyse(ROWS, ["torch", "pyperf", "benchctl"])
    # Median of 0.50, 0.60, 0.55, 0.54, 0.56, 0.70 (pyperf measured nothing).
    assert got["median_ratio"] == pytest.approx(0.555)
    holds = {(r["tool"], r["repetition"]): r["holds_median"] for r in got["rows"]}
    assert holds == {("torch", 1): False, ("torch", 2): False, ("torch", 3): False, ("benchctl", 1): True,
                     ("benchctl", 2): True, ("benchctl", 3): None, ("pyperf", 1): None}
    torch, bench, pyperf = (got["tools"][t] for t in ("torch", "benchctl", "pyperf"))
    assert torch["contradicting_pairs"] == [[1, 2], [1, 3], [2, 3]] and torch["pairs_compared"] == 3
    assert torch["hold_median"] == 0 and torch["narrowest_honest"] is None
    assert bench["contradicting_pairs"] == [] and bench["with_interval"] == 2 and bench["measured"] == 3
    # Narrowest per second: 0.20 x sqrt(16) = 0.8 against 0.12 x sqrt(25) = 0.6: rep 2, the longer one.
    assert bench["narrowest_honest"]["repetition"] == 2
    assert bench["narrowest_honest"]["width_sqrt_s"] == pytest.approx(0.12 * 5)
    assert pyperf["measured"] == 0 and pyperf["errors"] == ["pyperf not installed"]
    row = next(r for r in got["rows"] if r["tool"] == "benchctl" and r["repetition"] == 1)
    assert row["width"] == pytest.approx(0.20) and row["ci95"] == [0.45, 0.65]


def test_analyse_with_nothing_measured():
    got = vp.analyse([_row("pyperf", 1, None, None, wall=None, error="pyperf not installed")], ["pyperf"])
    assert got["median_ratio"] is None and got["rows"][0]["holds_median"] is None


def test_the_table_says_each_row_and_each_tool():
    res = vp.analyse(ROWS, ["torch", "pyperf", "benchctl"])
    text = vp.format_table({"ftz": res}, {"ftz": "FTZ on subnormal inputs"})
    lines = text.splitlines()
    assert lines[0] == "ftz: FTZ on subnormal inputs"
    assert "median of all 6 ratios B/A (every tool): 0.555" in text
    assert any(line.split()[:2] == ["tool", "rep"] for line in lines)
    assert "[0.49, 0.51]" in text and "NO" in text and "yes" in text and "none" in text
    assert "pyperf not installed" in text
    assert "torch.utils.benchmark: 3 of 3 pairs of repetitions contradict (1/2, 1/3, 2/3); 0 of 3 intervals " \
           "hold the median; narrowest honest interval: none" in text
    assert "benchctl: 0 of 1 pairs of repetitions contradict; 2 of 2 intervals hold the median; narrowest honest " \
           "interval: width 0.12 in 25.0 s = 0.6 x sqrt(s) (rep 2)" in text
    assert "  pyperf: pyperf not installed" in text


def test_without_pyperf_its_rows_say_so(monkeypatch):
    monkeypatch.setattr(vp, "pyperf_installed", lambda: False)
    row = vp.one("pyperf", "ftz", 1.0, 1.0, "/nonexistent", 1)
    assert row["error"] == vp.NOT_INSTALLED and row["ratio"] is None and row["wall_s"] is None


def test_sizes_follow_the_time():
    assert vp.pyperf_processes(2.0, 3.0) == 2  # never under two: one process gives no interval
    assert vp.pyperf_processes(60.0, 1.0) > vp.pyperf_processes(20.0, 1.0) >= 2
    assert vp.BenchctlCosts(3.0, 0.0).seconds_per_process(2.0, (9, 9.0)) == 0.05
    assert vp.BenchctlCosts(1.0, 0.0).seconds_per_process(90.0, (9, 9.0)) == pytest.approx(8.0)  # (81 - 9) / 9
    # 3 workers, each carrying the control (1.5x the timed work), in 90% of the 20 s: (18 - 3 x 3) / 4.5 ...
    assert vp.BenchctlCosts(3.0, 0.0).seconds_per_process(20.0, (3, 4.5)) == pytest.approx(9.0 / 4.5)
    # ... and of the 16 s the budget leaves where the command's start and report take 4 s: (14.4 - 9) / 4.5.
    costs = vp.BenchctlCosts(3.0, 4.0)
    assert costs.budget_s(20.0) == 16.0 and costs.seconds_per_process(20.0, (3, 4.5)) == pytest.approx(5.4 / 4.5)
    assert vp.BenchctlCosts(3.0, 30.0).budget_s(20.0) == vp.CALIBRATION_S


def test_benchctl_s_costs_are_its_calibration_runs_less_the_workers_targets(monkeypatch, tmp_path):
    """One paired worker carrying the control (1.5x the target) in 5 s: 3.5 s a worker; three unpaired workers in
    9 s: 2 s each; the command run as the repetitions run it, in 4 s more than the same run here: outside its
    budget. Each is the median of its samples: one sample on a burst (the run here 6 s slower, the command's
    outside part 5 s longer) moves neither. A failed worker fails the calibration."""
    from benchctl._run import runner

    assert vp.CALIBRATION_SAMPLES == 3
    cell, base = {"threads": 1, "ftz": "process"}, {"threads": 1, "ftz": "off"}
    paired = {"runs": [{"cell": cell, "status": "ok"}, {"cell": base, "arm": "P", "carried_by": cell, "status": "ok"}]}
    unpaired = {"runs": [{"cell": {"threads": t}, "status": "ok"} for t in (1, 2, 1)]}
    for doc, wall, worker in ((paired, 5.0, 3.5), (unpaired, 9.0, 2.0)):
        walls = [wall, wall + 6.0, wall]  # the second sample's run here fell on a burst
        outside = iter([4.0, 4.0, 9.0])  # the third sample's command did
        clock = iter([t for w in walls for t in (100.0, 100.0 + w)])
        monkeypatch.setattr(vp.time, "perf_counter", lambda: next(clock))
        asked, commands, here = {}, [], iter(walls)
        monkeypatch.setattr(runner, "run_matrix", lambda *a, **k: asked.update(k) or doc)
        monkeypatch.setattr(vp, "run_child",
                            lambda cmd, timeout: commands.append(cmd) or ("", next(here) + next(outside)))
        costs = vp.measure_benchctl_costs("ftz", str(tmp_path))
        assert (costs.worker_s, costs.outside_s) == (pytest.approx(worker * vp.CALIBRATION_S), pytest.approx(4.0))
        assert asked["paired"] and asked["repeat"] == "auto" and asked["budget_s"] == vp.CALIBRATION_S
        assert len(commands) == 3 and len({c[-2] for c in commands}) == 3  # a file of its own each
        assert commands[0][2:4] == ["benchctl", "run"] and "--budget" in commands[0]
    failed = {"runs": [{"cell": cell, "status": "failed", "error": "RuntimeError: boom"}]}
    monkeypatch.setattr(vp.time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(runner, "run_matrix", lambda *a, **k: failed)
    with pytest.raises(vp.ToolError, match="boom"):
        vp.measure_benchctl_costs("ftz", str(tmp_path))


def test_benchctl_costs_leave_out_what_the_contention_gate_cost(tmp_path, monkeypatch):
    """A worker set aside (2.5 s) and a wait for a quiet moment (0.5 s) in the run here, a set-aside worker (2.0 s)
    in the command: neither is benchctl's start, report or per-worker cost, and each repetition's budget pays for
    the gate again."""
    import json

    from benchctl._results import document
    from benchctl._run import runner

    cell = {"threads": 1}
    doc = {"runs": [{"cell": cell, "status": "ok"}], "set_aside": [{"cell": cell, "duration_s": 2.5}],
           "metadata": {"runner": {"quiet_wait_s": 0.5}}}
    clock = iter([100.0, 100.0 + 5.0])
    monkeypatch.setattr(vp.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(runner, "run_matrix", lambda *a, **k: doc)

    def command(cmd, timeout):
        with open(cmd[cmd.index("--json") + 1], "w") as f:
            json.dump({"runs": [], "set_aside": [{"cell": cell, "duration_s": 2.0}]}, f)
        return "", 2.0 + 2.0 + 3.0  # the work done here (2 s without the gate), its set-aside worker, its own 3 s

    monkeypatch.setattr(vp, "run_child", command)
    monkeypatch.setattr(document, "load", lambda path: json.load(open(path)))
    costs = vp._benchctl_costs_once("threads", str(tmp_path), 0)
    assert costs.worker_s == pytest.approx(5.0 - 3.0 - vp.CALIBRATION_S)  # one worker, less its 1 s target
    assert costs.outside_s == pytest.approx(3.0)


def test_benchctl_is_sized_for_the_workers_its_first_rounds_run():
    """A paired A/B: 5 paired processes carrying the control (its first rounds are 5: the command asks for them),
    none of the baseline's own; one that needs fresh processes: A, B and the control's second arm, 3 each (9)."""
    from benchctl._run import runner

    for name in vp.AB_NAMES:
        ab = vp._ab(name)
        plan = runner.plan_matrix(f"{vp.WORKLOADS}:{ab.target}", {}, ab.matrix, paired=True)
        assert vp.benchctl_planned(name) == ((5, 7.5) if plan.every_cell_paired else
                                             (9, 10.5) if plan.pairs else (9, 9.0)), name
        assert vp.benchctl_first_rounds(name) == (5 if plan.every_cell_paired else 3), name
    assert vp.benchctl_planned("ftz") == (5, 7.5)  # FTZ switches on every thread of a running process
    cmd = vp._benchctl_cmd("ftz", 16.0, 1.2, "/x.json")
    assert cmd[cmd.index("--first-rounds") + 1] == "5" and cmd[cmd.index("--repeat") + 1] == "auto"


# --- the command ------------------------------------------------------------------------------------------------

def test_help_explains_and_exits_0():
    proc = _script("--help")
    assert proc.returncode == 0, proc.stderr
    for words in ("torch.utils.benchmark", "pyperf", "benchctl", "--seconds", "--repeats", "--only", "--tools",
                  "--json", "--force", "--background", "narrowest honest interval per second", "Welch"):
        assert words in proc.stdout, words


def test_an_existing_json_file_is_refused_without_force(tmp_path):
    path = tmp_path / "kept.json"
    path.write_text('{"mine": 1}\n')
    started = time.monotonic()
    proc = _script("--only", "ftz", "--tools", "torch", "--seconds", "1", "--repeats", "1", "--json", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "already exists" in proc.stderr and "--force" in proc.stderr
    assert path.read_text() == '{"mine": 1}\n'
    assert time.monotonic() - started < 30  # refused before anything ran


@pytest.mark.parametrize("args, words", [
    (["--force"], "--force needs --json"), (["--tools", "timeit"], "subset of"), (["--only", "x"], "invalid choice"),
    (["--seconds", "0"], "seconds > 0"), (["--repeats", "0"], "at least 1"),
])
def test_it_refuses_what_it_cannot_do(args, words):
    proc = _script(*args)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr


@pytest.mark.slow  # starts and stops real processes, seconds: the slow tier keeps the README's tier under 3 min
def test_the_neighbour_is_stopped_with_its_processes():
    load = vp.Background(bound_s=60)
    time.sleep(2.0)  # started, its SIGTERM handler set
    report = load.stop()
    assert load.proc.returncode == 0
    assert report and report.startswith("took "), report
    with pytest.raises(ProcessLookupError):
        os.killpg(load.proc.pid, 0)  # nothing of its group is left


# --- slow: one tiny run ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_tiny_run_writes_every_tool_s_rows(tmp_path):
    path = tmp_path / "peers.json"
    path.write_text("{}\n")  # replaced: --force
    # 6 s a tool: at 3 s a fresh clone's CI run once got no interval from torch.utils.benchmark. Its time per arm is
    # 45% of what the child's start leaves (0.63-0.68 s here after a 1.6 s start); a start of most of 3 s leaves its
    # 0.05 s floor, under one block of arm B (10,000 calls of ~10 us): one block, no interval.
    proc = _script("--only", "ftz", "--seconds", "6", "--repeats", "1", "--json", str(path), "--force", timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(path.read_text())
    assert doc["schema"] == "benchctl.vs_peers" and doc["complete"] is True
    assert doc["options"]["abs"] == ["ftz"] and doc["options"]["tools"] == ["torch", "pyperf", "benchctl"]
    assert set(doc["methods"]) == {"torch", "pyperf", "benchctl"} and doc["startup_s"] > 0
    costs = doc["benchctl_costs"]["ftz"]
    assert set(doc["benchctl_costs"]) == {"ftz"} and costs["worker_s"] > 0 and costs["outside_s"] >= 0
    ab = doc["abs"]["ftz"]
    assert ab["matrix"] == {"threads": [1], "ftz": ["off", "process"]}
    rows = {r["tool"]: r for r in ab["rows"]}
    assert set(rows) == {"torch", "pyperf", "benchctl"}
    for row in rows.values():
        assert {"ratio", "ci95", "width", "wall_s", "holds_median", "width_sqrt_s", "method", "error",
                "detail"} <= set(row)
        # A row measured a ratio or says why not (benchctl may fit too few processes in 6 s).
        assert (row["ratio"] is not None) != (row["error"] is not None), row
    timer = rows["torch"]
    # A ratio, not its direction: what FTZ saves on this multiply belongs to the CPU (on the AMD EPYC Zen 4 VM,
    # 8.4 -> 7.9 us a call, so a 3-second run of CI's once came out at 1.04).
    assert 0 < timer["ratio"] < math.inf and len(timer["ci95"]) == 2 and timer["detail"]["A"]["blocks"] >= 2
    if vp.pyperf_installed():
        assert rows["pyperf"]["ratio"] is not None, rows["pyperf"]["error"]
    else:
        assert rows["pyperf"]["error"] == vp.NOT_INSTALLED
    for summary in ab["tools"].values():
        assert {"contradicting_pairs", "hold_median", "narrowest_honest", "with_interval", "errors"} <= set(summary)
    assert "ftz: FTZ/DAZ" in proc.stdout and "holds median" in proc.stdout
    assert "[1/3]" in proc.stderr


@pytest.mark.slow
def test_sigterm_stops_the_run_and_its_neighbour(tmp_path):
    path = tmp_path / "peers.json"
    proc = subprocess.Popen([sys.executable, SCRIPT, "--only", "threads", "--tools", "torch", "--seconds", "60",
                             "--repeats", "1", "--background", "--json", str(path)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(10)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "background load: took" in err, err
    assert not path.exists() or json.loads(path.read_text())["complete"] is False
