"""benchctl.cuda: the runtime search, the native event timer, the unavailable path.

CPU tests drive the native timer through a fake libcudart (fake_cudart.c,
compiled here with the system C compiler) whose "events" are host
timestamps, and check the search and the reasons with fake library
directories. GPU tests (marked ``cuda``) time known GPU work.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from benchctl import _native, cuda
from conftest import require_gpu

HERE = Path(__file__).resolve().parent
FAIL_CODE = 77


def _compile_shared(source: Path, out: Path) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc/gcc/clang) to build the fake CUDA runtime")
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(out), str(source)], check=True)
    return out


@pytest.fixture(scope="session")
def fake_site(tmp_path_factory) -> Path:
    """A site-packages-like folder holding a fake runtime wheel layout."""
    site = tmp_path_factory.mktemp("site")
    _compile_shared(HERE / "fake_cudart.c", site / "nvidia" / "cu13" / "lib" / "libcudart.so.13")
    empty = site / "empty.c"
    empty.write_text("int benchctl_unrelated_symbol(void) { return 0; }\n")
    # A library with no CUDA symbol at all, where a runtime wheel would put one.
    _compile_shared(empty, site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12")
    partial = site / "partial.c"
    partial.write_text("int cudaEventCreateWithFlags(void** e, unsigned f) { (void)e; (void)f; return 0; }\n")
    _compile_shared(partial, site / "partial" / "libcudart.so.13")
    return site


@pytest.fixture
def fake_path(fake_site) -> str:
    return str(fake_site / "nvidia" / "cu13" / "lib" / "libcudart.so.13")


@pytest.fixture
def empty_path(fake_site) -> str:
    return str(fake_site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12")


@pytest.fixture
def fake(fake_path):
    """ctypes handle on the same loaded copy the native core opens, reset."""
    lib = ctypes.CDLL(fake_path)
    lib.fake_stat.restype = ctypes.c_longlong
    lib.fake_stat.argtypes = [ctypes.c_char_p]
    lib.fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.fake_set_devices.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.fake_set_pending_error.argtypes = [ctypes.c_int]
    lib.fake_reset()
    yield lib
    lib.fake_reset()


def stat(lib, what: str) -> int:
    return lib.fake_stat(what.encode())


# ---------------------------------------------------------------- native: opening


def test_fake_runtime_opens_and_answers(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    assert rt.path == fake_path
    assert rt.runtime_version() == 13000
    assert rt.device_count() == 1
    fake.fake_set_devices(3, 0, 12040)
    assert rt.device_count() == 3
    assert rt.driver_version() == 12040
    assert rt.error_string(7) == "fake cudart error 7"


def test_cuda_failure_raises_cuda_error_with_runtime_text(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    fake.fake_set_devices(0, 100, 13000)
    with pytest.raises(cuda.CudaError) as info:
        rt.device_count()
    e = info.value
    assert isinstance(e, RuntimeError)
    assert (e.call, e.code) == ("cudaGetDeviceCount", 100)
    assert "fake cudart error 100" in str(e) and "cudaGetDeviceCount" in str(e)


def test_take_last_error_returns_then_clears(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    fake.fake_set_pending_error(5)
    assert rt.take_last_error() == 5
    assert rt.take_last_error() == 0


def test_library_without_cuda_symbols_is_refused_by_name(empty_path):
    with pytest.raises(RuntimeError, match="lacks symbol cudaEventCreateWithFlags") as info:
        _native.CudaRuntime(empty_path)
    assert empty_path in str(info.value)


def test_every_symbol_is_required(fake_site):
    path = str(fake_site / "partial" / "libcudart.so.13")
    # It has the first symbol only: the error names the next one looked up.
    with pytest.raises(RuntimeError, match=f"{path} lacks symbol cudaEventRecord"):
        _native.CudaRuntime(path)


def test_missing_file_is_refused(tmp_path):
    path = str(tmp_path / "libcudart.so.13")
    with pytest.raises(RuntimeError, match="cannot open CUDA runtime .*libcudart.so.13"):
        _native.CudaRuntime(path)
    with pytest.raises(ValueError, match="empty"):
        _native.CudaRuntime("")


# ---------------------------------------------------------------- native: the timing loop


def test_loop_pairs_events_around_each_call_and_syncs_once(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    seen = []
    waits_ms = [1.0, 6.0, 1.0, 6.0, 1.0, 6.0]

    def before():
        seen.append(("before", stat(fake, "records")))

    def fn():
        i = len([s for s in seen if s[0] == "fn"])
        seen.append(("fn", stat(fake, "records")))
        time.sleep(waits_ms[i] / 1e3)

    n = len(waits_ms)
    ms = rt.time_calls(fn, n, 0xBEEF, before)

    assert isinstance(ms, np.ndarray) and ms.dtype == np.float64 and ms.shape == (n,)
    # before() runs ahead of the start event, fn() between start and end.
    assert seen == [x for i in range(n) for x in (("before", 2 * i), ("fn", 2 * i + 1))]
    # Each sample belongs to its own call: never shorter than that call's sleep.
    assert all(m >= w - 0.01 for m, w in zip(ms, waits_ms)), (ms, waits_ms)
    assert np.median(ms[1::2]) > np.median(ms[0::2])
    assert stat(fake, "last_stream") == 0xBEEF
    assert stat(fake, "created") == 2 * n and stat(fake, "records") == 2 * n
    assert stat(fake, "synchronizes") == 1
    assert stat(fake, "elapsed_queries") == n
    assert stat(fake, "destroyed") == 2 * n and stat(fake, "live_events") == 0


def test_loop_default_stream_and_no_before(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    fake.fake_set_pending_error(9)  # stale, from before the run: not the timed calls'
    ms = rt.time_calls(lambda: None, 3, 0)
    assert ms.shape == (3,) and (ms >= 0).all()
    assert stat(fake, "last_stream") == 0 and stat(fake, "live_events") == 0


@pytest.mark.parametrize(
    "call, at",
    [
        ("cudaEventCreateWithFlags", 3),
        ("cudaEventRecord", 4),
        ("cudaEventSynchronize", 1),
        ("cudaEventElapsedTime", 2),
    ],
)
def test_loop_cuda_failure_raises_and_frees_every_event(fake, fake_path, call, at):
    rt = _native.CudaRuntime(fake_path)
    fake.fake_fail(call.encode(), at, FAIL_CODE)
    with pytest.raises(cuda.CudaError) as info:
        rt.time_calls(lambda: None, 4, 0)
    assert (info.value.call, info.value.code) == (call, FAIL_CODE)
    assert f"fake cudart error {FAIL_CODE}" in str(info.value)
    assert stat(fake, "live_events") == 0


def test_loop_destroy_failure_is_reported_after_freeing_the_rest(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    fake.fake_fail(b"cudaEventDestroy", 2, FAIL_CODE)
    with pytest.raises(cuda.CudaError, match="cudaEventDestroy"):
        rt.time_calls(lambda: None, 3, 0)
    assert stat(fake, "destroyed") == 5 and stat(fake, "live_events") == 1


def test_loop_error_left_by_the_timed_calls_is_raised(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    with pytest.raises(cuda.CudaError) as info:
        rt.time_calls(lambda: fake.fake_set_pending_error(9), 2, 0)
    assert info.value.code == 9 and "cudaGetLastError" in str(info.value)
    assert stat(fake, "synchronizes") == 0 and stat(fake, "live_events") == 0


@pytest.mark.parametrize("where", ["fn", "before"])
def test_loop_python_exception_propagates_and_frees_events(fake, fake_path, where):
    rt = _native.CudaRuntime(fake_path)

    def boom():
        raise KeyError("from the timed code")

    fn, before = (boom, None) if where == "fn" else ((lambda: None), boom)
    with pytest.raises(KeyError, match="from the timed code"):
        rt.time_calls(fn, 3, 0, before)
    assert stat(fake, "created") == 6 and stat(fake, "live_events") == 0


def test_loop_rejects_bad_arguments_before_creating_events(fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    with pytest.raises(ValueError, match="n must be at least 1"):
        rt.time_calls(lambda: None, 0, 0)
    with pytest.raises(TypeError, match="fn must be callable"):
        rt.time_calls(42, 1, 0)
    with pytest.raises(TypeError, match="before must be callable"):
        rt.time_calls(lambda: None, 1, 0, 42)
    assert stat(fake, "created") == 0


# ---------------------------------------------------------------- the search (policy)


def test_loaded_runtimes_reads_the_process_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r--p 00000000 00:00 1 /usr/lib/libc.so.6\n"
        "7f01-7f02 r-xp 00001000 00:00 2 /opt/x/nvidia/cu13/lib/libcudart.so.13\n"
        "7f02-7f03 r--p 00002000 00:00 2 /opt/x/nvidia/cu13/lib/libcudart.so.13\n"
        "7f03-7f04 rw-p 00000000 00:00 0 \n"
        "7f04-7f05 rw-p 00000000 00:00 0 [heap]\n"
    )
    assert cuda._loaded_runtimes(str(maps)) == ["/opt/x/nvidia/cu13/lib/libcudart.so.13"]
    assert cuda._loaded_runtimes(str(tmp_path / "absent")) == []
    for path in cuda._loaded_runtimes():  # this process: real files only
        assert os.path.basename(path).startswith("libcudart.so") and os.path.exists(path)


def test_wheel_runtimes_prefer_torchs_major(fake_site, fake_path, empty_path):
    site = [str(fake_site), "/nonexistent-site"]
    assert cuda._wheel_runtimes(site, "13") == [fake_path, empty_path]
    assert cuda._wheel_runtimes(site, "12") == [empty_path]  # no cu12 folder; the .so.12 leads
    assert cuda._wheel_runtimes(site, None) == [empty_path]


def test_system_sonames_put_torchs_major_first():
    assert cuda._system_sonames("12") == [
        "libcudart.so.12", "libcudart.so.13", "libcudart.so.11", "libcudart.so"]
    assert cuda._system_sonames(None)[-1] == "libcudart.so"


def test_candidate_paths_order_and_override(monkeypatch, fake_path):
    monkeypatch.delenv(cuda.ENV_VAR, raising=False)
    paths = cuda._candidate_paths()
    assert paths[-1] == "libcudart.so"
    keys = [os.path.realpath(p) if os.sep in p else p for p in paths]
    assert len(keys) == len(set(keys))
    loaded = cuda._loaded_runtimes()
    assert paths[: len(loaded)] == loaded
    monkeypatch.setenv(cuda.ENV_VAR, fake_path)
    assert cuda._candidate_paths() == [fake_path]


def test_open_runtime_takes_the_first_usable_and_says_why_others_failed(tmp_path, fake_path, empty_path):
    missing = str(tmp_path / "libcudart.so.13")
    rt, tried = cuda._open_runtime([missing, empty_path, fake_path, "libcudart.so.never"])
    assert rt is not None and rt.path == fake_path
    assert tried[0] == (missing, "no such file")
    assert tried[1][0] == empty_path and "lacks symbol" in tried[1][1]
    assert tried[2] == (fake_path, "opened") and len(tried) == 3
    rt, tried = cuda._open_runtime([missing, "libcudart.so.never"])
    assert rt is None and "cannot open" in tried[1][1]


# ---------------------------------------------------------------- the reasons


@pytest.fixture
def torch_with_cuda(monkeypatch):
    """Let diagnose() get past the torch-build check on a CPU-only torch too."""
    if torch.version.cuda is None:
        monkeypatch.setattr(torch.version, "cuda", "13.0")


def test_reason_torch_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    d = cuda.diagnose()
    assert not d.available and "built without CUDA" in d.reason and torch.__version__ in d.reason


def test_reason_no_runtime_lists_what_was_tried(torch_with_cuda, tmp_path, empty_path):
    missing = str(tmp_path / "libcudart.so.13")
    d = cuda.diagnose([missing, empty_path])
    assert not d.available and d.runtime is None
    assert "no CUDA runtime library" in d.reason
    assert f"{missing} (no such file)" in d.reason
    assert empty_path in d.reason and "lacks symbol" in d.reason


def test_reason_no_driver(torch_with_cuda, fake, fake_path):
    fake.fake_set_devices(0, 35, 0)
    d = cuda.diagnose([fake_path])
    assert not d.available
    assert d.reason.startswith("no NVIDIA driver") and "fake cudart error 35" in d.reason
    assert fake_path in d.reason and "version 13.0" in d.reason


def test_reason_device_query_fails(torch_with_cuda, fake, fake_path):
    fake.fake_set_devices(0, 100, 12040)
    d = cuda.diagnose([fake_path])
    assert d.reason.startswith("no usable GPU") and "fake cudart error 100" in d.reason
    assert "driver CUDA 12.4" in d.reason


def test_reason_zero_devices(torch_with_cuda, fake, fake_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    fake.fake_set_devices(0, 0, 13000)
    d = cuda.diagnose([fake_path])
    assert d.reason.startswith("no CUDA device") and "CUDA_VISIBLE_DEVICES=''" in d.reason


def test_reason_torch_disagrees(torch_with_cuda, fake, fake_path):
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU here: the disagreement cannot be staged")
    fake.fake_set_devices(2, 0, 13000)
    d = cuda.diagnose([fake_path])
    assert not d.available and d.device_count == 2
    assert "sees 2 device(s) but torch.cuda.is_available() is False" in d.reason


def test_reason_when_everything_answers(torch_with_cuda, fake, fake_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    d = cuda.diagnose([fake_path])
    assert d.available and d.device_count == 1 and d.runtime.path == fake_path
    assert "1 device(s)" in d.reason


def test_real_runtime_opens_and_reports_in_its_own_words():
    rt, tried = cuda._open_runtime(cuda._candidate_paths())
    if rt is None:
        pytest.skip(f"no libcudart on this machine: {tried}")
    if torch.version.cuda and rt.path in cuda._loaded_runtimes():
        assert str(rt.runtime_version() // 1000) == torch.version.cuda.split(".")[0]
    assert rt.error_string(1)  # cudaErrorInvalidValue has a text in every runtime
    try:
        count = rt.device_count()
    except cuda.CudaError as e:
        assert rt.error_string(e.code) in str(e)
        with pytest.raises(cuda.CudaError) as info:  # no device: event creation fails
            rt.time_calls(lambda: None, 2, 0)
        assert info.value.call == "cudaEventCreateWithFlags"
        rt.take_last_error()
    else:
        assert count >= 1


def _entry_points():
    return {
        "time_calls": lambda: cuda.time_calls(lambda: None, 3),
        "device_info": cuda.device_info,
        "l2_flush_bytes": cuda.l2_flush_bytes,
        "runtime": cuda.runtime,
    }


def test_unavailable_here_every_entry_point_says_why():
    ok, reason = cuda.available()
    if ok:
        pytest.skip("a GPU is available: the unavailable path is tested with a staged reason")
    known = ("built without CUDA", "no CUDA runtime library", "no NVIDIA driver",
             "no usable GPU", "no CUDA device", "torch.cuda.is_available() is False")
    assert any(k in reason for k in known), reason
    for name, call in _entry_points().items():
        with pytest.raises(cuda.CudaUnavailable) as info:
            call()
        assert isinstance(info.value, RuntimeError)
        assert reason in str(info.value), name


def test_staged_unavailable_reason_reaches_every_entry_point(monkeypatch):
    monkeypatch.setattr(cuda, "_cached", cuda.Diagnosis(False, "staged: no NVIDIA driver"))
    assert cuda.available() == (False, "staged: no NVIDIA driver")
    for name, call in _entry_points().items():
        with pytest.raises(cuda.CudaUnavailable, match="staged: no NVIDIA driver"):
            call()


def test_time_calls_validates_arguments(monkeypatch, fake_path):
    rt = _native.CudaRuntime(fake_path)
    monkeypatch.setattr(cuda, "_cached", cuda.Diagnosis(True, "staged", rt, (), 1))
    with pytest.raises(TypeError, match="fn must be callable"):
        cuda.time_calls(None, 3)
    with pytest.raises(ValueError, match="n must be >= 1"):
        cuda.time_calls(lambda: None, 0)
    with pytest.raises(TypeError, match="n must be an int"):
        cuda.time_calls(lambda: None, True)
    with pytest.raises(ValueError, match="warmup must be >= 0"):
        cuda.time_calls(lambda: None, 3, warmup=-1)


class _StagedDevice:
    """torch.cuda's view of one fake device, for device_info on a CPU."""

    name, major, minor, uuid = "Staged GPU", 9, 0, "1234abcd-0000-0000-0000-000000000000"
    total_memory, multi_processor_count = 141 << 30, 132
    L2_cache_size = 60 << 20
    clock_rate, memory_clock_rate = 1_980_000, 3_201_000  # kHz


