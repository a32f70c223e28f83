"""Metadata: every promised fact present, true to the system, and JSON."""

import json
import os
import platform
import shutil
import subprocess

import pytest

from benchctl._system import metadata

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def collected():
    return metadata.collect()


def test_collect_is_json_and_has_every_section(collected):
    json.dumps(collected)
    for key in ("collected_at", "command_line", "load_average", *metadata.SECTIONS):
        assert key in collected, key
    for name in metadata.SECTIONS:
        section = collected[name]
        assert not (isinstance(section, dict) and "error" in section), (name, section)


def test_cpu_section_matches_proc_cpuinfo(collected):
    with open("/proc/cpuinfo") as f:
        text = f.read()
    cpu = collected["cpu"]
    if "vendor_id" in text:
        assert f"vendor_id\t: {cpu['vendor']}" in text
        assert f"model name\t: {cpu['model_name']}" in text
        assert cpu["family"] and cpu["model"]
    flags_line = next(line for line in text.splitlines() if line.startswith(("flags", "Features")))
    flags = set(flags_line.split(":")[1].split())
    assert set(cpu["flags_of_interest"]) <= flags
    assert {f for f in flags if f.startswith("avx512")} <= set(cpu["flags_of_interest"])
    assert ("constant_tsc" in flags) == ("constant_tsc" in cpu["flags_of_interest"])


def test_topology_and_system_facts_match_the_os(collected):
    topo = collected["topology"]
    assert topo["allowed_cpus"] == sorted(os.sched_getaffinity(0))
    assert topo["logical_cpus"] == os.cpu_count()
    assert 1 <= topo["cores"] <= topo["logical_cpus"]
    assert topo["cores"] * topo["threads_per_core"] >= topo["logical_cpus"]
    assert collected["kernel"]["release"] == platform.release()
    assert collected["python"]["version"] == platform.python_version()
    assert len(collected["load_average"]) == 3
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
        assert collected["clocksource"]["current"] == f.read().strip()
    for key in ("governors", "turbo", "cpufreq_visible"):
        assert key in collected["frequency"]
    assert "isolated" in collected["isolation"]


def test_libraries_torch_and_threadpools(collected):
    pkgs = collected["packages"]
    assert pkgs["torch_runtime_version"] == torch.__version__
    assert pkgs["torchvision"] is not None
    assert pkgs["torch_parallel_info"] == torch.__config__.parallel_info()
    assert pkgs["torch_num_threads"] == torch.get_num_threads()
    assert collected["libc"]["gnu_libc_version"] in (None, os.confstr("CS_GNU_LIBC_VERSION"))
    from threadpoolctl import threadpool_info
    assert {p["filepath"] for p in collected["threadpools"]} <= {p["filepath"] for p in threadpool_info()}
    if "OpenMP" in pkgs["torch_parallel_info"]:
        assert any(p["user_api"] == "openmp" for p in collected["threadpools"])


def test_clock_and_counters_are_described(collected):
    from benchctl import clock
    assert collected["clock"]["source"] == clock.info()["source"]
    counters = collected["counters"]
    assert set(counters["available"]) >= {"minor_faults", "cycles"}
    assert all(name in counters["unavailable"] for name, ok in counters["available"].items() if not ok)


def test_environment_keeps_only_relevant_variables(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4294967296")
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    monkeypatch.setenv("BENCHCTL_UNRELATED_TEST_VAR", "x")
    monkeypatch.setenv("HOME_SOMETHING_ELSE", "y")
    env = metadata.environment()
    assert env["OMP_NUM_THREADS"] == "3"
    assert env["GLIBC_TUNABLES"].startswith("glibc.malloc")
    assert env["MALLOC_ARENA_MAX"] == "2"
    assert "HOME_SOMETHING_ELSE" not in env


def git(cwd, *args):
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_git_revision_of_the_checkout():
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    here = os.path.dirname(os.path.dirname(os.path.realpath(metadata.__file__)))
    top = subprocess.run(["git", "-C", here, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    rev = metadata.git_revision()
    if top.returncode != 0 or os.path.realpath(os.path.join(top.stdout.strip(), "pyext", "benchctl")) != here:
        assert rev is None, "installed outside a benchctl checkout"
    else:
        assert rev["commit"] == git(here, "rev-parse", "HEAD")
        assert isinstance(rev["dirty"], bool)


def test_git_revision_only_of_benchctls_own_checkout(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(tmp_path, "init", "-q")
    own = tmp_path / "pyext" / "benchctl"
    installed = tmp_path / "venv" / "lib" / "site-packages" / "benchctl"
    for package in (own, installed):
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
    git(tmp_path, "add", "pyext")
    git(tmp_path, "commit", "-q", "-m", "x")
    rev = metadata.git_revision(str(own))
    assert rev["commit"] == git(tmp_path, "rev-parse", "HEAD") and rev["dirty"] is False
    # A copy installed somewhere inside another project's checkout is not that project.
    assert metadata.git_revision(str(installed)) is None
    assert metadata.git_revision(str(tmp_path)) is None


def test_cores_are_sibling_sets_not_core_ids(tmp_path):
    # One socket of two dies whose core_ids both run 0, 1 (as on multi-die
    # parts): four cores, which a count of (package, core_id) calls two.
    cpu_dir = tmp_path / "devices" / "system" / "cpu"
    for cpu in range(4):
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text("0\n")
        (topo / "core_id").write_text(f"{cpu % 2}\n")
        (topo / "thread_siblings_list").write_text(f"{cpu}\n")
    (cpu_dir / "online").write_text("0-3\n")
    topo = metadata.topology(str(tmp_path))
    assert (topo["logical_cpus"], topo["cores"], topo["sockets"], topo["threads_per_core"]) == (4, 4, 1, 1)


def test_cpu_model_is_the_cpu_sections_model():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    model = metadata.cpu_model()
    assert model == metadata.cpu()["model_name"]
    if "model name" in text:
        assert f"model name\t: {model}\n" in text


def test_a_failing_section_is_recorded_not_raised(monkeypatch):
    def broken():
        raise OSError("sysfs is gone")
    monkeypatch.setitem(metadata.SECTIONS, "frequency", broken)
    out = metadata.collect()
    assert out["frequency"] == {"error": "OSError: sysfs is gone"}
    assert "model_name" in out["cpu"]


