"""Settings: parsing, validation, and the environment each one gives a worker."""

import os

import pytest

from benchctl import alloc, settings
from benchctl.settings import SettingError

SLEEP_PARAMS = {"ms": 1.0, "iterations": 5, "pause_file": "", "fail_with": ""}


def test_parse_assignment_groups_brackets():
    assert settings.parse_assignment("alloc=default,retain") == ("alloc", ["default", "retain"])
    assert settings.parse_assignment("pin=[0,1],compact") == ("pin", ["[0,1]", "compact"])
    assert settings.parse_assignment("env=[A=1,B=2],C=3") == ("env", ["[A=1,B=2]", "C=3"])
    assert settings.parse_assignment("pause_file=,/tmp/p") == ("pause_file", ["", "/tmp/p"])
    for bad in ("alloc", "=x", "pin=[0,1", "pin=0]"):
        with pytest.raises(SettingError):
            settings.parse_assignment(bad)


def test_setting_values_are_canonical():
    c = settings.canonical_value
    assert c("ftz", "OFF", {}) == "off"
    assert c("ftz", True, {}) == "process"
    assert c("threads", "2", {}) == 2
    assert c("pin", "[1,0]", {}) == [1, 0]
    assert c("pin", "Compact", {}) == "compact"
    assert c("alloc", "retain", {}) == "retain"
    assert c("env", "[B=2,A=1]", {}) == {"A": "1", "B": "2"}
    assert c("env", "none", {}) == {}
    assert c("env", "X=a=b", {}) == {"X": "a=b"}


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("ftz", "maybe", "choose one of off, thread, openmp, process"),
        ("threads", "0", "positive integer"),
        ("threads", "two", "positive integer"),
        ("pin", "[0,0]", "repeat"),
        ("pin", "[-1]", "non-negative"),
        ("pin", "diagonal", "choose one of off, compact, scatter"),
        ("alloc", "mimalloc", "choose one of default, retain, jemalloc, tcmalloc"),
        ("alloc", "", "choose one of"),
        ("env", "NOEQUALS", "NAME=VALUE"),
    ],
)
def test_bad_setting_values(key, value, message):
    with pytest.raises(SettingError, match=message):
        settings.canonical_value(key, value, {})


def test_workload_parameters_are_typed_like_their_defaults():
    m = settings.canonical_matrix({"ms": ["1", "2.5"], "iterations": ["3"], "fail_with": ["x"]}, SLEEP_PARAMS)
    assert m == {"ms": [1.0, 2.5], "iterations": [3], "fail_with": ["x"]}
    assert settings.canonical_matrix({"ms": [1]}, SLEEP_PARAMS) == {"ms": [1.0]}
    with pytest.raises(SettingError, match="expected int"):
        settings.canonical_matrix({"iterations": ["many"]}, SLEEP_PARAMS)


def test_unknown_key_names_settings_and_parameters():
    known = (r"alloc, anomaly, autocast_cache, busy, clamp, cuda_init, cudnn_benchmark, deterministic, env, ftz, "
             r"gc, grad_hooks, hooks, inference, isa, matmul_precision, mkldnn, modes, omp_wait, only, parametrize, "
             r"pin, pools, profiler, saved_hooks, sync, thp, threads, tracing, train_mode, with")
    with pytest.raises(SettingError, match=rf"'speed' is neither a setting \({known}\).*ms"):
        settings.canonical_matrix({"speed": [1]}, SLEEP_PARAMS)


def test_duplicate_and_empty_values_rejected():
    with pytest.raises(SettingError, match="repeats a value"):
        settings.canonical_matrix({"alloc": ["retain", "RETAIN"]}, {})
    with pytest.raises(SettingError, match="no values"):
        settings.canonical_matrix({"alloc": []}, {})


