"""Workloads from the user's own code: ``path/to/file.py:name`` or ``package.module:name``.

Three forms, recognised in this order:

* a function decorated ``@benchctl.workload(params={...})``, called as
  ``fn(rec, **params)``: it times its own regions with
  ``with rec.iteration("phase"):`` (any phases it likes);
* an object with ``setup()`` and ``run(state)`` (a module, a class with
  static methods, or any namespace): ``setup()`` runs once, untimed, and
  each ``run(state)`` call is one iteration of phase ``run``;
* any callable taking no arguments: each call is one iteration of phase ``call``.

The last two take two parameters: ``iterations`` (default
:data:`DEFAULT_ITERATIONS`), the most timed iterations a process runs, and
``seconds`` (default 0: none), a time target per process: once the timed
iterations have taken that long, and at least :data:`MIN_ITERATIONS` ran, the
process stops (as timeit and pyperf calibrate their loops; ``benchctl explain``
sets both from its budget). The worker imports the file in its own fresh
process; an exception in the user's code fails that cell, with its traceback
in the run record.

For :mod:`benchctl._studies.explain`, a recorder with ``probe`` set asks the
last two forms for one more, untimed call after the timed ones: under the
torch profiler (which ops run, in which dtypes, for how long: :mod:`.op_table`; the copies that change a
tensor's layout: :mod:`.layout_copies`) and with forward hooks on the modules found in the state (the
subnormal census of what the code produces); when much of that call is outside torch's ops, one more
under cProfile (:mod:`.probe_python`); then one more, also untimed, whose torch calls are watched for
autograd's recording and anomaly mode (:mod:`benchctl._causes.recording.probe`: its interception stays out of
the profile); where the process ran CUDA work, a few more calls give the GPU causes' evidence
(:mod:`benchctl._causes.cuda_first_call.probe`). The probe worker also records the warnings raised from setup
on, and what ``torch.compile`` compiled in each timed iteration (:mod:`.probe_compile`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import time
import types
from typing import Any, Callable

from .. import _timed_call, _validate, probes
from .._probe import ProbedCall
from ..denormals import layer_watch, layers_census, op_inputs_census, values_census, weights_census
from . import layout_copies, op_calls, op_table, probe_python
from .probe_compile import CompileWatch
from .._thread_calls import ThreadCalls, thread_calls

__all__ = ["DEFAULT_ITERATIONS", "MIN_ITERATIONS", "ARMS_EXTRA", "PROBE_CALLS", "PROBE_CUT", "workload", "is_target",
           "load"]

DEFAULT_ITERATIONS = 30
#: The fewest timed iterations a time target lets a process run: a first one (often a warm-up) and steady ones.
MIN_ITERATIONS = 3
#: A paired worker whose ``iterations`` ran out before each arm had a steady one goes on for at most this many more:
#: explain sized 3 iterations a worker where its budget was short, a paired worker ran "aAb" (no arm B, no ratio), and
#: the cause of its probe fell out of the answer.
ARMS_EXTRA = 16
#: The untimed calls a probe worker adds after the timed ones: the profiled one and the autograd census.
PROBE_CALLS = 2
#: The note of a probe worker that stopped at its limit (``rec.probe_limit_s``): ``{"calls", "timed_s"}``, what its
#: timed calls took; its probing calls were left out.
PROBE_CUT = "probe_cut"
_PARAMS = {"iterations": DEFAULT_ITERATIONS, "seconds": 0.0}
_MARK = "__benchctl_workload__"


def workload(params: dict[str, Any] | None = None, help: str = "") -> Callable:
    """Decorator: mark ``fn(rec, **params)`` as a benchctl workload with these parameters and defaults."""
    if params is not None and not isinstance(params, dict):
        raise _validate.ArgumentError(f"@benchctl.workload(params=...) takes a dict of parameter names and their "
                                      f"defaults, e.g. params={{'iterations': 30}}; got {type(params).__name__}")
    if any(not isinstance(name, str) or not name.isidentifier() for name in params or {}):
        raise _validate.ArgumentError(f"@benchctl.workload(params=...): each name must be a Python identifier (a "
                                      f"keyword argument of the function), got {sorted(map(repr, params))}")
    params = dict(params or {})

    def mark(fn: Callable) -> Callable:
        if not callable(fn):
            raise _validate.ArgumentError(f"@benchctl.workload marks a function, got {type(fn).__name__}")
        setattr(fn, _MARK, {"params": params, "help": help or (fn.__doc__ or "").strip().split("\n")[0]})
        return fn

    return mark


def is_target(name: str) -> bool:
    """Whether ``name`` names user code (``file.py[:name]`` or ``module:name``) rather than a registered workload."""
    return ":" in name or name.endswith(".py")


_imported: list[str] = []  # what _resolve imported of the user's code in this process


def imported_code() -> bool:
    """Whether this process imported the user's code (a workload's file or module): its import-time side effects
    and finalisers are in this process too (:func:`benchctl._cli.entry_point`)."""
    return bool(_imported)


def _import_file(path: str) -> types.ModuleType:
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise _validate.ArgumentError(f"no such file: {path}")
    # Siblings of the file import as they would when it runs as a script.
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = f"benchctl_user_{abs(hash(path)):x}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _resolve(target: str) -> Any:
    where, _, attribute = target.rpartition(":") if ":" in target else (target, "", "")
    _imported.append(where)
    module = _import_file(where) if where.endswith(".py") else importlib.import_module(where)
    if not attribute:
        return module
    obj = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise _validate.ArgumentError(f"{target}: {where} has no {attribute!r}")
        obj = getattr(obj, part)
    return obj


def _modules_in(value: Any, depth: int = 2) -> list:
    """torch modules in ``value`` (itself, or inside a tuple, list, dict or an object's attributes)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    if isinstance(value, torch.nn.Module):
        return [value]
    if depth == 0:
        return []
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (tuple, list)):
        items = list(value)
    else:
        items = list(getattr(value, "__dict__", {}).values())
    return [m for item in items for m in _modules_in(item, depth - 1)]


