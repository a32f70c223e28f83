"""Thread counts and pinning of torch's OpenMP team, read back from the kernel.

These tests change the masks and thread counts of the pytest process itself;
the ``restore`` fixture puts every thread back whatever happens.
"""

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

from benchctl import _loaded_objects, _native, omp, threads
from benchctl.placement import placement
from benchctl.topology import cpu_topology

ALLOWED = sorted(os.sched_getaffinity(0))
TEAM = min(4, len(ALLOWED))
needs_two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning distinct CPUs needs two allowed CPUs")


def all_masks():
    masks = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            masks[int(tid)] = os.sched_getaffinity(int(tid))
        except ProcessLookupError:
            pass
    return masks


def masks_unchanged(before):
    """Every thread that still exists has the mask it had (threads come and go meanwhile)."""
    now = all_masks()
    return {t: now[t] for t in before if t in now} == {t: m for t, m in before.items() if t in now}


def team(records):
    return [r for r in records if r["omp_thread"] is not None]


def parallel_op(x=None):
    # Elementwise work over far more than torch's grain size: split across the team (a test that weighs the
    # threads' shares makes x first, so that only the split ops fall in what it weighs).
    x = torch.rand(1 << 22) if x is None else x
    for _ in range(5):
        torch.exp(x, out=x).mul_(1e-3)


@pytest.fixture
def restore():
    """A team of TEAM threads; afterwards every thread's mask and the thread count as they were."""
    before_count = torch.get_num_threads()
    main_mask = os.sched_getaffinity(0)
    before = all_masks()
    torch.set_num_threads(TEAM)
    try:
        yield before
    finally:
        threads.unpin()
        for tid, mask in all_masks().items():
            try:
                os.sched_setaffinity(tid, before.get(tid, main_mask))
            except ProcessLookupError:
                pass
        torch.set_num_threads(before_count)


@needs_two_cpus
def test_compact_pins_each_team_thread_to_its_own_cpu(restore):
    result = threads.pin("compact")
    members = team(result)
    assert [m["omp_thread"] for m in members] == list(range(TEAM))
    assert members[0]["tid"] == threading.get_native_id(), "the calling thread is pinned as thread 0"
    expected = placement("compact", TEAM, cpu_topology(allowed=ALLOWED))
    assert [m["allowed_cpus"] for m in members] == [[c] for c in expected]
    assert len({m["allowed_cpus"][0] for m in members}) == TEAM
    if ALLOWED == [0, 1]:
        assert [m["allowed_cpus"] for m in members] == [[0], [1]]
    # The kernel reports the same masks, and the threads run where they are pinned.
    assert [sorted(os.sched_getaffinity(m["tid"])) for m in members] == [m["allowed_cpus"] for m in members]
    parallel_op()
    after = team(threads.census())
    assert [m["tid"] for m in after] == [m["tid"] for m in members]
    assert [[m["current_cpu"]] for m in after] == [m["allowed_cpus"] for m in after]


@needs_two_cpus
def test_unpin_restores_every_original_mask_exactly(restore):
    # Start from masks unlike the default so "restored" cannot mean "reset to all".
    threads.pin(list(reversed(ALLOWED[:TEAM])))
    original = {r["tid"]: r["allowed_cpus"] for r in team(threads.census())}
    threads.unpin()
    for tid in original:
        if tid != threading.get_native_id():  # the caller keeps every CPU: placement draws on its mask
            os.sched_setaffinity(tid, ALLOWED[:1])
    before = all_masks()
    threads.pin("compact")
    threads.pin("scatter")  # re-pinning keeps the masks from before the first pin
    result = threads.unpin()
    assert masks_unchanged(before)
    assert {r["tid"]: set(r["allowed_cpus"]) for r in team(result)} == {t: before[t] for t in original}


@needs_two_cpus
def test_explicit_list_pins_in_order(restore):
    cpus = list(reversed(placement("compact", TEAM, cpu_topology(allowed=ALLOWED))))
    members = team(threads.pin(cpus))
    assert [m["allowed_cpus"] for m in members] == [[c] for c in cpus]
    parallel_op()
    assert [m["current_cpu"] for m in team(threads.census())] == cpus