@pytest.fixture
def staged_gpu(monkeypatch, fake, fake_path):
    rt = _native.CudaRuntime(fake_path)
    monkeypatch.setattr(cuda, "_cached", cuda.Diagnosis(True, "staged", rt, (), 1))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda idx=None: _StagedDevice)
    return rt


def _fake_pynvml(uuids: list[str], fail_temperature: bool = False):
    class NVMLError(Exception):
        pass

    def by_uuid(u):
        if u not in uuids:
            raise NVMLError("Not Found")
        return uuids.index(u)

    def temperature(h, sensor):
        if fail_temperature:
            raise NVMLError("Not Supported")
        return 41

    return types.SimpleNamespace(
        NVMLError=NVMLError, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: "580.159.04",
        nvmlDeviceGetCount=lambda: len(uuids),
        nvmlDeviceGetHandleByUUID=by_uuid, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetClockInfo=lambda h, c: 1980 if c == 1 else 3201,
        nvmlDeviceGetMaxClockInfo=lambda h, c: 1980 if c == 1 else 3201,
        nvmlDeviceGetTemperature=temperature,
        nvmlDeviceGetPowerUsage=lambda h: 123_456,
        nvmlDeviceGetPerformanceState=lambda h: 0,
    )


def test_device_info_without_nvml_says_why(staged_gpu, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    monkeypatch.setattr(cuda, "_proc_driver_version", lambda: "580.159.04")
    info = cuda.device_info()
    assert (info["name"], info["capability"], info["l2_cache_bytes"]) == ("Staged GPU", "9.0", 60 << 20)
    assert info["runtime_path"] == staged_gpu.path and info["runtime_version"] == "13.0"
    assert info["driver_version"] == "580.159.04"
    assert info["sources"]["driver_version"] == "/proc/driver/nvidia/version"
    assert info["max_sm_clock_mhz"] == 1980.0
    assert info["sources"]["max_sm_clock_mhz"].endswith("clock_rate")
    for key in ("sm_clock_mhz", "temperature_c", "power_w"):
        assert info[key] is None and "pynvml" in info["unavailable"][key]
    assert "driver_version" not in info["unavailable"]
    assert cuda.l2_flush_bytes() == cuda.L2_FLUSH_FACTOR * (60 << 20)


def test_device_info_reads_nvml_by_uuid(staged_gpu, monkeypatch):
    other = "GPU-ffffffff-0000-0000-0000-000000000000"
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml([other, f"GPU-{_StagedDevice.uuid}"], True))
    info = cuda.device_info()
    assert (info["sm_clock_mhz"], info["power_w"], info["pstate"]) == (1980, 123.456, "P0")
    assert info["sources"]["sm_clock_mhz"] == "NVML" and info["driver_version"] == "580.159.04"
    assert info["temperature_c"] is None and "Not Supported" in info["unavailable"]["temperature_c"]


