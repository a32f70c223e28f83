"""A user's mistakes are refused before any work: exit status 2, one line naming the flag and the fix, no worker
started and nothing written; nothing measured is replaced unasked; the conventions every command shares."""

import argparse
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from benchctl import _cli as cli, clock
from benchctl._cli import options, seed
from benchctl.errors import ExitCode, MissingPackage
from benchctl._results import document
from benchctl._results.analysis import analyse
from benchctl._run import forkserver, runner
from synthetic_results import make_doc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def workers(monkeypatch):
    """The workers the command started (none, for a refused command)."""
    started = []
    monkeypatch.setattr(runner, "run_worker", lambda *args, **kwargs: started.append(args))
    return started


def _results(path, failed=False):
    """A results file at ``path`` (every worker failed, with ``failed``); returns its path as a string."""
    doc = analyse(make_doc({"ms": [1, 2]}, factor=lambda c: c["ms"]), focus="ms")
    if failed:
        for run in doc["runs"]:
            run.update(status="failed", phases={}, error="worker killed by SIGKILL")
        doc = analyse(doc)
    document.save(doc, str(path))
    return str(path)


def _files(folder):
    """Every file under ``folder`` with its size and modification time: what a refused command must not change."""
    return {os.path.join(d, f): (os.stat(os.path.join(d, f)).st_size, os.stat(os.path.join(d, f)).st_mtime_ns)
            for d, _, names in os.walk(folder) for f in names}


def _refused(capsys, argv, *words, main=cli.main):
    """``main(argv)`` exits 2 with one line on stderr holding ``words``; returns that line."""
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == ExitCode.USER_ERROR, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# ---- nothing measured is lost ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["run", "sleep", "--no-progress"], ["explain", "TARGET", "--no-progress"],
                                     ["penalty", "--ops", "add"]])
def test_an_existing_results_file_is_refused_unless_continued_or_replaced(tmp_path, capsys, workers, command):
    target = tmp_path / "ok.py"
    target.write_text("def f():\n    pass\n")
    path = _results(tmp_path / "r.json")
    before = _files(tmp_path)
    argv = [str(target) + ":f" if word == "TARGET" else word for word in command] + ["--json", path]
    line = _refused(capsys, argv, f"--json {path} already exists", "--force", "name another file")
    assert ("--resume" in line) == (command[0] == "run")  # only the flags the command has
    assert workers == [] and _files(tmp_path) == before


def test_force_replaces_and_resume_continues_an_existing_file(tmp_path, capsys):
    path = _results(tmp_path / "r.json")
    argv = ["run", "sleep", "--arg", "iterations=1", "--no-control", "--no-progress", "--json", path]
    assert cli.main(argv + ["--force"]) == ExitCode.OK
    replaced = document.load(path)
    assert replaced["workload"] == "sleep" and len(replaced["runs"]) == 1
    assert cli.main(argv + ["--resume", "--repeat", "2"]) == ExitCode.OK
    assert [r["repetition"] for r in document.load(path)["runs"]] == [0, 1]
    capsys.readouterr()


@pytest.mark.parametrize("flags, words", [
    (["--resume", "--force"], ["--resume continues --json FILE and --force replaces it"]),
    (["--resume"], ["--resume: ", "does not exist", "leave out --resume"]),
])
def test_resume_and_force_contradictions(tmp_path, capsys, workers, flags, words):
    _refused(capsys, ["run", "sleep", "--no-progress", "--json", str(tmp_path / "new.json"), *flags], *words)
    assert workers == [] and _files(tmp_path) == {}


@pytest.mark.parametrize("flag", ["--resume", "--force"])
def test_resume_or_force_without_a_file_is_refused(capsys, workers, flag):
    _refused(capsys, ["run", "sleep", "--no-progress", flag], f"{flag} needs --json FILE")
    assert workers == []


