import glob
import os
import shutil

import pytest

# The contention gate off for the suite (its own tests set it): a test's workers must not be set aside because
# the machine it runs on is busy. Set before benchctl is imported, and inherited by every process a test starts.
os.environ.setdefault("BENCHCTL_GATE_CPUS", "inf")

# Where distributions install LLVM's OpenMP runtime (apt: libomp5 / libomp-N-dev).
LLVM_LIBOMP_PATTERNS = ("/usr/lib/*-linux-gnu/libomp.so.5", "/usr/lib/llvm-*/lib/libomp.so.5")


@pytest.fixture
def llvm_libomp():
    """Path of an installed LLVM libomp; the test is skipped where there is none."""
    found = sorted(p for pattern in LLVM_LIBOMP_PATTERNS for p in glob.glob(pattern))
    if not found:
        pytest.skip("LLVM libomp is not installed (apt-get install libomp5); .ci/run installs it")
    return found[0]


@pytest.fixture
def cxx_compiler():
    """A C++ compiler on PATH; the test is skipped where there is none."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler on PATH")
    return compiler


@pytest.fixture(params=["auto", "clock_gettime"])
def clock_source(request):
    """Run a test under each tick source, as $BENCHCTL_CLOCK would select it."""
    from benchctl import clock

    clock._configure(request.param)
    try:
        yield clock.info()
    finally:
        clock._configure(os.environ.get(clock.ENV_VAR, "auto"))


@pytest.fixture
def unpreempted():
    """Run the test thread under SCHED_FIFO where allowed (root, as in CI).

    A wall-clock accuracy test of a multi-millisecond busy wait cannot pass
    on an oversubscribed machine otherwise: the scheduler preempts the
    thread right after its long burst, and the wait is (truly) timed longer.
    Yields whether real-time scheduling was obtained.
    """
    previous = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        granted = True
    except PermissionError:
        granted = False
    try:
        yield granted
    finally:
        if granted:
            os.sched_setscheduler(0, previous[0], previous[1])


def require_gpu():
    """Skip unless CUDA timing can work here; on the GPU machine (BENCHCTL_REQUIRE_GPU,
    set by bench/gpu_check.sh) a skip would hide a failure, so fail instead."""
    from benchctl import cuda

    ok, reason = cuda.available()
    if not ok:
        if os.environ.get("BENCHCTL_REQUIRE_GPU"):
            pytest.fail(f"BENCHCTL_REQUIRE_GPU is set but CUDA is unavailable: {reason}")
        pytest.skip(f"no usable GPU: {reason}")