def test_device_info_nvml_unmatched_uuid(staged_gpu, monkeypatch):
    only = "GPU-ffffffff-0000-0000-0000-000000000000"
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml([only]))
    info = cuda.device_info()  # one NVML device: it is the one
    assert info["temperature_c"] == 41 and "only device" in info["sources"]["temperature_c"]
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml([only, only.replace("f", "e")]))
    info = cuda.device_info()  # several and none matches: no guess
    assert info["temperature_c"] is None and "Not Found" in info["unavailable"]["temperature_c"]
    assert info["driver_version"] == "580.159.04"


def test_l2_flush_needs_a_reported_l2(staged_gpu, monkeypatch):
    monkeypatch.setattr(_StagedDevice, "L2_cache_size", 0)
    with pytest.raises(RuntimeError, match="reports no L2 cache size"):
        cuda.l2_flush_bytes()


def test_version_text():
    assert cuda._version_text(13000) == "13.0" and cuda._version_text(12040) == "12.4"


# ---------------------------------------------------------------- on a GPU


_CYCLES = 1_000_000  # torch.cuda._sleep cycles: ~0.5 ms at 2 GHz


@pytest.fixture(scope="module")
def gpu():
    require_gpu()
    # Bring the clocks up from idle before anything is compared.
    torch.cuda._sleep(200 * _CYCLES)
    torch.cuda.synchronize()


