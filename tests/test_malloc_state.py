"""glibc malloc's state read back (benchctl._causes.allocator.control): the threshold probe on real allocations.

Each probe runs in a fresh interpreter, so the starting state (the initial threshold, nothing
freed yet) is known and the environment can fix the thresholds.
"""

import json
import os
import subprocess
import sys

import pytest

from benchctl._causes.allocator import control as malloc_state
from benchctl._causes.allocator.control import MallocState

PAGE = os.sysconf("SC_PAGE_SIZE")
glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION"),
                                reason="reads glibc malloc")

# Reads the state, maps one block, frees it, reads again; prints both readings and whether the
# block was mapped (by mallinfo2 in this process) and whether probing changed this process's counts.
SCRIPT = r"""
import ctypes, json, sys
from benchctl._causes.allocator import control as ms
libc = ms._libc()
libc.free.argtypes = [ctypes.c_void_p]
size = int(sys.argv[1])
before = ms.read()
info = libc.mallinfo2()
untouched = (info.hblks, info.arena) == (before.mapped_blocks, before.heap_bytes)
p = libc.malloc(size)
mapped = libc.mallinfo2().hblks > info.hblks
libc.free(p)
after = ms.read()
info = libc.mallinfo2()
untouched = untouched and (info.hblks, info.arena) == (after.mapped_blocks, after.heap_bytes)
print(json.dumps({"before": before.to_json(), "after": after.to_json(), "mapped": mapped, "untouched": untouched}))
"""


def probe(size, **env):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(size)], capture_output=True, text=True, check=True,
                         env={**{k: v for k, v in os.environ.items()
                                 if k not in ("GLIBC_TUNABLES", "LD_PRELOAD") and not k.startswith("MALLOC_")},
                              **env})
    got = json.loads(out.stdout)
    return MallocState.from_json(got["before"]), MallocState.from_json(got["after"]), got["mapped"], got["untouched"]


@glibc_only
def test_freeing_a_mapped_block_raises_the_threshold_the_probe_reads():
    before, after, mapped, untouched = probe(8 << 20)
    assert mapped and untouched  # the block had its own mapping; probing changed nothing in the process
    assert before.library.startswith("libc.") and before.dynamic and before.fixed == ()
    assert before.threshold_bytes < 8 << 20
    # glibc raised the threshold to the freed block's size: 8 MiB plus its header, rounded to a page.
    assert 8 << 20 < after.threshold_bytes <= (8 << 20) + 2 * PAGE
    assert after.heap_below_bytes == after.threshold_bytes - PAGE
    assert after.threshold_text() == "8 MiB" and after.raised


@glibc_only
def test_a_threshold_fixed_by_the_environment_stays_and_is_named():
    before, after, mapped, _ = probe(8 << 20, MALLOC_MMAP_THRESHOLD_=str(1 << 20))
    assert mapped and before.fixed == after.fixed == ("MALLOC_MMAP_THRESHOLD_=1048576",) and not after.dynamic
    assert before.threshold_bytes == after.threshold_bytes == 1 << 20  # no dynamic rise after the free
    retained, _, mapped, _ = probe(8 << 20, GLIBC_TUNABLES="glibc.malloc.mmap_threshold=4294967296")
    assert not mapped and retained.threshold_bytes is None and retained.threshold_text() == "above 64 MiB"


@glibc_only
def test_another_allocator_preloaded_reads_as_its_library():
    from benchctl import alloc
    path = alloc.Jemalloc().find()
    if path is None:
        pytest.skip("jemalloc is not installed")
    out = subprocess.run([sys.executable, "-c", "from benchctl._causes.allocator import control as m; import json; "
                          "print(json.dumps(m.read().to_json()))"], capture_output=True, text=True, check=True,
                         env={**os.environ, "LD_PRELOAD": path})
    state = MallocState.from_json(json.loads(out.stdout))
    assert "jemalloc" in state.library and not state.is_glibc and state.threshold_bytes is None
    assert state.maps(1 << 30) is None


def test_fixed_by_names_each_fixing_tunable_and_variable():
    env = {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1:glibc.malloc.arena_max=2:glibc.malloc.top_pad=0",
           "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_ARENA_MAX": "1"}
    assert malloc_state.fixed_by(env) == ("glibc.malloc.trim_threshold=1", "glibc.malloc.top_pad=0",
                                          "MALLOC_MMAP_THRESHOLD_=65536")
    assert malloc_state.fixed_by({}) == ()