def test_a_seed_script_refuses_an_existing_file_and_takes_no_progress(tmp_path, capsys):
    path = _results(tmp_path / "r.json")
    before = _files(tmp_path)
    spec = importlib.util.spec_from_file_location("resnet_order_script", os.path.join(ROOT, "bench", "resnet_order.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    # --no-progress is accepted as run and explain accept it: the refusal is about the file.
    _refused(capsys, ["--no-progress", "--json", path], "resnet_order.py: --json", "--resume", "--force",
             main=lambda argv: seed.script_exit(lambda: script.main(argv), script.__file__))
    assert _files(tmp_path) == before


# ---- outputs checked before any work -----------------------------------------------------------------------


@pytest.mark.parametrize("argv, words", [
    (["run", "sleep", "--plot", "{tmp}/nosuchdir/x.png"], ["--plot", "nosuchdir/x.png", "does not exist"]),
    (["run", "sleep", "--json", "{tmp}/adir"], ["--json", "adir is a folder"]),
    (["run", "sleep", "--json", "/proc/benchctl-results.json"], ["--json /proc/benchctl-results.json: cannot write"]),
    (["run", "sleep", "--json", "{tmp}/same.png", "--plot", "{tmp}/same.png"], ["--json and --plot both name"]),
    (["run", "sleep", "--json", "-"], ["--json -", "name a file"]),
    (["run", "sleep", "--plot", "{tmp}/x.txt"], ["--plot", "matplotlib cannot write .txt", ".png", ".pdf"]),
    (["report", "{results}", "--plot", "{tmp}/x.txt"], ["--plot", ".txt", ".svg"]),
    (["report", "{results}", "--export", "pyperf", "-o", "{tmp}/adir"], ["-o", "adir is a folder"]),
    (["report", "{results}", "--export", "pyperf", "-o", "{results}"], ["-o", "holds benchctl results"]),
    (["report", "{results}", "-o", "{tmp}/x.json"], ["-o", "give --export pyperf"]),
    (["report", "{results}", "--json", "{results}"], ["--json", "holds benchctl results"]),
    (["doctor", "--json", "{tmp}/adir"], ["--json", "is a folder"]),
    (["clock", "--json", "{tmp}/nosuchdir/c.json"], ["--json", "does not exist"]),
])
def test_outputs_are_checked_before_any_work(tmp_path, capsys, workers, argv, words):
    (tmp_path / "adir").mkdir()
    results = _results(tmp_path / "r.json")
    before = _files(tmp_path)
    argv = [a.format(tmp=tmp_path, results=results) for a in argv]
    _refused(capsys, argv, *words)
    assert workers == [] and _files(tmp_path) == before


def test_a_folder_is_not_said_to_hold_the_previous_results(tmp_path):
    # Up front a folder is the user's mistake (above); a write failing mid-run is the machine's (tests/test_kills.py).
    doc = document.load(_results(tmp_path / "r.json"))
    with pytest.raises(document.ResultsUnwritable, match="Is a directory; no file was written"):
        document.save(doc, str(tmp_path))


# ---- the target: the user's code, named --------------------------------------------------------------------


@pytest.mark.parametrize("target, source, words", [
    ("nosuch.module:fn", None, ["nosuch.module:fn", "ModuleNotFoundError: No module named 'nosuch'"]),
    ("../r1.json:foo", None, ["../r1.json:foo", "neither a .py file nor a module name", "package.module:name"]),
    ("{tmp}/missing.py:f", None, ["no such file", "missing.py"]),
    ("{tmp}/notes.txt:f", "def f():\n    pass\n", ["notes.txt is a file but not Python source (.py)"]),
    ("{tmp}/broken.py:f", "def f(:\n", ["broken.py:f", "SyntaxError"]),
    ("{tmp}/raising.py:f", "raise RuntimeError('no data set configured')\n", ["RuntimeError: no data set configured"]),
    ("{tmp}/exiting.py:f", "import sys\nsys.exit('usage: exiting.py DATA')\n",
     ["ended the process", "SystemExit: usage: exiting.py", "__name__"]),
    ("{tmp}/importing.py:f", "import nosuch_dependency_of_the_user\n", ["No module named 'nosuch_dependency"]),
])
@pytest.mark.parametrize("command", ["run", "explain"])
def test_a_target_that_does_not_import_is_the_users_error(tmp_path, capsys, workers, command, target, source, words):
    target = target.format(tmp=tmp_path)
    if source is not None:
        with open(target.rpartition(":")[0], "w") as f:
            f.write(source)
    _refused(capsys, [command, target, "--no-progress"], f"{command}: ", *words)
    assert workers == []


def test_a_file_that_crashes_at_import_is_shown_crashing_there(tmp_path):
    # A native crash at import takes the command's process with it: it said nothing at all (exit 139); now it says
    # where, the user's file and line among the frames.
    path = tmp_path / "crashing.py"
    path.write_text("import ctypes\n\nctypes.string_at(0)\n\n\ndef f():\n    pass\n")
    proc = subprocess.run([sys.executable, "-m", "benchctl", "explain", f"{path}:f", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Fatal Python error: Segmentation fault" in proc.stderr, proc.stderr
    assert f'File "{path}", line 3 in <module>' in proc.stderr, proc.stderr


def test_a_script_that_parses_its_command_line_at_import_is_told_where_to_move_it(tmp_path, capfd, workers):
    path = tmp_path / "parsing.py"
    path.write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--size', required=True)\n"
                    "p.parse_args()\ndef f():\n    pass\n")
    assert cli.main(["explain", f"{path}:f", "--no-progress"]) == ExitCode.USER_ERROR
    err = capfd.readouterr().err  # the parser's words come from the child that imports the file (fd 2)
    assert "the following arguments are required: --size" in err  # its own parser's words, then benchctl's line
    last = err.strip().splitlines()[-1]
    assert "ended the process (SystemExit: 2)" in last and "argument parsing" in last and "Traceback" not in err
    assert workers == []


@pytest.mark.parametrize("name, source, words", [
    ("f", "def f(x):\n    return x\n",
     ["f cannot be called with no argument", "missing a required argument: 'x'", "setup()"]),
    ("f", "def f(x=0, *, scale):\n    return x\n", ["missing a required argument: 'scale'"]),
    ("Model", "class Model:\n    def __init__(self, width):\n        self.width = width\n",
     ["Model cannot be called with no argument", "'width'"]),
    ("model", "import torch\nmodel = torch.nn.Linear(4, 4)\n",
     ["model is a torch.nn.Module (Linear) whose forward needs its input", "missing a required argument: 'input'",
      "def step(): return model(x)"]),
    ("f", "def f():\n    yield 1\n", ["f returns a generator", "none of its body"]),
    ("f", "async def f():\n    return 1\n", ["f returns a coroutine"]),
    ("Bench", "class Bench:\n    def setup(self):\n        return 1\n    def run(self):\n        pass\n",
     ["Bench: run cannot be called with one argument, the state setup() returned", "too many positional"]),
    ("Bench", "class Bench:\n    def setup(self, data):\n        return data\n    def run(self, state):\n"
              "        pass\n", ["Bench: setup cannot be called with no argument", "'data'"]),
    ("Bench", "class Bench:\n    def setup(self):\n        return 1\n    def run(self, state):\n        yield state\n",
     ["Bench: run returns a generator"]),
    ("Bench", "class Bench:\n    def __init__(self, size):\n        pass\n    def setup(self):\n        return 1\n"
              "    def run(self, state):\n        pass\n", ["Bench cannot be called with no argument", "'size'"]),
])
@pytest.mark.parametrize("command", ["run", "explain"])
def test_a_target_no_call_could_time_is_refused_before_any_worker(tmp_path, capsys, workers, command, name, source,
                                                                   words):
    path = tmp_path / "target.py"
    path.write_text(source)
    _refused(capsys, [command, f"{path}:{name}", "--no-progress"], f"{command}: ", *words)
    assert workers == []


def test_callables_the_forms_can_call_are_taken(tmp_path):
    from benchctl import ArgumentError, _workloads as workloads

    path = tmp_path / "fine.py"
    path.write_text("import functools\n"
                    "def f(x=1, *rest, **named):\n    return x\n"
                    "g = functools.partial(lambda x: x, 2)\n"
                    "class Bench:\n    def setup(self):\n        return 1\n"
                    "    def run(self, state, extra=0):\n        return state\n"
                    "class Static:\n    @staticmethod\n    def setup():\n        return 1\n"
                    "    @staticmethod\n    def run(state):\n        return state\n"
                    "import torch\n"
                    "class Sampler(torch.nn.Module):\n    def forward(self, n=4):\n        return torch.zeros(n)\n"
                    "sampler = Sampler()\n")
    for name in ("f", "g", "Bench", "Static", "sampler"):  # a module whose forward needs no input: taken
        assert workloads.get(f"{path}:{name}").name == f"{path}:{name}"
    assert workloads.get("time:perf_counter").name == "time:perf_counter"  # a builtin taking none
    with pytest.raises(ArgumentError, match="cannot be called with no argument"):
        workloads.get("builtins:len")


# ---- the environment ---------------------------------------------------------------------------------------


def test_a_bad_benchctl_clock_is_refused_at_first_use(monkeypatch, capsys, workers):
    monkeypatch.setattr(clock, "_refused", clock.ArgumentError("BENCHCTL_CLOCK='bogus' is not one of auto"))
    _refused(capsys, ["run", "sleep", "--no-progress"], "run: BENCHCTL_CLOCK='bogus'")
    assert workers == []
    with pytest.raises(clock.ArgumentError):
        clock.to_ns(1)


# ---- values and their units --------------------------------------------------------------------------------


@pytest.mark.parametrize("text, seconds", [("30", 30.0), ("30s", 30.0), ("2min", 120.0), ("2m", 120.0),
                                           ("1.5h", 5400.0), ("500ms", 0.5), (" 90 S ", 90.0)])
def test_a_duration_takes_a_unit(text, seconds):
    assert options.duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["30x", "3 parsecs", "", "inf", "nan", "-1", "0", "0s", "1e999"])
def test_a_duration_refuses_junk(text):
    with pytest.raises(argparse.ArgumentTypeError):
        options.duration(text)


@pytest.mark.parametrize("argv", [["run", "sleep", "--budget", "3parsecs"], ["explain", "x.py:f", "--budget", "soon"],
                                  ["run", "sleep", "--timeout", "0"]])
def test_a_bad_duration_is_a_usage_error_naming_the_flag(capsys, workers, argv):
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    err = capsys.readouterr().err
    assert done.value.code == ExitCode.USER_ERROR and f"argument {argv[2]}: " in err.splitlines()[-1]
    assert workers == []


# ---- contradictions ----------------------------------------------------------------------------------------


def test_a_key_both_a_matrix_axis_and_a_fixed_argument_is_refused(capsys, workers):
    _refused(capsys, ["run", "sleep", "--no-progress", "--set", "ms=1,2", "--arg", "ms=5"], "ms: ", "--set", "--arg")
    assert workers == []


@pytest.mark.parametrize("argv, words", [
    (["--first-rounds", "5"], ("--first-rounds 5: only with --repeat auto", "--repeat 1")),
    (["--first-rounds", "5", "--repeat", "4"], ("only with --repeat auto", "--repeat 4")),
    (["--first-rounds", "2", "--repeat", "auto"], ("--first-rounds must be >= 3", "2")),
    (["--first-rounds", "21", "--repeat", "auto"], ("--first-rounds must be at most 20",)),
])
def test_first_rounds_is_refused_outside_its_range_or_without_auto(capsys, workers, argv, words):
    _refused(capsys, ["run", "sleep", "--no-progress", "--set", "ms=1,2", *argv], *words)
    assert workers == []


@pytest.mark.parametrize("argv, words", [
    (["sleep", "--set", "ms=1,-1"], ("ms must be a finite number of milliseconds >= 0", "-1")),
    (["sleep", "--arg", "ms=nan"], ("ms must be",)),
    (["sleep", "--arg", "iterations=0"], ("iterations must be >= 1",)),
    (["matmul", "--set", "n=32,0"], ("n must be >= 1",)),
    (["matmul", "--arg", "init=ones"], ("init='ones'", "normal, zero, subnormal")),
    (["conv", "--arg", "size=-3"], ("size must be >= 1",)),
])
def test_a_built_in_workloads_bad_value_is_refused_before_any_worker(capsys, workers, argv, words):
    _refused(capsys, ["run", *argv, "--no-progress"], *words)
    assert workers == []


def test_only_a_phase_the_workload_does_not_have_is_refused_naming_its_phases(capsys, workers):
    _refused(capsys, ["run", "sleep", "--no-progress", "--set", "only=all,nosuchphase"], "only=nosuchphase",
             "its phases: sleep")
    assert workers == []


def test_only_a_phase_no_worker_timed_is_warned_after_a_run_of_a_workload_that_does_not_say_its_phases(capsys):
    doc = make_doc({"only": ["all", "nosuchphase"]}, factor=lambda c: 1.0, repeat=1, phase="call")
    options.warn_missing_phases(doc)
    assert capsys.readouterr().err == ("warning: only=nosuchphase: no worker timed a phase of that name; the phases "
                                       "timed: call\n")


def test_threads_beyond_the_cpus_are_warned(capsys):
    cpus = len(os.sched_getaffinity(0))
    options.warn_matrix({"threads": [1, cpus + 1]})
    err = capsys.readouterr().err
    assert err.startswith(f"warning: threads={cpus + 1}: more threads than the") and "CPUs" in err
    options.warn_matrix({"threads": [1]})
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", ["run", "report"])
def test_focus_not_a_matrix_key_lists_the_keys(tmp_path, capsys, workers, command):
    target = ["sleep", "--no-progress", "--set", "ms=1,2"] if command == "run" else [_results(tmp_path / "r.json")]
    _refused(capsys, [command, *target, "--focus", "nosuchkey"], "--focus nosuchkey: not a matrix key", "keys: ms")
    assert workers == []


def test_compare_of_files_with_no_cell_in_common_lists_each_sides_cells(tmp_path, capsys):
    a = _results(tmp_path / "a.json")
    doc = analyse(make_doc({"n": [7]}, factor=lambda c: 1.0), focus="n")
    document.save(doc, str(tmp_path / "b.json"))
    _refused(capsys, ["compare", a, str(tmp_path / "b.json")], "no (phase, cell) in common",
             f"{a} measured workload synthetic, phase eval: ms=1, ms=2", "b.json measured workload synthetic, phase "
             "eval: n=7")


def test_report_of_a_file_whose_workers_all_failed_exits_as_run_does(tmp_path, capsys):
    assert cli.main(["report", _results(tmp_path / "failed.json", failed=True)]) == ExitCode.FAILED
    assert cli.main(["report", _results(tmp_path / "ok.json")]) == ExitCode.OK
    capsys.readouterr()


def test_force_with_slurm_is_refused(tmp_path, capsys, workers):
    _refused(capsys, ["run", "sleep", "--executor", "slurm", "--json", str(tmp_path / "out"), "--force"],
             "--force with --executor slurm")


# ---- conventions -------------------------------------------------------------------------------------------


def test_version():
    from benchctl import __version__

    done = subprocess.run([sys.executable, "-m", "benchctl", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"benchctl {__version__}"
    script = shutil.which("benchctl", path=os.path.dirname(sys.executable))
    if script:  # the installed entry point
        done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == f"benchctl {__version__}"


def _subparsers():
    parser = cli._build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return parser, action.choices


def test_every_help_lists_the_exit_statuses_from_exit_code():
    parser, commands = _subparsers()
    for name, sub in [("benchctl", parser), *commands.items()]:
        text = " ".join(sub.format_help().split())
        for code in ExitCode:
            assert f"{int(code)} {code.meaning}" in text, (name, code)


def test_run_help_names_every_kind_of_target():
    text = " ".join(_subparsers()[1]["run"].format_help().split())
    assert "registered workload" in text and "file.py:name" in text and "package.module:name" in text


def test_json_is_a_file_everywhere_and_dash_is_stdout(tmp_path, capsys):
    for name, sub in _subparsers()[1].items():
        (json_action,) = [a for a in sub._actions if "--json" in a.option_strings] or [None]
        assert json_action is not None and json_action.metavar == "FILE" and json_action.nargs is None, name
    assert cli.main(["clock", "--json", "-"]) == ExitCode.OK
    assert "frequency_hz" in json.loads(capsys.readouterr().out)
    path = tmp_path / "clock.json"
    assert cli.main(["clock", "--json", str(path)]) == ExitCode.OK
    assert "frequency_hz" in json.loads(path.read_text()) and "frequency" in capsys.readouterr().out


def test_report_and_compare_write_a_summary(tmp_path, capsys):
    a = _results(tmp_path / "a.json")
    assert cli.main(["report", a, "--json", str(tmp_path / "report.json")]) == ExitCode.OK
    summary = json.loads((tmp_path / "report.json").read_text())
    assert summary["schema"] == "benchctl.report" and summary["matrix"] == {"ms": [1, 2]}
    assert summary["findings"] and all("status" in f for f in summary["findings"]) and summary["failed_workers"] == 0
    capsys.readouterr()
    assert cli.main(["compare", a, a, "--json", "-"]) == ExitCode.OK
    pairs = json.loads(capsys.readouterr().out)["pairs"]  # stdout holds the JSON alone
    assert [(p["phase"], p["cell"]) for p in pairs] == [("eval", {"ms": 1}), ("eval", {"ms": 2})]
    assert all(p["comparison"]["ratio"] == pytest.approx(1.0) for p in pairs)


def test_results_files_get_the_umasks_mode_and_keep_their_own(tmp_path):
    old = os.umask(0o027)
    try:
        path = _results(tmp_path / "r.json")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
        os.chmod(path, 0o604)
        document.save(document.load(path), path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o604
    finally:
        os.umask(old)


def test_a_workers_stderr_is_its_own():
    # How every worker and fork server starts: not python -m, whose runpy warns on their first stderr line.
    done = subprocess.run(forkserver.python_main("benchctl._run.worker"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == "usage: python -m benchctl._run.worker JOB.json (started by benchctl's runner)\n"


def test_a_missing_optional_package_names_its_pip_command(tmp_path, monkeypatch, capsys):
    from benchctl._workloads import resnet_order

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("torchvision", "pyperf") else found(name, *a))
    with pytest.raises(MissingPackage, match=r"needs torchvision .*: pip install 'benchctl\[seeds\]'"):
        resnet_order.check_args(dict(resnet_order.PARAMS))
    assert cli.main(["report", str(tmp_path / "any.json"), "--export", "pyperf"]) == ExitCode.UNAVAILABLE
    assert "--export pyperf needs pyperf" in capsys.readouterr().err