@contextlib.contextmanager
def _probe_evidence(rec) -> Any:
    """In a probe worker, what the whole run shows beside its profiled call: the warnings raised from
    setup on (torch warns of a slow conversion once per process, often on the first call) and a
    :class:`CompileWatch` for the timed iterations; yields (warnings, watch), (None, None) elsewhere."""
    if not getattr(rec, "probe", False):
        yield None, None
        return
    with probe_python.recorded_warnings() as seen:
        yield seen, CompileWatch()


def _probe_call(rec, call: Callable[[], Any], state: Any, seen: list, watch: CompileWatch,
                calls: ThreadCalls | None = None, watched: dict | None = None) -> None:
    """One untimed call under the torch profiler (which ops run, the copies that change a layout; where it had
    such copies, a few more calls weigh them: :func:`.layout_copies.shares_over_calls`),
    with the census of the values it computes: the layer outputs of the modules in ``state``, the
    tensors it returns, the weights, and (one more call) every CPU tensor its torch functions read; then, when
    much of it was outside torch's ops (all of a call that ran no torch op), one more under cProfile (its top
    Python-side functions); what each cause's probe records of it (one more call for
    what autograd does in it: :func:`benchctl._causes.recording.probe.autograd_census`; a few more on the
    GPU: :func:`benchctl._causes.cuda_first_call.probe.cuda_census`); and what ``seen`` and ``watch`` recorded.
    ``calls``: the
    thread counts the code set itself until then; ``watched``: what each cause's probe watched over the timed
    iterations (:func:`benchctl.probes.watching`), and, with what each watched over the profiled call
    (:func:`benchctl.probes.calling`), for its record (:func:`benchctl.probes.recorded`)."""
    import torch

    probe_started = time.perf_counter()
    modules = _modules_in(state)
    with contextlib.ExitStack() as stack:
        layer_records = [stack.enter_context(layer_watch(m)) for m in modules]  # not ``watched``: the probes'
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            # Inside the profiler: its first start (seconds) is not the call's time.
            with probes.calling() as called:
                compiled_s = watch.compile_seconds()
                started, cpu_started = time.perf_counter(), time.thread_time()
                out = call()
                wall_us = (time.perf_counter() - started) * 1e6
                cpu_us = (time.thread_time() - cpu_started) * 1e6  # the calling thread on a CPU
                compile_us = (watch.compile_seconds() - compiled_s) * 1e6
            with torch.profiler.record_function(op_table.INTACT_MARK):
                pass
    layers = [r for records in layer_records for r in records if r["calls"]]
    weights = [weights_census(m) for m in modules]
    events = prof.events()
    census_us = op_table.census_us(events)  # the census hooks' time is benchctl's, not the call's
    wall_us, cpu_us = wall_us - census_us, max(0.0, cpu_us - census_us)
    table = op_table.rows(events)
    copies = layout_copies.rows(events)
    inside_us = sum(row["top_us"] for row in table) + compile_us
    intact = op_table.intact(events)
    # A call that ran no torch op under an intact profile is all outside them (a pure Python or NumPy step).
    outside = 1.0 - min(1.0, inside_us / wall_us) if intact and wall_us > 0 else 0.0
    frames = probe_python.top_frames(call) if outside >= probe_python.FRAMES_FROM_OUTSIDE_SHARE else []
    op_inputs = _op_inputs_census(call, watch)
    rec.note("probe", {
        "ops": sorted({event.name for event in op_table.workload_events(events)}),
        "op_table": table,
        "profile_intact": intact,
        "op_calls": op_calls.first_calls(events),
        "call_wall_us": wall_us,
        "call_cpu_us": cpu_us,
        "call_compile_us": compile_us,
        "layout_copies": copies,
        "layout_copy_shares": layout_copies.shares_over_calls(call, layout_copies.share_of(table, copies)),
        "python_frames": frames,
        "warnings": probe_python.warning_rows(seen),
        "compile": watch.note(),
        "outputs": values_census(out),
        "activations": layers_census(layers),
        "weights": {**{key: sum(w[key] for w in weights) for key in ("values", "subnormal", "float16_subnormal")},
                    "densest": max((w["densest"] for w in weights), default=0.0)},
        **({"op_inputs": op_inputs} if op_inputs is not None else {}),
        "modules": len(modules),
        "torch_threads": torch.get_num_threads(),  # as the code left it: its setup() may have set one
        **probes.recorded(ProbedCall(call, tuple(modules), calls, watched or {}, called)),
        # All of this untimed probing (the profiler's first start alone took ~5 s here): what explain's
        # sizing takes out of the probe worker's duration, which would otherwise count as every worker's start.
        "probe_s": time.perf_counter() - probe_started,
    })