@needs_two_cpus
def test_invalid_input_raises_and_changes_nothing(restore):
    before = all_masks()
    bad = [
        (ALLOWED[:1] + [max(ALLOWED) + 1000] + ALLOWED[2:TEAM], "outside this process's allowed CPUs"),
        ("tight", "unknown pinning policy"),
        (ALLOWED[:1], "one CPU per thread"),
        ([ALLOWED[0]] * TEAM, "several threads"),
    ]
    for policy, message in bad:
        with pytest.raises(ValueError, match=message):
            threads.pin(policy)
        assert masks_unchanged(before)
    torch.set_num_threads(len(ALLOWED) + 1)
    with pytest.raises(ValueError, match="only .* allowed CPUs"):
        threads.pin("compact")
    assert masks_unchanged(before)


@needs_two_cpus
def test_native_failure_midway_rolls_back_threads_already_pinned(restore):
    rt = omp.torch_runtime()
    before = all_masks()
    impossible = max(ALLOWED) + 1000  # no such CPU: the kernel refuses this one thread's mask
    # The thread given ALLOWED[0] succeeds, so a rollback is needed, in either order.
    for masks in ([[ALLOWED[0]], [impossible]], [[impossible], [ALLOWED[0]]]):
        with pytest.raises(RuntimeError, match="previous masks restored.*Invalid argument"):
            _native.omp_team_pin(rt["kind"], rt["path"], masks)
        assert masks_unchanged(before)
    with pytest.raises(ValueError, match="negative CPU id"):
        _native.omp_team_pin(rt["kind"], rt["path"], [[0], [-1]])


@needs_two_cpus
def test_pinned_restores_after_an_exception_and_nests(restore):
    before = all_masks()
    with pytest.raises(KeyError):
        with threads.pinned("compact") as result:
            assert all(len(m["allowed_cpus"]) == 1 for m in team(result))
            raise KeyError("inside")
    assert masks_unchanged(before)
    outer = team(threads.pin("compact"))
    with threads.pinned(list(reversed(ALLOWED[:TEAM]))):
        pass
    assert [m["allowed_cpus"] for m in team(threads.census())] == [m["allowed_cpus"] for m in outer]
    threads.unpin()
    assert masks_unchanged(before)


@needs_two_cpus
def test_unpin_frees_team_threads_that_joined_while_pinned(restore):
    before = all_masks()
    first_cpu = team(threads.pin("compact"))[0]["allowed_cpus"]
    torch.set_num_threads(TEAM + 6)
    grown = team(threads.census())
    joined = [m for m in grown if m["tid"] not in before]
    if not joined:
        pytest.skip("the runtime's pool already had enough threads; none was created while pinned")
    # New workers inherit the creating thread's mask: the pinned one.
    assert all(m["allowed_cpus"] == first_cpu for m in joined)
    threads.unpin()
    assert all(os.sched_getaffinity(m["tid"]) == before[threading.get_native_id()] for m in joined)


def schedstat_ns(tid):
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])


@needs_two_cpus
def test_set_num_threads_one_then_restore(restore):
    two = threads.set_num_threads(2)
    assert (two["torch"], two["omp_team"]) == (2, 2)
    main, worker = (m["tid"] for m in omp.team_census())

    one = threads.set_num_threads(1)
    assert (one["torch"], one["omp_team"]) == (1, 1)
    assert one["pools"] and all(p["num_threads"] == 1 for p in one["pools"])
    assert one.pop("mismatches") == []
    assert threads.get_num_threads() == one

    def cpu_time_during_op():
        # libgomp's idle worker spins ~8 ms after the team's last region before it sleeps (its spin count):
        # the count is what is checked here, so the op starts after that spin.
        x = torch.rand(1 << 22)
        time.sleep(0.05)
        start = schedstat_ns(main), schedstat_ns(worker)
        # Tens of ms: on an Intel Xeon one op took 4 ms on two threads, and the two threads' schedstat times over
        # one op split anywhere from 0.4x to 2.4x (the worker 9% and 18% of the caller's in two failed runs).
        for _ in range(10):
            parallel_op(x)
        return schedstat_ns(main) - start[0], schedstat_ns(worker) - start[1]

    main_ns, worker_ns = cpu_time_during_op()
    assert worker_ns < 0.25 * main_ns, "with one thread the pool's worker stays idle"

    again = threads.set_num_threads(2)
    assert (again["torch"], again["omp_team"]) == (2, 2)
    assert all(p["num_threads"] == 2 for p in again["pools"])
    main_ns, worker_ns = cpu_time_during_op()
    assert worker_ns > 0.2 * main_ns, "with two threads the worker takes its share"