def test_retain_sets_tunables_and_keeps_unrelated_ones():
    base = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.cpu.hwcaps=-AVX512F", "PATH": "/bin"}
    env = settings.cell_environment({"alloc": "retain"}, base)
    tunables = env["GLIBC_TUNABLES"].split(":")
    assert "glibc.cpu.hwcaps=-AVX512F" in tunables
    assert "glibc.malloc.arena_max=2" not in tunables  # alloc owns every malloc tunable
    for name, value in alloc.RETAIN_TUNABLES.items():
        assert f"{name}={value}" in tunables
    assert env["PATH"] == "/bin"
    assert base["GLIBC_TUNABLES"].startswith("glibc.malloc.arena_max")  # caller's dict untouched


def test_default_removes_inherited_allocator_state():
    base = {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1", "LD_PRELOAD": "/opt/libjemalloc.so.2 /opt/libother.so"}
    env = settings.cell_environment({"alloc": "default"}, base)
    assert "GLIBC_TUNABLES" not in env
    assert env["LD_PRELOAD"] == "/opt/libother.so"


def test_missing_preload_library_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(alloc, "_library_dirs", lambda: [str(tmp_path)])
    with pytest.raises(SettingError, match="libjemalloc.so.2 is not installed: apt-get install libjemalloc2"):
        settings.cell_environment({"alloc": "jemalloc"}, {})
    with pytest.raises(SettingError, match="apt-get install libgoogle-perftools4"):
        settings.cell_environment({"alloc": "tcmalloc"}, {})


def test_preload_library_discovery(monkeypatch, tmp_path):
    lib = tmp_path / "libjemalloc.so.2"
    lib.write_bytes(b"")
    monkeypatch.setattr(alloc, "_library_dirs", lambda: [str(tmp_path / "nowhere"), str(tmp_path)])
    env = settings.cell_environment({"alloc": "jemalloc"}, {"LD_PRELOAD": "/opt/libother.so"})
    assert env["LD_PRELOAD"].split() == [os.path.realpath(lib), "/opt/libother.so"]


def test_two_settings_setting_one_variable_is_an_error():
    with pytest.raises(SettingError, match="both set GLIBC_TUNABLES"):
        settings.cell_environment({"alloc": "retain", "env": {"GLIBC_TUNABLES": "x=1"}}, {})


def test_threads_sizes_pools_at_start():
    env = settings.cell_environment({"threads": 3}, {"OMP_NUM_THREADS": "8"})
    assert env["OMP_NUM_THREADS"] == "3" and env["MKL_NUM_THREADS"] == "3"


def test_extra_environment():
    env = settings.cell_environment({"env": {"A": "1", "B": "x y"}}, {"A": "0"})
    assert env["A"] == "1" and env["B"] == "x y"


def test_cell_label_and_split():
    cell = {"order": "eval_only", "alloc": "retain", "pin": [0, 1], "env": {}}
    assert settings.cell_label(cell) == "order=eval_only alloc=retain pin=[0,1] env=none"
    assert settings.split_cell(cell) == ({"alloc": "retain", "pin": [0, 1], "env": {}}, {"order": "eval_only"})


def test_settings_this_machine_cannot_apply_fail_before_running(monkeypatch):
    from benchctl import fpenv

    monkeypatch.setattr(fpenv, "supported", lambda: (False, "no FP control register on this CPU"))
    with pytest.raises(SettingError, match="ftz cannot be applied here: no FP control register"):
        settings.check_available({"alloc": ["default"], "ftz": ["off", "process"]})
    settings.check_available({"alloc": ["default"], "ms": [1.0]})  # environment-only settings need nothing


@pytest.mark.parametrize("cell", [
    {"alloc": "default", "env": {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}},
    {"env": {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}, "alloc": "default"},
    {"alloc": "default", "env": {"MALLOC_TRIM_THRESHOLD_": "0"}},
    {"env": {"MALLOC_TRIM_THRESHOLD_": "0"}, "alloc": "retain"},
])
def test_env_may_not_set_what_alloc_decides_in_either_key_order(cell):
    with pytest.raises(SettingError, match="both set (GLIBC_TUNABLES|MALLOC_TRIM_THRESHOLD_)"):
        settings.cell_environment(cell, {})


def test_default_strips_glibc_malloc_environment_knobs():
    base = {"MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_MMAP_THRESHOLD_": "1", "MALLOC_TOP_PAD_": "9",
            "MALLOC_ARENA_MAX": "2", "PATH": "/bin"}
    assert settings.cell_environment({"alloc": "default"}, base) == {"PATH": "/bin"}


def test_settings_that_agree_on_a_variable_are_not_a_conflict():
    env = settings.cell_environment({"threads": 2, "env": {"OMP_NUM_THREADS": "2"}}, {})
    assert env["OMP_NUM_THREADS"] == "2"
    with pytest.raises(SettingError, match="both set OMP_NUM_THREADS"):
        settings.cell_environment({"env": {"OMP_NUM_THREADS": "3"}, "threads": 2}, {})


def test_with_combines_settings_as_one_value():
    params = {"ms": 1.0}
    assert settings.canonical_value("with", "none", params) == {}
    assert settings.canonical_value("with", "[threads=1,alloc=retain]", params) == {"alloc": "retain", "threads": 1}
    matrix = settings.canonical_matrix({"with": ["none", "[ftz=process]", "[pin=[0,1]]"]}, params)
    assert matrix == {"with": [{}, {"ftz": "process"}, {"pin": [0, 1]}]}
    assert settings.cell_label({"with": {"pin": [0, 1]}}) == "with=[pin=[0,1]]"
    assert settings.split_cell({"with": {"ftz": "process"}, "ms": 2.0}) == ({"ftz": "process"}, {"ms": 2.0})
    env = settings.cell_environment({"with": {"alloc": "retain"}}, {})
    assert "glibc.malloc.mmap_threshold" in env["GLIBC_TUNABLES"]
    with pytest.raises(SettingError, match="'speed' is not a setting that can be combined"):
        settings.canonical_value("with", "[speed=2]", params)
    with pytest.raises(SettingError, match="both an axis and inside a with"):
        settings.canonical_matrix({"ftz": ["off"], "with": [{}, {"ftz": "process"}]}, params)


def test_only_and_busy():
    assert settings.canonical_value("only", "eval", {}) == "eval"
    env = settings.cell_environment({"only": "eval"}, {settings.ONLY_PHASE_ENV: "train"})
    assert env[settings.ONLY_PHASE_ENV] == "eval"
    assert settings.ONLY_PHASE_ENV not in settings.cell_environment({"only": "all"}, {settings.ONLY_PHASE_ENV: "x"})
    with pytest.raises(SettingError, match="name one phase"):
        settings.canonical_value("only", "a,b", {})
    assert settings.canonical_value("busy", "POOL", {}) == "pool"
    with pytest.raises(SettingError, match="choose one of off, pool"):
        settings.canonical_value("busy", "yes", {})


def test_the_busy_pool_runs_and_stops():
    from benchctl import _contention as contention

    state = contention.start_busy_pool(threads=1)
    try:
        assert state["running"] and state["pool_threads"] == 1
        import time

        deadline = time.monotonic() + 10
        while contention.busy_pool_state()["products"] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert contention.busy_pool_state()["products"] >= 3
    finally:
        assert not contention.stop_busy_pool()["running"]


def test_the_busy_pool_pauses_while_the_process_forks():
    # A DataLoader of two workers, forked three times beside the busy pool: they hung (3 of 3 here) while a product
    # ran through the fork; the pool now pauses between products until the fork is done.
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import time
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        from benchctl import _contention as contention
        contention.start_busy_pool()
        data = TensorDataset(torch.randn(128, 8))
        for _ in range(3):
            assert sum(len(x) for (x,) in DataLoader(data, batch_size=32, num_workers=2)) == 128
        before = contention.busy_pool_state()["products"]
        time.sleep(0.2)
        assert contention.busy_pool_state()["products"] > before  # resumed after the forks
        print("done")
        """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # a hung run's DataLoader workers are killed with it
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail("the DataLoader forked beside the busy pool hung")
    assert proc.returncode == 0 and out.strip() == "done", err[-2000:]