def _op_inputs_census(call: Callable[[], Any], watch: CompileWatch) -> dict | None:
    """:func:`benchctl.denormals.op_inputs_census` of one more untimed call; None where dynamo compiled code in
    this process (a function mode around compiled code makes it trace or compile again: seconds, and what it
    traces is not the code's own call) or where that call raised (the census then holds what the profiled call
    gave)."""
    if watch.compiled_any():
        return None
    try:
        return op_inputs_census(call)
    except Exception:  # the user's code, called once more: its failure here is not the workload's result
        return None


def _timed(rec, phase: str, call: Callable[[], Any], args: dict, watch: CompileWatch | None = None) -> bool:
    """Up to ``iterations`` timed calls (a paired worker: more, up to :data:`ARMS_EXTRA`, until each arm has one
    steady iteration); with a ``seconds`` target, no more once they took that long
    (and :data:`MIN_ITERATIONS` ran, of each arm in a paired worker: ``rec.timed_enough``). Each call runs as
    the cell's settings ask (``inference=on``: under torch.inference_mode(); any setting's context around it:
    :mod:`benchctl._timed_call`); ``watch`` reads dynamo's counters after each, outside its timing. A probe whose
    calls took its ``probe_limit_s`` stops there and notes :data:`PROBE_CUT`; returns whether it did."""
    call = _timed_call.wrapped(call)
    spent = 0.0
    if watch is not None:
        watch.start()
    most = args["iterations"] + ARMS_EXTRA
    for done in range(1, most + 1):
        started = time.perf_counter()
        with rec.iteration(phase):
            call()
        took = time.perf_counter() - started
        spent += took
        if watch is not None:
            watch.after_iteration(took)
        limit = getattr(rec, "probe_limit_s", None)
        if limit and spent >= limit:
            rec.untimed()
            rec.note(PROBE_CUT, {"calls": done, "timed_s": spent})
            return True
        if args["seconds"] and spent >= args["seconds"] and rec.timed_enough(phase, MIN_ITERATIONS):
            break
        if done >= args["iterations"] and rec.timed_enough(phase, 1):
            break
    rec.untimed()  # what follows (the probe's profiled call) is in no window of the counters
    return False


def _callable_workload(fn: Callable[[], Any]) -> tuple[Callable, dict]:
    def run(args: dict, rec) -> None:
        with _probe_evidence(rec) as (seen, watch):
            with thread_calls(active=watch is not None) as calls, probes.watching(watch is not None) as watched:
                cut = _timed(rec, "call", fn, args, watch)
            if watch is not None and not cut:
                _probe_call(rec, fn, fn, seen, watch, calls, watched=watched)

    return run, dict(_PARAMS)


def _setup_run_workload(obj: Any, name: str) -> tuple[Callable, dict]:
    if isinstance(obj, type):
        _check_callable(name, obj, 0)  # made here with no argument
    target = obj() if isinstance(obj, type) else obj
    _check_callable(f"{name}: setup", target.setup, 0)  # on the instance: its methods are bound
    _check_callable(f"{name}: run", target.run, 1)

    def run(args: dict, rec) -> None:
        with _probe_evidence(rec) as (seen, watch):
            with thread_calls(active=watch is not None) as calls:
                state = target.setup()
                with probes.watching(watch is not None) as watched:
                    cut = _timed(rec, "run", lambda: target.run(state), args, watch)
            if watch is not None and not cut:
                _probe_call(rec, lambda: target.run(state), state, seen, watch, calls, watched=watched)

    return run, dict(_PARAMS)


