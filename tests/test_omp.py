"""Reaching every thread of a loaded OpenMP team through the runtime's own fork call."""

import os
import subprocess
import sys
import threading
import textwrap

import pytest
import torch

from benchctl import _native, omp


def test_torch_bundled_runtime_is_found():
    found = omp.runtimes()
    assert found, "torch is imported, so an OpenMP runtime must be loaded"
    rt = omp.torch_runtime()
    assert rt in found
    assert rt["kind"] in ("libgomp", "libiomp5", "libomp")
    assert os.path.exists(rt["path"])


@pytest.mark.parametrize("path,kind", [
    ("/x/torch/lib/libgomp.so.1", "libgomp"),
    ("/x/torch.libs/libgomp-a34b3233.so.1", "libgomp"),
    ("/opt/intel/lib/libiomp5.so", "libiomp5"),
    ("/usr/lib/x86_64-linux-gnu/libomp.so.5", "libomp"),
    ("/usr/lib/llvm-14/lib/libomp-8c2b.so", "libomp"),
    ("/usr/lib/llvm-14/lib/libomptarget.so", None),
    ("/usr/lib/libgomp-plugin-nvptx.so.1", None),
    ("/usr/lib/libgompwrapper.so", None),
    ("/lib/x86_64-linux-gnu/libc.so.6", None),
])
def test_runtime_kind_by_file_name(path, kind):
    assert omp.runtime_kind(path) == kind


def test_loaded_libraries_are_what_runtimes_classifies():
    loaded = _native.loaded_libraries()
    assert any(os.path.basename(p).startswith("libc.so") for p in loaded), loaded
    torch_lib = os.path.dirname(os.path.realpath(torch.__file__))
    assert any(os.path.realpath(p).startswith(torch_lib) for p in loaded), "torch's own libraries are loaded"
    assert omp.runtimes() == [{"kind": omp.runtime_kind(p), "path": p} for p in loaded if omp.runtime_kind(p)]


def test_team_census_reaches_distinct_threads_of_this_process():
    members = omp.team_census(3)
    assert [m["omp_thread"] for m in members] == [0, 1, 2]
    tids = [m["tid"] for m in members]
    assert len(set(tids)) == 3
    assert tids[0] == threading.get_native_id(), "the caller is the team's master thread"
    assert set(tids) <= {int(t) for t in os.listdir("/proc/self/task")}
    assert all(m["cpu"] in os.sched_getaffinity(0) for m in members)


def test_team_is_the_pool_torch_computes_on():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.ones(1 << 20).mul_(2)  # a parallel op starts torch's pool
        default_team = omp.team_census()  # 0: torch's current setting
        assert len(default_team) == 2
        # The same pool threads answer each time: the runtime reuses them.
        again = omp.team_census()
        assert [m["tid"] for m in again] == [m["tid"] for m in default_team]
    finally:
        torch.set_num_threads(previous)


def test_bad_arguments_and_unloaded_runtime_raise():
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        omp.team_census(-1)
    for bad in (2.5, True, "2"):
        with pytest.raises(TypeError, match="num_threads must be an integer"):
            omp.team_census(bad)
    with pytest.raises(RuntimeError, match="not loaded"):
        _native.omp_team_members("libgomp", "/nonexistent/libgomp.so.1", 1)
    with pytest.raises(RuntimeError, match="unknown OpenMP runtime kind"):
        rt = omp.torch_runtime()
        _native.omp_team_members("libweird", rt["path"], 1)


def test_no_torch_team_without_torch():
    code = ("from benchctl import omp\nprint(omp.torch_runtime())\n"
            "try:\n    omp.team_census()\nexcept RuntimeError as e:\n    print('error:', e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "None"
    assert "import torch first" in out.stdout


def test_llvm_openmp_runtime_team(llvm_libomp):
    path = llvm_libomp
    code = textwrap.dedent(
        f"""
        import ctypes, json
        ctypes.CDLL({path!r}, mode=ctypes.RTLD_GLOBAL)
        from benchctl import omp
        rt = [r for r in omp.runtimes() if r["kind"] == "libomp"][0]
        print(json.dumps(omp.team_census(3, runtime=rt)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import json

    members = json.loads(out.stdout)
    assert [m["omp_thread"] for m in members] == [0, 1, 2]
    assert len({m["tid"] for m in members}) == 3