def _sleep(cycles: int):
    return lambda: torch.cuda._sleep(cycles)


@pytest.mark.cuda
def test_gpu_device_info(gpu):
    info = cuda.device_info()
    assert info["name"] == torch.cuda.get_device_name()
    assert info["l2_cache_bytes"] and info["l2_cache_bytes"] > 0
    assert info["runtime_version"].split(".")[0] == torch.version.cuda.split(".")[0]
    for key, value in info.items():
        if value is None:
            assert key in info["unavailable"], key
    assert cuda.l2_flush_bytes() == cuda.L2_FLUSH_FACTOR * info["l2_cache_bytes"]
    try:
        import pynvml  # noqa: F401
    except ImportError:
        assert "pynvml" in info["unavailable"]["temperature_c"]
    else:
        assert info["sm_clock_mhz"] > 0 and info["temperature_c"] > 0, info["unavailable"]
        assert info["sources"]["temperature_c"].startswith("NVML")
        assert info["driver_version"] and info["sources"]["driver_version"] == "NVML"


@pytest.mark.cuda
def test_gpu_events_scale_with_known_work(gpu):
    # Alternate 1x and 4x work inside one run: each sample must belong to its
    # own call, and both sizes see the same clocks.
    sizes = [_CYCLES, 4 * _CYCLES] * 10
    calls = iter(sizes)
    ms = cuda.time_calls(lambda: torch.cuda._sleep(next(calls)), len(sizes), warmup=0)
    one, four = np.median(ms[0::2]), np.median(ms[1::2])
    assert 3.5 < four / one < 4.5, ms