def test_set_num_threads_rejects_bad_counts():
    for bad in (0, -1):
        with pytest.raises(ValueError, match="n must be >= 1"):
            threads.set_num_threads(bad)
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="n must be an integer"):
            threads.set_num_threads(bad)
    with pytest.raises(ValueError, match="interop must be >= 1"):
        threads.set_num_threads(1, interop=0)


def run_python(code, env=None):
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def result_of(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_interop_count_in_a_fresh_process_and_the_refusal_after():
    proc = run_python(
        """
        import json, torch
        from benchctl import threads
        first = threads.set_num_threads(1, interop=1)
        try:
            threads.set_num_threads(2, interop=2)
            refusal = None
        except RuntimeError as e:
            refusal = str(e)
        print(json.dumps({"first": first, "refusal": refusal, "after": threads.get_num_threads()}))
        """
    )
    out = result_of(proc)
    assert (out["first"]["torch"], out["first"]["interop"]) == (1, 1)
    assert out["refusal"] is not None and "fresh process" in out["refusal"] and "Nothing was changed" in out["refusal"]
    assert (out["after"]["torch"], out["after"]["interop"]) == (1, 1), "a refused call changes nothing"


CENSUS_CODE = """
    import json, torch
    from benchctl import threads
    torch.rand(1 << 22).exp_()
    print(json.dumps([[r["omp_thread"], r["allowed_cpus"]] for r in threads.census() if r["omp_thread"] is not None]))
"""


@needs_two_cpus
def test_launch_env_gives_a_fresh_process_the_pinned_placement(restore):
    # (scatter differs from compact only on several sockets: test_placement covers its order)
    policies = ["compact", list(reversed(ALLOWED[:TEAM]))]
    envs = [threads.launch_env(p, TEAM) for p in policies]
    procs = [run_python(CENSUS_CODE, env) for env in envs]  # fresh processes, run side by side
    in_process = []
    for policy in policies:
        in_process.append([[m["omp_thread"], m["allowed_cpus"]] for m in team(threads.pin(policy))])
        threads.unpin()
    for env, proc, expected in zip(envs, procs, in_process):
        assert env["OMP_NUM_THREADS"] == str(TEAM)
        assert result_of(proc) == expected, env


def test_launch_env_per_runtime_and_bad_input():
    cpus = placement("compact", 1, cpu_topology(allowed=ALLOWED))
    gomp = threads.launch_env("compact", 1, runtime_kind="libgomp")
    assert gomp == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_PLACES": f"{{{cpus[0]}}}",
                    "OMP_PROC_BIND": "close"}
    intel = threads.launch_env([ALLOWED[-1]], 1, runtime_kind="libiomp5")
    assert intel["KMP_AFFINITY"] == f"granularity=fine,proclist=[{ALLOWED[-1]}],explicit"
    assert "OMP_PLACES" not in intel
    with pytest.raises(ValueError, match="unknown OpenMP runtime kind"):
        threads.launch_env("compact", 1, runtime_kind="libfoo")
    with pytest.raises(ValueError, match="allowed CPUs"):
        threads.launch_env("compact", len(ALLOWED) + 1)
    with pytest.warns(RuntimeWarning, match="oversubscribed"):
        env = threads.launch_env("compact", len(ALLOWED) + 1, oversubscribe=True)
    assert env["OMP_NUM_THREADS"] == str(len(ALLOWED) + 1)


def test_census_lists_every_thread_team_first():
    before = {int(t) for t in os.listdir("/proc/self/task")}
    records = threads.census()
    after = {int(t) for t in os.listdir("/proc/self/task")}
    tids = [r["tid"] for r in records]
    assert len(tids) == len(set(tids))
    assert before & after <= set(tids) <= before | after, "every thread, each once"
    members = team(records)
    assert records[: len(members)] == members
    assert [m["omp_thread"] for m in members] == list(range(torch.get_num_threads()))
    for r in records:
        assert set(r) == {"omp_thread", "tid", "name", "allowed_cpus", "current_cpu"}
        assert r["current_cpu"] in r["allowed_cpus"] or r["omp_thread"] is None
        assert isinstance(r["name"], str)


