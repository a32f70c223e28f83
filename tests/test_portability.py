"""The native core compiles for every architecture it claims (x86-64, aarch64,
and the portable no-counter build that unsupported architectures get).

Every source except the binding files is checked: those only bind (nothing
architecture-specific), and compiling them all would take minutes on two
cores. Sources that use pybind11 types or Python's C API (the Python-call
timing loop, the trace functions) are compiled with pybind11's and Python's
headers."""

import concurrent.futures
import glob
import os
import shutil
import subprocess
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = sorted(
    src for src in glob.glob(os.path.join(ROOT, "csrc", "*.cpp")) if not os.path.basename(src).startswith("bind")
)


def _uses_python(src):
    """Whether ``src`` or a header of ours it includes needs pybind11's or Python's headers."""
    with open(src) as f:
        text = f.read()
    ours = [open(os.path.join(ROOT, "csrc", h)).read()
            for h in (line.split('"')[1] for line in text.splitlines() if line.startswith('#include "'))]
    return any("pybind11" in t or "<Python.h>" in t for t in [text, *ours])


def _python_includes():
    import pybind11  # in the test extra

    return ["-I" + pybind11.get_include(), "-I" + sysconfig.get_paths()["include"]]


def test_there_are_native_logic_sources():
    names = {os.path.basename(src) for src in SOURCES}
    assert {"clock.cpp", "call_timer.cpp", "omp_team.cpp"} <= names


def _syntax_check(compiler, *flags):
    def check(src):
        includes = _python_includes() if _uses_python(src) else []
        return subprocess.run(
            [compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", *flags, *includes, src],
            capture_output=True,
            text=True,
        )

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = dict(zip(SOURCES, pool.map(check, SOURCES)))
    failures = {os.path.basename(src): out.stderr[-2000:] for src, out in results.items() if out.returncode != 0}
    assert not failures, failures


@pytest.mark.slow
def test_portable_no_counter_build_compiles():
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler on PATH")
    _syntax_check(compiler, "-DBENCHCTL_NO_CYCLE_COUNTER")


def test_aarch64_build_compiles():
    compiler = shutil.which("aarch64-linux-gnu-g++")
    if compiler is None:
        pytest.skip("no aarch64 cross compiler (apt-get install g++-aarch64-linux-gnu)")
    _syntax_check(compiler)
