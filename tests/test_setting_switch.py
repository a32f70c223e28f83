"""Setting.switch: each in-process setting moves a running process between its values and back (paired cells).

Every setting of the registry that declares ``in_process`` is switched baseline -> probe -> baseline -> probe,
to the value it holds again, through its other values where it has them, and back to its baseline, in one
fresh process (this file run as a script: the switches change process-wide state). After each switch its
``during`` (where it has one) and ``readback`` must show the value switched to, and what the baseline undoes
must be as it was before the probe. A new in-process setting fails here until it has a switch; one this file
has no Spec for is walked generically (a code/off baseline, nothing raising), its readback judged only where
it is a KeptOff.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from benchctl import settings
from benchctl._setting import KeptOff, Setting

IN_PROCESS = sorted(name for name, s in settings.SETTINGS.items() if s.in_process)
FRESH_ONLY = sorted(name for name, s in settings.SETTINGS.items() if not s.in_process)
# Variables that would place, size or cap the fresh process's pools from its start.
_START_VARS = ("OMP_", "KMP_", "GOMP_", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_SKIP = "unavailable here: "  # a setting this machine cannot apply at all (no FP control for ftz)


# ------------------------------------------------------------------------------- the fresh process's side


@dataclass
class Spec:
    """How one setting is switched and seen: its baseline (the probe is ``setting.probe``), more values to pass
    through, what to set up first (its return is ``before``: what the code left, what the baseline must give
    back), a stand-in for one timed iteration (run before ``during`` is read), and ``shows(value, readback,
    before)``: the problems seen (none: the process holds ``value``). A callable baseline or extra is called."""

    baseline: Any
    shows: Callable[[Any, Any, Any], list]
    extra: Any = ()
    prepare: Callable[[], Any] = lambda: None
    cleanup: Callable[[Any], None] = lambda before: None
    iteration: Callable[[], None] = lambda: None
    #: False only for the generic walk of a setting without a Spec here: without a stand-in for its timed call,
    #: its ``during`` cannot be judged.
    during_checked: bool = True


def _want(ok: bool, text: str) -> list[str]:
    return [] if ok else [text]


def _specs() -> dict[str, Spec]:
    import torch

    from benchctl import omp, threads
    from benchctl._causes.pools import control as pools
    from benchctl._causes.recording import control as inference
    from benchctl.fpenv import is_flushed

    allowed = sorted(os.sched_getaffinity(0))
    torch.ones(1 << 16).sum()  # torch's team exists

    def ftz(value, back, before):
        flushed = {t["tid"] for t in back["census"] if is_flushed(t)}
        every = {t["tid"] for t in back["census"]}
        wanted = {"off": set(), "process": every, "thread": {threading.get_native_id()},
                  "openmp": {m["tid"] for m in omp.team_census()}}[value]
        return _want(flushed == wanted and not back["census"].unreached,
                     f"flushed {sorted(flushed)} of {sorted(every)}, not {sorted(wanted)}")

    def thread_count(value, back, before):
        counts = [back["torch"], back["omp_team"], *(p["num_threads"] for p in back["pools"])]
        return _want(all(n in (value, None) for n in counts), f"counts {counts}, not {value}")

    def pin(value, back, before):
        census = back["census"]
        if value == "off":
            moved = [(t["tid"], t["allowed_cpus"]) for t in census
                     if t["tid"] in before and t["allowed_cpus"] != before[t["tid"]]]
            return _want(not moved, f"masks not given back (tid, mask): {moved}")
        team = [t["allowed_cpus"] for t in census if t["omp_thread"] is not None]
        ok = back["team_single_cpu"] and len({m[0] for m in team}) == len(team) == torch.get_num_threads()
        return _want(ok and (not isinstance(value, list) or [m[0] for m in team] == value),
                     f"team masks {team} for {value}")

    def pool_sizes():
        return {lib.filepath: lib.get_num_threads() for lib in pools.controllers(torch_own=False)}

    def pools_shown(value, back, before):
        sizes = pool_sizes()
        if value == "capped":
            return _want(back["capped"] and all(n == 1 for n in sizes.values()), f"not capped: {sizes}")
        return _want(sizes == before, f"sizes {sizes}, before the cap {before}")

    def clamp_prepare():
        original = torch.get_num_threads(), torch.set_num_threads
        torch.set_num_threads(len(allowed) + 1)  # more threads than CPUs: what the clamp cuts
        return original

    def clamp(value, back, before):
        ran, replaced = torch.get_num_threads(), torch.set_num_threads is not before[1]
        if value == "usable":
            return _want(replaced and ran == back["ran"] == back["usable"] <= len(allowed), f"not clamped: {back}")
        return _want(not replaced and ran == len(allowed) + 1, f"clamp left: replaced={replaced}, {ran} threads")

    def inference_shown(value, back, before):
        under = inference.wrapped(torch.is_inference_mode_enabled)()
        return _want(back["enabled"] == under == (value == "on"), f"{back}; a call wrapped now under it: {under}")

    def kept_off(entry_point: Callable[[], Any], code_on: bool):
        def shows(value, back, before):
            guarded = entry_point() is not before
            if value == "off":
                return _want(back["kept_off"] and guarded and not back["enabled"], f"not kept off: {back}")
            return _want(not back["kept_off"] and not guarded and back["enabled"] == code_on,
                         f"guard left, or the code's state lost: {back}, guarded={guarded}")
        return shows

    def anomaly_prepare():
        torch.autograd.set_detect_anomaly(True)  # as the code left it: it must come back on with code
        return torch.set_anomaly_enabled

    def deterministic_prepare():
        torch.use_deterministic_algorithms(True)  # as the code left it: it must come back on with code
        return torch._C._set_deterministic_algorithms

    def mkldnn_prepare():
        torch.backends.mkldnn.enabled = False  # as the code left it: it must come back off with code
        return torch._C._set_mkldnn_enabled

    def mkldnn_shown(value, back, before):
        guarded = torch._C._set_mkldnn_enabled is not before
        if value == "on":
            return _want(back["kept_on"] and guarded and back["enabled"], f"not kept on: {back}")
        return _want(not back["kept_on"] and not guarded and not back["enabled"],
                     f"guard left, or the code's state lost: {back}, guarded={guarded}")

    def code_value(value, back, before):
        return _want(back == (before if value == "code" else value), f"read back {back!r}")

    def set_cudnn():
        torch.backends.cudnn.benchmark = True  # as the code left it
        return "on"

    def set_precision():
        torch.set_float32_matmul_precision("medium")  # as the code left it
        return "medium"

    def reversed_cpus():
        n = torch.get_num_threads()
        return (allowed[:n][::-1],) if len(allowed) >= n > 1 else ()

    return {
        "ftz": Spec("off", ftz, extra=("thread", "process", "openmp", "thread", "off", "openmp")),
        # Baseline: the count the process started with (another where that is the probe's).
        "threads": Spec(lambda: torch.get_num_threads() if torch.get_num_threads() != 1 else 2, thread_count),
        "pin": Spec("off", pin, extra=lambda: ("scatter", *reversed_cpus(), "off", *reversed_cpus()),
                    prepare=lambda: {t["tid"]: t["allowed_cpus"] for t in threads.census()}),
        "pools": Spec("off", pools_shown, prepare=pool_sizes),
        "clamp": Spec("off", clamp, prepare=clamp_prepare, cleanup=lambda before: torch.set_num_threads(before[0])),
        "inference": Spec("off", inference_shown,
                          iteration=lambda: inference.wrapped(lambda: torch.ones(2, requires_grad=True) * 2)()),
        "anomaly": Spec("code", kept_off(lambda: torch.set_anomaly_enabled, code_on=True), prepare=anomaly_prepare,
                        cleanup=lambda before: torch.autograd.set_detect_anomaly(False)),
        "profiler": Spec("code", kept_off(lambda: torch.autograd.profiler._enable_profiler, code_on=False),
                         prepare=lambda: torch.autograd.profiler._enable_profiler),
        "deterministic": Spec("code", kept_off(lambda: torch._C._set_deterministic_algorithms, code_on=True),
                              prepare=deterministic_prepare,
                              cleanup=lambda before: torch.use_deterministic_algorithms(False)),
        "mkldnn": Spec("code", mkldnn_shown, prepare=mkldnn_prepare,
                       cleanup=lambda before: setattr(torch.backends.mkldnn, "enabled", True)),
        "sync": Spec("off", lambda value, back, before: _want(back["on"] == (value == "cuda"), f"read back {back}")),
        "cudnn_benchmark": Spec("code", code_value, extra=("on", "code", "off"), prepare=set_cudnn,
                                cleanup=lambda before: setattr(torch.backends.cudnn, "benchmark", False)),
        "matmul_precision": Spec("code", code_value, extra=("highest", "code", "medium"), prepare=set_precision,
                                 cleanup=lambda before: torch.set_float32_matmul_precision("highest")),
    }


def _resolved(value: Any) -> Any:
    return value() if callable(value) else value


def _switch_through(name: str, spec: Spec) -> list[str]:
    """Switch ``name`` through its values; the problems seen (a step that raised ends the walk)."""
    setting = settings.SETTINGS[name]
    try:
        setting.check_available()
    except settings.SettingUnavailable as e:
        return [f"{_SKIP}{e}"]
    baseline, probe = setting.canonical(_resolved(spec.baseline)), setting.canonical(setting.probe)
    before = spec.prepare()
    steps = [baseline, probe, baseline, probe, probe, *map(setting.canonical, _resolved(spec.extra)),
             baseline, baseline]
    problems, held = [], "(start)"
    try:
        for value in steps:
            where = f"{settings.format_value(held)} -> {settings.format_value(value)}"
            if setting.switch(value) is None:
                problems.append(f"{where}: switch returned nothing observed")
            held = value
            spec.iteration()
            during = setting.during(value) if spec.during_checked else None
            if during is not None and during != value:
                problems.append(f"{where}: during read {during!r}")
            problems += [f"{where}: {p}" for p in spec.shows(value, setting.readback(value), before)]
    except Exception:
        problems.append(f"{settings.format_value(held)} -> {settings.format_value(value)}: "
                        f"{traceback.format_exc()}")
    finally:
        spec.cleanup(before)
    return problems


def _generic(setting: Setting) -> Spec | None:
    """A setting no Spec here knows, with a code/off baseline: switched through its values, each switch returning
    what it observed and nothing raising (its readback not judged: add a Spec for that). A KeptOff's readback
    says whether its guard is in, whatever it keeps off: that is judged."""
    if isinstance(setting, KeptOff):
        return Spec("code", lambda value, back, before: _want(
            back["kept_off"] == (value == "off") and not (value == "off" and back["enabled"]), f"read back {back}"))
    for baseline in ("off", "code"):
        try:
            if setting.canonical(baseline) != setting.canonical(setting.probe):
                return Spec(baseline, lambda value, back, before: [], during_checked=False)
        except settings.SettingError:
            continue
    return None


def _main(names: list[str], out: str) -> None:
    import numpy  # noqa: F401  (its BLAS pool is one the pools setting caps and gives back)

    specs = _specs()
    found = {}
    for name in names:
        spec = specs.get(name) or _generic(settings.SETTINGS[name])
        if spec is None:
            found[name] = [f"{name} is in_process: give it a switch and a Spec in {__file__}"]
            continue
        found[name] = _switch_through(name, spec)
    with open(out, "w") as f:
        json.dump(found, f)


# ------------------------------------------------------------------------------------------ the tests


@pytest.fixture(scope="module")
def switched(tmp_path_factory) -> dict[str, list[str]]:
    """The problems each in-process setting showed, switched in one fresh process."""
    out = tmp_path_factory.mktemp("switch") / "found.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(_START_VARS)}
    done = subprocess.run([sys.executable, __file__, str(out), *IN_PROCESS], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", IN_PROCESS)
def test_an_in_process_setting_switches_to_each_value_and_back(switched, name):
    if switched[name][:1] and switched[name][0].startswith(_SKIP):
        pytest.skip(switched[name][0])
    assert switched[name] == []


@pytest.mark.parametrize("name", IN_PROCESS)
def test_every_in_process_setting_has_a_switch_of_its_own(name):
    assert type(settings.SETTINGS[name]).switch is not Setting.switch


@pytest.mark.parametrize("name", FRESH_ONLY)
def test_a_setting_that_needs_a_fresh_process_refuses_to_switch(name):
    setting = settings.SETTINGS[name]
    with pytest.raises(NotImplementedError, match=name):
        setting.switch(setting.probe)


class _Lib:
    """A threadpoolctl controller stand-in; ``refuses`` a size it raises on."""

    def __init__(self, path: str, size: int, refuses: int | None = None) -> None:
        self.filepath, self.size, self.refuses = path, size, refuses

    def get_num_threads(self) -> int:
        return self.size

    def set_num_threads(self, n: int) -> None:
        if n == self.refuses:
            raise RuntimeError(f"{self.filepath} refuses {n} threads")
        self.size = n


def test_a_cap_that_fails_midway_gives_back_the_sizes_it_changed(monkeypatch):
    from benchctl._causes.pools import control
    from benchctl._causes.pools.setting import CapOtherPools

    libs = [_Lib("a", 4), _Lib("b", 3, refuses=1)]
    monkeypatch.setattr(control, "controllers", lambda torch_own=None: list(libs))
    monkeypatch.setattr(control, "pools", lambda: [])
    setting = CapOtherPools()
    with pytest.raises(RuntimeError, match="b refuses"):
        setting.switch("capped")
    assert [lib.size for lib in libs] == [4, 3]
    libs[1].refuses = None
    setting.switch("capped")
    libs[0].size = 1  # remembered at the first cap, whatever happened since
    setting.switch("off")
    assert [lib.size for lib in libs] == [4, 3]


def test_a_guard_that_fails_to_go_in_leaves_the_code_state_as_it_was():
    class Control:
        guarded, mode = False, "code's"

        def keep_off(self):
            self.guarded, self.mode = True, "off"
            raise RuntimeError("no guard")

        def release(self):
            self.guarded = False

        def state(self):
            return {"enabled": self.mode != "off", "kept_off": self.guarded, "refused": 0}

    class Kept(KeptOff):
        name = "kept"
        control = Control()

        def code_state(self):
            return self.control.mode

        def restore_code_state(self, saved):
            self.control.mode = saved

    setting = Kept()
    with pytest.raises(RuntimeError, match="no guard"):
        setting.switch("off")
    assert (setting.control.guarded, setting.control.mode) == (False, "code's")


if __name__ == "__main__":
    _main(sys.argv[2:], sys.argv[1])
