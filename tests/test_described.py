"""The user's code described by a child process: benchctl's own process gets a workload's parameters and the user's
errors without importing the code, so that nothing its import starts runs beside the workers."""

import sys
import textwrap
import threading

import pytest

from benchctl import _workloads as workloads
from benchctl._validate import ArgumentError
from benchctl._workloads import TargetImportError, described


@pytest.fixture(autouse=True)
def _fresh_cache():
    described._described.cache_clear()
    yield
    described._described.cache_clear()


def _file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_a_target_is_described_without_running_its_import_here(tmp_path):
    # Its import starts a thread that spins in pure Python and allocates: in benchctl's own process, the contention
    # gate read that thread as another program's load beside every worker.
    path = _file(tmp_path, "spins.py", """
        import threading

        held = bytearray(64 << 20)


        def _spin():
            while True:
                pass


        threading.Thread(target=_spin, daemon=True).start()


        def step(scale=2):
            return scale
    """)
    threads, modules = threading.active_count(), set(sys.modules)
    wl = described.describe(f"{path}:step")
    assert wl.params == {"iterations": 30, "seconds": 0.0} and wl.help.endswith("one call per iteration (phase 'call')")
    assert threading.active_count() == threads and set(sys.modules) == modules
    wl.check_args(wl.resolve_args({"iterations": 3}))
    with pytest.raises(ArgumentError, match="iterations"):
        wl.check_args(wl.resolve_args({"iterations": 0}))
    with pytest.raises(RuntimeError, match="in the workers only"):
        wl.fn({}, None)
    assert described.describe(f"{path}:step") is wl  # one child per target and folder in a process


def test_a_decorated_workload_keeps_its_own_parameters(tmp_path):
    path = _file(tmp_path, "decorated.py", """
        import benchctl


        @benchctl.workload(params={"size": 8, "mode": "fast"})
        def bench(rec, size, mode):
            pass
    """)
    wl = described.describe(f"{path}:bench")
    assert wl.params == {"size": 8, "mode": "fast"} and wl.check is None


@pytest.mark.parametrize("text, target_part, error, words", [
    ("def other():\n    pass\n", ":missing", ArgumentError, "has no 'missing'"),
    ("raise ValueError('broken at import')\n", ":step", TargetImportError, "ValueError: broken at import"),
    ("import sys\nsys.exit(3)\n", ":step", TargetImportError, "ended the process (SystemExit: 3)"),
    ("def step(x):\n    pass\n", ":step", ArgumentError, "missing a required argument: 'x'"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", ":step", TargetImportError,
     "ended its process (signal 9)"),
])
def test_the_users_errors_are_raised_as_the_child_found_them(tmp_path, text, target_part, error, words):
    path = _file(tmp_path, "bad.py", text)
    modules = set(sys.modules)
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        described.describe(f"{path}{target_part}")
    assert set(sys.modules) == modules


def test_a_built_in_workload_is_given_as_registered():
    assert described.describe("resnet_order") is workloads.get("resnet_order")
