"""Report tables, comparison of two files, the figure, pyperf export, and the report/compare commands."""

import json
import re
import subprocess
import sys

import pytest

from benchctl._results import document as results
from benchctl._results import answer, plot, pyperf_export, queries, report, tables
from benchctl._results.findings import Finding, Status
from benchctl._cli.render import render
from benchctl._results.analysis import analyse
from synthetic_results import BASE_NS, make_doc

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


@pytest.mark.parametrize("seconds, unit, texts", [
    ((2.11e-3, 1.101e-3), "ms", ["2.110", "1.101"]),  # trailing zeros kept: the columns align
    ((6.796e-6, 1.2e-3), "µs", ["6.796", "1200.000"]),  # one unit a column, from the middle of its range
    ((5.646e-8, 8.18e-4, None), "µs", ["0.05646", "818.00000", "n/a"]),  # not 818000 ns
    ((12.5, 3.0), "s", ["12.500", "3.000"]),
    ((0.0, None), "ns", ["0", "n/a"]),
])
def test_a_time_column_has_one_unit_and_the_same_decimals(seconds, unit, texts):
    column = tables.time_unit(seconds)
    assert column.name == unit and [column.text(v) for v in seconds] == texts
    assert column.header("median") == f"median {unit}"


def test_report_and_comparison_tables_write_times_in_the_unit_their_values_need():
    fast = analyse(make_doc({"order": ORDERS}, factor=lambda c: 1e-3 if c["order"] == "eval_only" else 2e-3))
    lines = report.format_report(fast).splitlines()
    header = next(line for line in lines if line.startswith("cell "))
    assert "median µs" in header and "95% CI µs" in header  # ~10 µs, not "0.01" ms
    cells = [re.split(r"\s{2,}", line) for line in lines if line.startswith("order=")]
    decimals = {len(c[2].split(".")[1]) for c in cells}
    assert len(decimals) == 1, cells  # one number of decimals down the column
    slow = analyse(make_doc({"order": ORDERS}, factor=lambda c: 1.0))
    compared = report.format_comparison(fast, slow, "A", "B")
    assert "A µs" in compared and "B ms" in compared


def test_the_answer_names_what_is_ruled_out_on_one_line_and_says_why_only_when_asked():
    doc = analyse(_story(), focus="order")
    gpu = ["async_clock", "cudnn_autotune", "cuda_first_call", "tf32"]
    ruled = [Finding(f"cause_{name}", None, Status.RULED_OUT, f"{name}: ruled out before running: no CUDA device here")
             for name in ["thp", "isa", *gpu]]
    kept = Finding("keeps_gap", "eval", Status.NOT_CAUSE, "with ftz=process the gap is kept", setting="ftz=process")
    doc["verdict"] += [f.to_json() for f in [*ruled, kept]]
    shown = render(doc).split("\nAnswer for synthetic")[1].splitlines()[1:]
    found = [f for f in map(Finding.from_json, doc["verdict"]) if f.in_answer and f.mark != "-"]
    # What was found first, a line each, then everything ruled out or not the cause on one line.
    assert [line[:3] for line in shown] == [f" {f.mark} " for f in found] + [" - "]
    assert shown[-1] == (" - ruled out before running: thp, isa, async_clock, cudnn_autotune, cuda_first_call, tf32; "
                         f"measured, not the cause: ftz=process (why each: {answer.VERBOSE_FLAG})")
    verbose = render(doc, verbose=True).split("\nAnswer for synthetic")[1].splitlines()[1:]
    assert verbose[:len(found)] == shown[:len(found)] and len(verbose) == len(found) + len(ruled) + 1
    assert " - tf32: ruled out before running: no CUDA device here" in verbose
    assert len(doc["verdict"]) >= len(ruled) + 3, "the document keeps every finding"


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


