"""The native core compiles for every architecture it claims (x86-64, aarch64,
and the portable no-counter build that unsupported architectures get).

Only the sources that hold native logic are checked: binding files only bind
(they include pybind11 and nothing architecture-specific), and compiling them
would take minutes on two cores."""

import glob
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = sorted(
    src
    for src in glob.glob(os.path.join(ROOT, "csrc", "*.cpp"))
    if not os.path.basename(src).startswith("bind") and "pybind11" not in open(src).read()
)


def test_there_are_native_logic_sources():
    assert any(src.endswith("clock.cpp") for src in SOURCES)


def _syntax_check(compiler, *flags):
    failures = {}
    for src in SOURCES:
        out = subprocess.run(
            [compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", *flags, src],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            failures[os.path.basename(src)] = out.stderr[-2000:]
    assert not failures, failures


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
