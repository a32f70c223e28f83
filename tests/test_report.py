"""Report tables, comparison of two files, the figure, pyperf export, and the report/compare commands."""

import json
import re
import subprocess
import sys

import pytest

from benchctl.results import document as results
from benchctl.results import plot, pyperf_export, queries, report
from benchctl.cli.render import render
from benchctl.results.analysis import analyse
from synthetic_results import make_doc

ORDERS = ["eval_only", "train_then_eval"]


def _story():
    def slow(c):
        return c["order"] == "eval_only" and c["alloc"] == "default"

    doc = make_doc({"order": ORDERS, "alloc": ["default", "retain"]},
                   factor=lambda c: 1.5 if slow(c) else 1.0,
                   faults=lambda c: 340_000 if slow(c) else 20_000)
    doc["runs"].append({"cell": {"order": "eval_only", "alloc": "retain"}, "repetition": 2, "status": "failed",
                        "phases": {}, "readback": {}, "notes": {}, "exit_status": -9, "signal": "SIGKILL",
                        "error": "worker killed by SIGKILL", "stderr_tail": "line one\nlast words\n"})
    return doc


def test_report_tables_ratios_failures_then_the_answer_last():
    doc = analyse(_story(), focus="order")
    text = report.format_report(doc)
    assert "ratios are against order=eval_only alloc=default" in text
    assert "phase eval" in text
    rows = {line.split("  ")[0]: line for line in text.splitlines() if line.startswith("order=")}
    assert rows["order=eval_only alloc=default"].rstrip().endswith("baseline")
    assert "340k" in rows["order=eval_only alloc=default"]
    assert "0.667 [" in rows["order=train_then_eval alloc=default"]  # 1.0 / 1.5, significant
    assert rows["order=train_then_eval alloc=default"].rstrip().endswith("]*")
    assert "order=eval_only alloc=retain #3: worker killed by SIGKILL (exit status -9)" in text
    assert "| last words" in text
    assert "closes the gap" not in text, "the findings are the answer's, said once"
    shown = render(doc)
    assert shown.startswith(text)
    answer = shown[shown.index("\nAnswer for synthetic"):]
    lines = answer.strip().splitlines()[1:]
    assert lines[0].startswith(" * order=eval_only is 1.50× slower than order=train_then_eval [95% CI 1.4")
    assert lines[1].startswith(" * with alloc=retain the gap order=eval_only vs order=train_then_eval is within ±5%")
    assert lines[1].endswith("alloc=retain closes the gap; minor page faults/iter go from 340k to 20k: the slowdown "
                             "is memory returned to the OS and faulted back in")

    against = report.format_report(doc, baseline="order=train_then_eval")
    rows = {line.split("  ")[0]: line for line in against.splitlines() if line.startswith("order=")}
    assert "1.500 [" in rows["order=eval_only alloc=default"]
    assert rows["order=train_then_eval alloc=retain"].rstrip().endswith("]=")  # resolved: no difference


def test_baseline_errors():
    doc = _story()
    with pytest.raises(ValueError, match="baseline key 'batch' is not a matrix key"):
        queries.baseline(doc, "batch=2")
    with pytest.raises(ValueError, match="not among the matrix values"):
        queries.baseline(doc, "alloc=jemalloc")
    assert queries.baseline(doc, {"alloc": "retain"}) == {"order": "eval_only", "alloc": "retain"}


def test_report_without_summary_says_why():
    doc = _story()
    doc["metadata"]["analysis_error"] = "summary or verdict failed: ns holds NaN or infinite values"
    text = report.format_report(doc)
    assert "no summary: summary or verdict failed: ns holds NaN" in text
    assert "worker killed by SIGKILL" in text


def test_comparison_of_two_files():
    a = analyse(_story())
    b = analyse(make_doc({"order": ORDERS, "alloc": ["default", "retain"]}, factor=lambda c: 2.0))
    b["metadata"]["hostname"] = "other"
    text = report.format_comparison(a, b, "A", "B")
    lines = {re.split(r"\s{2,}", line)[1]: line for line in text.splitlines() if line.startswith("eval ")}
    assert "1.333 [" in lines["order=eval_only alloc=default"]  # 2.0 / 1.5
    assert "2.000 [" in lines["order=train_then_eval alloc=retain"]
    assert lines["order=train_then_eval alloc=retain"].endswith("2.00× slower")
    assert "B: workload synthetic on other" in text


def test_plot_writes_a_png(tmp_path):
    path = tmp_path / "p.png"
    plot.plot(_story(), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = make_doc({"order": ORDERS}, factor=lambda c: 1.0)
    empty["runs"] = []
    with pytest.raises(ValueError, match="nothing to plot"):
        plot.plot(empty, str(path))


def test_pyperf_export_is_accepted_by_pyperf(tmp_path):
    pytest.importorskip("pyperf")
    doc = _story()
    doc["runs"][0]["phases"]["eval"]["warmup"] = 2
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    pyperf_export.export(doc, a)
    slower = make_doc({"order": ORDERS, "alloc": ["default", "retain"]}, factor=lambda c: 3.0)
    pyperf_export.export(slower, b)
    suite = json.loads(open(a).read())
    names = [bench["metadata"]["name"] for bench in suite["benchmarks"]]
    assert names[0] == "synthetic.eval[order=eval_only alloc=default]" and len(names) == 4
    first = suite["benchmarks"][0]["runs"][0]
    assert len(first["warmups"]) == 2 and len(first["values"]) == 14
    stats = subprocess.run([sys.executable, "-m", "pyperf", "stats", a], capture_output=True, text=True)
    assert stats.returncode == 0, stats.stderr
    assert "synthetic.eval[order=eval_only alloc=default]" in stats.stdout
    cmp = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", a, b], capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stderr
    assert "slower" in cmp.stdout


def test_report_and_compare_commands(tmp_path):
    path = str(tmp_path / "r.json")
    results.save(analyse(_story(), focus="order"), path)
    out = subprocess.run([sys.executable, "-m", "benchctl", "report", path, "--export", "pyperf",
                          "--plot", str(tmp_path / "p.png")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "phase eval" in out.stdout and (tmp_path / "r.pyperf.json").exists() and (tmp_path / "p.png").exists()
    refocus = subprocess.run([sys.executable, "-m", "benchctl", "report", path, "--focus", "alloc"],
                             capture_output=True, text=True)
    assert "alloc=default is 1.50× slower than alloc=retain" in refocus.stdout
    same = subprocess.run([sys.executable, "-m", "benchctl", "compare", path, path], capture_output=True, text=True)
    assert same.returncode == 0 and "no difference beyond ±5%" in same.stdout


def test_commands_give_clear_errors_on_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "benchctl.results", "version": 99}')
    out = subprocess.run([sys.executable, "-m", "benchctl", "report", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "newer benchctl (results version 99)" in out.stderr and "Traceback" not in out.stderr
    out = subprocess.run([sys.executable, "-m", "benchctl", "compare", str(bad), str(tmp_path / "none.json")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "newer benchctl" in out.stderr