@pytest.mark.cuda
def test_gpu_events_agree_with_torch_events(gpu):
    fn = _sleep(2 * _CYCLES)
    ours = np.median(cuda.time_calls(fn, 15))
    stream = torch.cuda.current_stream()
    theirs = []
    for _ in range(15):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        fn()
        b.record(stream)
        b.synchronize()
        theirs.append(a.elapsed_time(b))
    assert abs(ours / np.median(theirs) - 1) < 0.1, (ours, np.median(theirs))


@pytest.mark.cuda
def test_gpu_host_timer_without_sync_sees_only_the_launch(gpu):
    fn = _sleep(4 * _CYCLES)
    events_ms = np.median(cuda.time_calls(fn, 10))
    host_ms = []
    for _ in range(10):  # the seed's method: host clock, no synchronize
        t0 = time.perf_counter()
        fn()
        host_ms.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    assert np.median(host_ms) < 0.5 * events_ms, (host_ms, events_ms)


@pytest.mark.cuda
def test_gpu_timing_on_a_side_stream(gpu):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        on_side = np.median(cuda.time_calls(_sleep(2 * _CYCLES), 10))
    on_default = np.median(cuda.time_calls(_sleep(2 * _CYCLES), 10))
    assert abs(on_side / on_default - 1) < 0.1, (on_side, on_default)