def _decorated_workload(fn: Callable, mark: dict) -> tuple[Callable, dict]:
    def run(args: dict, rec) -> None:
        if _timed_call.active():
            raise _validate.ArgumentError(
                f"{', '.join(_timed_call.active())}: each timed call of a callable or setup()/run(state) workload runs "
                "inside it; a @benchctl.workload function times its own iterations")
        out = fn(rec, **args)
        if getattr(rec, "probe", False):
            rec.note("probe", {"ops": [], "op_table": [], "call_wall_us": None, "probe_s": 0.0, "call_compile_us": 0.0,
                               "layout_copies": [], "layout_copy_shares": [], "python_frames": [], "warnings": [],
                               "compile": {},
                               "outputs": values_census(out), "modules": 0,
                               "activations": {"values": 0, "subnormal": 0},
                               "weights": {"values": 0, "subnormal": 0},
                               **probes.recorded(ProbedCall())})

    return run, dict(mark["params"])


def load(target: str) -> tuple[Callable, dict, str, Callable | None]:
    """``(fn(args, rec), params, help, check)`` of the user code named by ``target``: the parts of its
    :class:`benchctl._workloads.Workload`."""
    obj = _resolve(target)
    mark = getattr(obj, _MARK, None)
    if mark is not None:
        fn, params = _decorated_workload(obj, mark)
        help_text = mark["help"]
    elif hasattr(obj, "setup") and hasattr(obj, "run"):
        fn, params = _setup_run_workload(obj, target)
        help_text = f"{target}: setup() once, then run(state) per iteration (phase 'run')"
    elif callable(obj) and not isinstance(obj, types.ModuleType):
        _check_callable(target, obj, 0)
        fn, params = _callable_workload(obj)
        help_text = f"{target}: one call per iteration (phase 'call')"
    else:
        raise _validate.ArgumentError(
            f"{target} is not a workload: give a function decorated @benchctl.workload, an object with "
            "setup() and run(state), or a callable taking no arguments")
    # A @benchctl.workload's parameters are its own, whatever their names: an "iterations" of it is not benchctl's.
    return fn, params, help_text, None if mark is not None else check_iterations


def _is_module(obj: Any) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` (told by its classes' names: the user's code imported torch, this
    need not)."""
    return any(c.__name__ == "Module" and c.__module__ == "torch.nn.modules.module" for c in type(obj).__mro__)


def _unbindable(fn: Callable, arguments: int) -> str | None:
    """Why a call of ``fn`` with ``arguments`` positional values could not bind (its own words: a missing or an
    unexpected argument), or None where it binds or Python cannot say (a builtin without a signature)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(arguments))
    except TypeError as e:
        return str(e)
    return None


def _check_callable(what: str, fn: Callable, arguments: int) -> None:
    """Refuse, before any worker starts, a callable that each timed call could not run as meant: one whose call
    returns a generator or a coroutine (timing that times none of its body), or one that cannot be called with
    what the form passes (``arguments``: none for a callable or ``setup()``, the state for ``run(state)``)."""
    if not callable(fn):
        raise _validate.ArgumentError(f"{what} is not callable ({type(fn).__name__})")
    for test, made in ((inspect.isgeneratorfunction, "a generator"), (inspect.isasyncgenfunction, "an async generator"),
                       (inspect.iscoroutinefunction, "a coroutine")):
        if test(fn):
            raise _validate.ArgumentError(
                f"{what} returns {made}: a call runs none of its body, so timing it times nothing of the work; "
                "make it return its result (not yield or await it), or name a function that runs it to the end")
    module = _is_module(fn)
    # A module's __call__ takes anything: what it needs is its forward's.
    why = _unbindable(fn.forward if module else fn, arguments)
    if why is not None and module:
        raise _validate.ArgumentError(
            f"{what} is a torch.nn.Module ({type(fn).__name__}) whose forward needs its input ({why}): name a function "
            "that calls it on its input (def step(): return model(x)), or an object whose setup() makes the model "
            "and its input and whose run(state) calls it")
    if why is not None:
        given = "no argument" if arguments == 0 else "one argument, the state setup() returned"
        raise _validate.ArgumentError(
            f"{what} cannot be called with {given} ({why}): give its other parameters defaults, make them in "
            "setup() and take them in run(state), or write a @benchctl.workload function (its parameters come "
            "from --arg NAME=VALUE)")


def check_iterations(args: dict) -> None:
    """The check of a callable's or a setup()/run(state) object's parameters: a count of iterations, a time target."""
    _validate.count("iterations", args["iterations"], 1)
    if args["seconds"]:
        _validate.seconds("seconds", args["seconds"])
