"""glibc malloc's state read back (benchctl.malloc_state): the threshold probe on real allocations.

Each probe runs in a fresh interpreter, so the starting state (the initial threshold, nothing
freed yet) is known and the environment can fix the thresholds.
"""

import json
import os
import subprocess
import sys

import pytest

from benchctl import malloc_state
from benchctl.malloc_state import MallocState
from benchctl.run.recorder import CountedRecorder

PAGE = os.sysconf("SC_PAGE_SIZE")
glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION"),
                                reason="reads glibc malloc")

# Reads the state, maps one block, frees it, reads again; prints both readings and whether the
# block was mapped (by mallinfo2 in this process) and whether probing changed this process's counts.
SCRIPT = r"""
import ctypes, json, sys
from benchctl import malloc_state as ms
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
    assert before.mmap_from_bytes < 8 << 20
    # glibc raised the threshold to the freed block's size: 8 MiB plus its header, rounded to a page.
    assert after.threshold_bytes == after.mmap_from_bytes
    assert 8 << 20 < after.mmap_from_bytes <= (8 << 20) + 2 * PAGE
    assert after.heap_below_bytes == after.mmap_from_bytes - PAGE
    assert after.mmap_from_text() == "8 MiB"


@glibc_only
def test_a_threshold_fixed_by_the_environment_stays_and_is_named():
    before, after, mapped, _ = probe(8 << 20, MALLOC_MMAP_THRESHOLD_=str(1 << 20))
    assert mapped and before.fixed == after.fixed == ("MALLOC_MMAP_THRESHOLD_=1048576",) and not after.dynamic
    assert before.mmap_from_bytes == after.mmap_from_bytes == 1 << 20  # no dynamic rise after the free
    retained, _, mapped, _ = probe(8 << 20, GLIBC_TUNABLES="glibc.malloc.mmap_threshold=4294967296")
    assert not mapped and retained.mmap_from_bytes is None and retained.mmap_from_text() == "above 64 MiB"


@glibc_only
def test_another_allocator_preloaded_reads_as_its_library():
    from benchctl import alloc
    path = alloc.Jemalloc().find()
    if path is None:
        pytest.skip("jemalloc is not installed")
    out = subprocess.run([sys.executable, "-c", "from benchctl import malloc_state as m; import json; "
                          "print(json.dumps(m.read().to_json()))"], capture_output=True, text=True, check=True,
                         env={**os.environ, "LD_PRELOAD": path})
    state = MallocState.from_json(json.loads(out.stdout))
    assert "jemalloc" in state.library and not state.is_glibc and state.mmap_from_bytes is None


def test_fixed_by_names_each_fixing_tunable_and_variable():
    env = {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1:glibc.malloc.arena_max=2:glibc.malloc.top_pad=0",
           "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_ARENA_MAX": "1"}
    assert malloc_state.fixed_by(env) == ("glibc.malloc.trim_threshold=1", "glibc.malloc.top_pad=0",
                                          "MALLOC_MMAP_THRESHOLD_=65536")
    assert malloc_state.fixed_by({}) == ()


def test_the_threshold_is_known_only_when_the_heap_grew_below_it():
    grown = MallocState("libc.so.6", heap_bytes=1, largest_free_bytes=1 << 20, mmap_from_bytes=24 << 20,
                        heap_below_bytes=(24 << 20) - PAGE)
    assert grown.threshold_bytes == 24 << 20
    served_by_free_space = MallocState("libc.so.6", heap_bytes=1, largest_free_bytes=300 << 20,
                                       mmap_from_bytes=24 << 20, heap_below_bytes=(24 << 20) - PAGE)
    assert served_by_free_space.threshold_bytes is None
    assert MallocState.from_json(json.loads(json.dumps(grown.to_json()))) == grown


@glibc_only
def test_the_recorder_reads_malloc_where_each_phase_ends():
    rec = CountedRecorder()
    for phase in ("train", "train", "eval", "train"):
        with rec.iteration(phase):
            pass
    rec.finish()
    assert set(rec.malloc) == {"train", "eval"} and not rec.malloc_errors
    assert all(s.is_glibc and s.heap_bytes > 0 for s in rec.malloc.values())