@needs_two_cpus
def test_llvm_runtime_pinning_and_its_launch_env(llvm_libomp):
    """The __kmpc_fork_call path pins too, and KMP_AFFINITY / OMP_PLACES bind a fresh libomp team."""
    path = llvm_libomp
    code = f"""
        import ctypes, json, os, sys
        ctypes.CDLL({path!r}, mode=ctypes.RTLD_GLOBAL)
        from benchctl import _native, omp
        rt = [r for r in omp.runtimes() if r["kind"] == "libomp"][0]
        if sys.argv[-1] == "pin":
            pinned = _native.omp_team_pin(rt["kind"], rt["path"], [[c] for c in {ALLOWED[1::-1]!r}])
            print(json.dumps([member.after for member in pinned]))
        else:
            print(json.dumps([sorted(os.sched_getaffinity(m["tid"])) for m in omp.team_census(2, runtime=rt)]))
    """
    cpus = [ALLOWED[1], ALLOWED[0]]
    procs = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), "pin"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        run_python(code, threads.launch_env(cpus, 2, runtime_kind="libiomp5")),
        run_python(code, threads.launch_env(cpus, 2, runtime_kind="libomp")),
    ]
    for proc in procs:
        assert result_of(proc) == [[c] for c in cpus]


@needs_two_cpus
def test_pin_rolls_back_when_the_readback_fails(restore, monkeypatch):
    before = all_masks()

    def broken_census():
        raise OSError("census broke")

    monkeypatch.setattr(threads, "census", broken_census)
    with pytest.raises(OSError, match="census broke"):
        threads.pin("compact")
    monkeypatch.undo()
    assert masks_unchanged(before), "the team was left pinned after the readback failed"
    assert not threads._originals.by_tid, "a failed pin must not leave saved masks behind"


@needs_two_cpus
def test_pinned_forgets_its_saved_masks_even_when_restoring_fails(restore, monkeypatch):
    real_apply = threads._apply

    def failing_apply(saved):
        raise RuntimeError("could not restore")

    with pytest.raises(RuntimeError, match="could not restore"):
        with threads.pinned("compact"):
            monkeypatch.setattr(threads, "_apply", failing_apply)
    monkeypatch.setattr(threads, "_apply", real_apply)
    assert not threads._originals.by_tid, "the saved state outside the block is the one from before it"


class _FakePool:
    """A threadpoolctl controller stand-in: a pool that refuses or misreports its count."""

    filepath = "/fake/libfakeblas.so"

    def __init__(self, count=2, refuse_set=False, refuse_restore=False, reads_back=None):
        self.count, self.refuse_set, self.refuse_restore = count, refuse_set, refuse_restore
        self.reads_back = reads_back
        self.sets = 0

    def info(self):
        return {"user_api": "blas", "internal_api": "fakeblas", "prefix": "libfakeblas",
                "filepath": self.filepath, "version": None}

    def get_num_threads(self):
        return self.reads_back if self.reads_back is not None else self.count

    def set_num_threads(self, n):
        self.sets += 1
        if self.refuse_set and self.sets == 1 or self.refuse_restore and self.sets == 2:
            raise OSError(f"fake pool refuses call {self.sets}")
        self.count = n


def with_fake_pool(monkeypatch, pool):
    real = threads._pools
    monkeypatch.setattr(threads, "_pools", lambda: real() + [pool])


def test_set_num_threads_reports_a_pool_that_reads_back_another_count(restore, monkeypatch):
    with_fake_pool(monkeypatch, _FakePool(reads_back=7))
    with pytest.warns(RuntimeWarning, match="other than asked"):
        got = threads.set_num_threads(1)
    assert got["mismatches"] == [{"what": _FakePool.filepath, "asked": 1, "got": 7}]
    monkeypatch.undo()
    assert threads.set_num_threads(1)["mismatches"] == []