def test_plot_draws_processes_the_control_arm_and_a_log_scale_where_values_span_more_than_ten_times():
    import matplotlib.pyplot as plt

    fast = lambda c: 1.0 if c["order"] == "eval_only" else 1.5  # noqa: E731 - a 1.5x span: linear
    doc = make_doc({"order": ORDERS}, factor=fast, control=True)
    warm = doc["runs"][0]["phases"]["eval"]
    warm["ns"] = [v * (200 if i == 0 else 1) for i, v in enumerate(warm["ns"])]  # one slow first iteration
    warm["warmup"] = 1
    fig = plot.figure(doc)
    try:
        series, cells = fig.axes[:2]
        assert series.get_yscale() == "log" and cells.get_yscale() == "linear"  # the warm-up spans 200x
        labels = [t.get_text() for t in cells.get_xticklabels()]
        assert labels == ["order=eval_only", "order=train_then_eval", "order=eval_only [A/A arm B]"]
        # One point per process (the statistics' unit), not one per iteration.
        points = [line for line in cells.get_lines() if line.get_marker() == "o"]
        assert [len(line.get_xdata()) for line in points] == [3, 3, 3]
        assert all(float(t).is_integer() for t in series.get_xticks())
        assert [fig.texts[0].get_text()] == ["workload synthetic"] and "synthetic" not in series.get_title()
    finally:
        plt.close(fig)


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
    assert len(first["warmups"]) == 2 and len(first["values"]) == len(BASE_NS) // 2  # the last half
    stats = subprocess.run([sys.executable, "-m", "pyperf", "stats", a], capture_output=True, text=True)
    assert stats.returncode == 0, stats.stderr
    assert "synthetic.eval[order=eval_only alloc=default]" in stats.stdout
    cmp = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", a, b], capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stderr
    assert "slower" in cmp.stdout


def _pyperf_runs(path: str) -> dict[str, list]:
    """{benchmark name: its runs' values} of a pyperf file, as pyperf itself reads it."""
    import pyperf

    return {b.get_name(): [run.values for run in b.get_runs()] for b in pyperf.BenchmarkSuite.load(path)}


def test_pyperf_compare_to_reads_two_exports_with_warmups_of_every_length_and_both_arms(tmp_path):
    pytest.importorskip("pyperf")
    half = len(BASE_NS) // 2
    docs = [make_doc({"order": ORDERS}, factor=lambda c, f=f: f if c["order"] == "eval_only" else 1.0, control=True)
            for f in (1.0, 2.0)]
    for doc in docs:  # each process its own warm-up, as detection finds them: none, a few, most of the run
        for i, run in enumerate(doc["runs"]):
            run["phases"]["eval"]["warmup"] = i % 3
    docs[0]["metadata"].update(python="3.11.7", benchctl_version="9.9", system={
        "cpu": {"model_name": "Planted CPU"}, "topology": {"logical_cpus": 7}, "packages": {"torch": "2.99"}})
    paths = [str(tmp_path / f"{name}.pyperf.json") for name in "ab"]
    for doc, path in zip(docs, paths):
        pyperf_export.export(doc, path)
    runs = _pyperf_runs(paths[0])
    arm_b = "synthetic.eval[order=eval_only][A/A arm B]"
    assert set(runs) == {"synthetic.eval[order=eval_only]", "synthetic.eval[order=train_then_eval]", arm_b}
    # Every run of a benchmark carries the same number of values: pyperf's t-test needs it.
    assert all({len(values) for values in by_run} == {half} for by_run in runs.values())
    done = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", "-v", *paths], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert "ERROR" not in done.stdout and arm_b in done.stdout, done.stdout
    assert "synthetic.eval[order=eval_only]" in done.stdout and "2.00x slower" in done.stdout, done.stdout
    meta = subprocess.run([sys.executable, "-m", "pyperf", "metadata", paths[0]], capture_output=True, text=True)
    for line in ("cpu_model_name: Planted CPU", "cpu_count: 7", "hostname: test", "python_version: 3.11.7",
                 "torch_version: 2.99", "benchctl_version: 9.9", f"benchctl_values_per_run: {half}"):
        assert f"- {line}" in meta.stdout, meta.stdout
    # A warm-up reaching into the last half: that benchmark's runs all carry its steady count.
    docs[0]["runs"][0]["phases"]["eval"]["warmup"] = half + 3
    pyperf_export.export(docs[0], paths[0])
    assert {len(v) for v in _pyperf_runs(paths[0])["synthetic.eval[order=eval_only]"]} == {half - 3}


def test_report_and_compare_commands(tmp_path):
    path = str(tmp_path / "r.json")
    results.save(analyse(_story(), focus="order"), path)
    out = subprocess.run([sys.executable, "-m", "benchctl", "report", path, "--export", "pyperf",
                          "--plot", str(tmp_path / "p.png")], capture_output=True, text=True)
    assert out.returncode == 1, out.stderr  # the story has a failed worker: run would have exited 1 too
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
    out = subprocess.run([sys.executable, "-m", "benchctl", "compare", str(bad), str(bad)], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "newer benchctl" in out.stderr
    out = subprocess.run([sys.executable, "-m", "benchctl", "compare", str(bad), str(tmp_path / "none.json")],
                         capture_output=True, text=True)  # a file that is not there is said first
    assert out.returncode == 2 and out.stderr == f"compare: no such file or folder: {tmp_path / 'none.json'}\n"