@pytest.mark.cuda
def test_gpu_graph_times_replays(gpu):
    one_kernel = _sleep(2 * _CYCLES)
    eager = np.median(cuda.time_calls(one_kernel, 10))
    graphed = np.median(cuda.time_calls(one_kernel, 10, graph=True))
    assert abs(graphed / eager - 1) < 0.1, (eager, graphed)
    x = torch.zeros(16, device="cuda")

    def many_tiny_kernels():
        for _ in range(64):
            x.add_(1)

    eager = np.median(cuda.time_calls(many_tiny_kernels, 10))
    graphed = np.median(cuda.time_calls(many_tiny_kernels, 10, graph=True))
    assert graphed < eager, (eager, graphed)  # the graph removes launch gaps


@pytest.mark.cuda
def test_gpu_l2_flush_is_untimed_and_evicts(gpu):
    plain = np.median(cuda.time_calls(_sleep(2 * _CYCLES), 10))
    flushed = np.median(cuda.time_calls(_sleep(2 * _CYCLES), 10, flush_l2=True))
    assert abs(flushed / plain - 1) < 0.1, (plain, flushed)
    x_itemsize = 4  # float32
    # A read of a quarter of L2 is served from L2 when warm, from memory after a flush.
    l2_bytes = torch.cuda.get_device_properties().L2_cache_size
    x = torch.ones(l2_bytes // 4 // x_itemsize, device="cuda")
    warm = np.median(cuda.time_calls(x.sum, 30))
    cold = np.median(cuda.time_calls(x.sum, 30, flush_l2=True))
    assert cold > 1.05 * warm, (warm, cold)


@pytest.mark.cuda
def test_gpu_exception_in_timed_call_leaves_timing_usable(gpu):
    def boom():
        torch.cuda._sleep(_CYCLES)
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        cuda.time_calls(boom, 3, warmup=0)
    assert cuda.time_calls(_sleep(_CYCLES), 3).shape == (3,)