def test_set_num_threads_puts_counts_back_when_a_pool_refuses(restore, monkeypatch):
    torch.set_num_threads(1)
    with_fake_pool(monkeypatch, _FakePool(count=1, refuse_set=True))
    with pytest.raises(OSError, match="refuses call 1"):
        threads.set_num_threads(2)
    monkeypatch.undo()
    assert torch.get_num_threads() == 1
    assert all(p["num_threads"] == 1 for p in threads.get_num_threads()["pools"])


def test_a_failed_restore_is_reported_with_the_original_error(restore, monkeypatch):
    torch.set_num_threads(1)
    with_fake_pool(monkeypatch, _FakePool(count=1, refuse_set=True, refuse_restore=True))
    with pytest.raises(RuntimeError, match="restoring the previous counts failed too.*refuses call 2") as raised:
        threads.set_num_threads(2)
    assert isinstance(raised.value.__cause__, OSError) and "refuses call 1" in str(raised.value.__cause__)
    assert torch.get_num_threads() == 1, "every other count is still put back"


def test_a_failed_call_leaves_the_interop_count_unset():
    # torch cannot undo an inter-op count: a call that fails must fail before setting it.
    proc = run_python(
        """
        import json, torch
        from benchctl import threads

        class Refusing:
            filepath, calls = "/fake/librefusing.so", 0
            def get_num_threads(self): return 1
            def set_num_threads(self, n):
                self.calls += 1
                if self.calls == 1:
                    raise OSError("refused")

        real = threads._pools
        threads._pools = lambda: real() + [Refusing()]
        try:
            threads.set_num_threads(1, interop=3)
        except OSError:
            pass
        threads._pools = real
        print(json.dumps(threads.set_num_threads(1, interop=2)["interop"]))
        """
    )
    assert result_of(proc) == 2


def test_pinning_benchmark_runs_at_a_tiny_size(tmp_path):
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "pinning.py")
    out = tmp_path / "pinning.json"
    n = min(2, len(ALLOWED))
    done = subprocess.run(
        [sys.executable, script, "--batch", "1", "--channels", "4", "--size", "8", "--iters", "5",
         "--rounds", "2", "--warmup", "1", "--threads", str(n), "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    compact = placement("compact", n, cpu_topology(allowed=ALLOWED))
    assert result["compact_placement"] == [[i, [cpu]] for i, cpu in enumerate(compact)]
    for mode in ("unpinned", "compact"):
        summary = result["modes"][mode]
        assert summary["n"] + summary["warmup"] == 2 * 5
        assert 0 < summary["ci95_ms"][0] <= summary["median_ms"] <= summary["ci95_ms"][1]
        assert mode in done.stdout
        assert (summary["migrations_per_iter"] is None) == result["migrations_source"].startswith("unavailable")
    assert result["threads"]["torch"] == n and result["threads"]["mismatches"] == []


def _an_extension_not_yet_loaded() -> str | None:
    """A compiled module of the standard library this process has not imported: importing it loads a library."""
    for name in ("_bz2", "_lzma", "_decimal", "_sqlite3", "_curses", "_dbm", "_gdbm", "audioop", "_tkinter"):
        spec = importlib.util.find_spec(name) if name not in sys.modules else None
        if spec is not None and (spec.origin or "").endswith(".so"):
            return name
    return None


def test_pool_controllers_are_built_again_only_when_a_library_was_loaded(monkeypatch):
    import threadpoolctl

    built = []

    class Counting(threadpoolctl.ThreadpoolController):
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counting)
    threads._POOLS_CACHE.clear()
    first, again = threads._pools(), threads._pools()
    assert len(built) == 1 and [id(c) for c in first] == [id(c) for c in again]
    name = _an_extension_not_yet_loaded()
    if name is None:
        pytest.skip("every candidate extension module is already loaded")
    loaded, unloaded = _loaded_objects.generation()
    importlib.import_module(name)
    now = _loaded_objects.generation()
    assert now[0] > loaded and now[1] == unloaded  # the module, and any library it needs
    threads._pools()
    assert len(built) == 2, "a library loaded since the last call: its pools are looked for again"
    assert threads.set_num_threads(1)["mismatches"] == []