@glibc_only
def test_free_heap_blocks_do_not_hide_the_threshold():
    # After the threshold rose, 200 MiB freed in the heap's middle (a block kept above it stops the trim):
    # requests above the threshold are served from that free block first; the probe still finds it.
    script = SCRIPT.replace("after = ms.read()", "small = [libc.malloc(1 << 16) for _ in range(3200)]; "
                            "keep = libc.malloc(1 << 16); [libc.free(b) for b in small]; after = ms.read()")
    out = subprocess.run([sys.executable, "-c", script, str(8 << 20)], capture_output=True, text=True, check=True)
    after = MallocState.from_json(json.loads(out.stdout)["after"])
    assert after.largest_free_bytes >= 150 << 20 and 8 << 20 < after.threshold_bytes <= (8 << 20) + 2 * PAGE
    assert not after.maps(16 << 20) and after.maps(300 << 20)  # the free block holds 16 MiB; 300 MiB is mapped


def test_a_request_is_mapped_above_the_threshold_and_every_free_block():
    state = MallocState("libc.so.6", heap_bytes=1, largest_free_bytes=48 << 20, threshold_bytes=24 << 20)
    assert not state.maps(1 << 20) and not state.maps(40 << 20) and state.maps(49 << 20)
    assert MallocState.from_json(json.loads(json.dumps(state.to_json()))) == state
    assert not MallocState("libc.so.6", heap_bytes=1, threshold_bytes=128 << 10).raised


# In a fresh interpreter: this one may hold other threads (then nothing is probed with a fork).
RECORDER_SCRIPT = r"""
import json
from benchctl._causes.allocator.setting import ALLOCATOR
from benchctl._run.recorder import CountedRecorder
rec = CountedRecorder()
for phase in ("train", "train", "eval", "train"):
    with rec.iteration(phase):
        pass
rec.finish()
print(json.dumps({"malloc": {p: s[ALLOCATOR.name].to_json() for p, s in rec.ended.items() if ALLOCATOR.name in s},
                  "errors": {p: e[ALLOCATOR.name] for p, e in rec.ended_errors.items() if ALLOCATOR.name in e}}))
"""


@glibc_only
def test_the_recorder_reads_malloc_where_each_phase_ends():
    out = json.loads(subprocess.run([sys.executable, "-c", RECORDER_SCRIPT], capture_output=True, text=True,
                                    check=True).stdout)
    malloc = {p: MallocState.from_json(s) for p, s in out["malloc"].items()}
    assert set(malloc) == {"train", "eval"} and not out["errors"]
    assert all(s.is_glibc and s.heap_bytes > 0 for s in malloc.values())
    # train ended before timed work: mallinfo2 alone, no fork; the last phase is probed in full after it.
    assert not malloc["eval"].probed and malloc["eval"].threshold_text() == "not probed"
    assert malloc["train"].probed and malloc["train"].threshold_bytes is not None


@glibc_only
def test_a_reading_without_the_probe_neither_forks_nor_maps(monkeypatch):
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("read(probe=False) forked"))
    libc = malloc_state._libc()
    before = libc.mallinfo2()
    state = malloc_state.read(probe=False)
    after = libc.mallinfo2()
    assert (state.heap_bytes, state.mapped_blocks) == (before.arena, before.hblks)
    assert (after.arena, after.hblks) == (before.arena, before.hblks)
    assert state.largest_free_bytes is None and state.maps(1 << 30) is None


def test_beside_another_running_thread_the_state_is_read_without_a_fork(monkeypatch):
    """A thread inside a BLAS call makes OpenBLAS's fork handler wait forever (a worker beside busy=pool hung
    in fork): while another Python thread runs, read() takes mallinfo2 alone."""
    import threading

    monkeypatch.setattr(os, "fork", lambda: pytest.fail("read() forked beside another running thread"))
    stop = threading.Event()
    beside = threading.Thread(target=stop.wait, daemon=True)
    beside.start()
    try:
        state = malloc_state.read()
    finally:
        stop.set()
        beside.join()
    assert not state.probed and state.threshold_bytes is None
