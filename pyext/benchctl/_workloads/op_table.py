"""The op table of one profiled call: which torch ops ran, in which dtypes, for how long.

The probe worker's one extra call runs under the torch profiler with ``record_shapes``; this
folds the profiler's events into rows keyed by op name and input dtypes. Causes read it through
:class:`benchctl._results.facts.Facts` (``op_table``, ``call_wall_us``): the share of the call's
time each dtype takes, the share inside torch's top-level ops (the rest is Python and glue), the
share of copies and layout conversions, the ops called from Python (beneath the code's ``record_function`` scopes
too: torch.optim's step is one) and their time.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..denormals import CENSUS_SCOPE

__all__ = ["INTACT_MARK", "NOT_TENSORS", "COMPILED_SCOPES", "SCOPES_KEPT", "dtypes_of", "scalar_operand_of",
           "in_census", "is_op", "is_scope", "python_scope", "workload_events", "census_us", "rows", "intact"]

#: An empty range the probe worker records right after its profiled call, inside its profiler session: present
#: in the events only where the session lasted the whole call (a profiler the code starts inside the call takes
#: the session over, and the probe's events are lost).
INTACT_MARK = "benchctl::probe_session_intact"


def workload_events(events: Iterable[Any]) -> list[Any]:
    """The profiler's events of the workload's own code: without the census's (:func:`in_census`)."""
    return [event for event in events if not in_census(event) and event.name != INTACT_MARK]


def dtypes_of(event: Any) -> list[str]:
    """The distinct dtypes of an event's inputs of one dimension or more, in order (``[]`` when none was
    recorded). A 0-dim input is a scalar argument, not arithmetic in its dtype: ``x * 1.0001`` on a float32 ``x``
    reaches ``aten::mul`` with 1.0001 as a 0-dim double, and ``aten::_to_copy`` of that double alone is the
    op's fixed cost; counting them made a loop of such ops "90% of its op time in float64". Where the shapes
    were not recorded beside the dtypes, every input's dtype counts."""
    dtypes = getattr(event, "input_dtypes", None) or []
    shapes = getattr(event, "input_shapes", None)
    sized = shapes is not None and len(shapes) == len(dtypes)
    seen: list[str] = []
    for i, dtype in enumerate(dtypes):
        if dtype and (not sized or shapes[i]) and dtype not in seen:
            seen.append(str(dtype))
    return seen


#: The profiler's type names of inputs that are not tensors (a Python number passed as a Scalar, lists, None).
NOT_TENSORS = frozenset({"", "Scalar", "ScalarList", "TensorList", "GenericList"})
#: The dtypes the binding wraps a Python float, int, bool or complex number as (whatever the other operand's dtype),
#: as the profiler names them.
WRAPPED_NUMBER_DTYPES = frozenset({"double", "long int", "bool", "c10::complex<double>"})


def scalar_operand_of(event: Any) -> bool:
    """Whether an event took a Python number the binding wrapped as a 0-dim tensor (``x * 1.0001``), which each call
    pays to wrap and convert (~1.3 µs a call here, more than the rest of a tiny op's fixed cost): a 0-dim tensor input
    beside one of one dimension or more, or, where every input is 0-dim (``w[i] * 0.5``), one of the dtypes a number
    is wrapped as (:data:`WRAPPED_NUMBER_DTYPES`) beside an input of another dtype."""
    dtypes = getattr(event, "input_dtypes", None) or []
    shapes = getattr(event, "input_shapes", None) or []
    if len(shapes) != len(dtypes):
        return False
    tensors = [(str(dtype), shape) for dtype, shape in zip(dtypes, shapes) if str(dtype) not in NOT_TENSORS]
    if any(len(shape) == 0 for _, shape in tensors) and any(len(shape) > 0 for _, shape in tensors):
        return True
    kinds = {dtype for dtype, _ in tensors}
    return len(kinds) > 1 and any(not shape and dtype in WRAPPED_NUMBER_DTYPES for dtype, shape in tensors)


def in_census(event: Any) -> bool:
    """Whether ``event`` is the subnormal census's own work (:data:`benchctl.denormals.CENSUS_SCOPE`), which
    forward hooks run inside the profiled call: the workload did not ask for it."""
    while event is not None:
        if event.name == CENSUS_SCOPE:
            return True
        event = getattr(event, "cpu_parent", None)
    return False


#: The record_function scopes torch.compile's code opens around a compiled graph (``## Call CompiledFxGraph <hash> ##``,
#: under its ``Torch-Compiled Region`` and ``CompiledFunction``, which are no scopes): the ops beneath are the graph's.
COMPILED_SCOPES = ("## Call CompiledFxGraph",)


def is_op(name: str) -> bool:
    """Whether an event's name is an op's: its namespace and name, no space (aten::add_, torchvision::nms). The code's
    scopes (``my_step``), torch.compile's regions ("Torch-Compiled Region: 0/0") and the autograd engine's nodes
    ("autograd::engine::evaluate_function: MmBackward0") are not."""
    return "::" in name and " " not in name


def is_scope(event: Any) -> bool:
    """Whether ``event`` is a ``record_function`` scope opened from Python (torch.optim's ``Optimizer.step#Adam.step``,
    the DataLoader's ``enumerate(DataLoader)#...``, the code's own): the profiler marks them as user annotations. The
    autograd engine's nodes, torch.compile's regions and TorchScript's functions are events of another kind, and
    compiled graphs' scopes (:data:`COMPILED_SCOPES`) are left out by name."""
    return bool(getattr(event, "is_user_annotation", False)) and not event.name.startswith(COMPILED_SCOPES)


def python_scope(event: Any) -> str | None:
    """The innermost scope (:func:`is_scope`) an op (:func:`is_op`) called from Python ran under, ``""`` where none;
    None where ``event`` is no op called from Python: no op (a scope, the autograd engine's node), or an op with an
    op, the autograd engine's work (backward ops), compiled code or the census (:func:`in_census`) above it. Scopes
    are opened from Python, so an op with nothing but scopes above it was called from Python."""
    if is_scope(event) or not is_op(event.name):
        return None
    innermost = None
    parent = getattr(event, "cpu_parent", None)
    while parent is not None:
        if not is_scope(parent) or parent.name == CENSUS_SCOPE:
            return None
        innermost = innermost or parent.name
        parent = getattr(parent, "cpu_parent", None)
    return innermost or ""


#: The scopes a row names, the most called first (their calls, not the rest's, are kept: the row's ``py_scoped``
#: counts all): code that names a scope for each layer or step would give a row hundreds.
SCOPES_KEPT = 3


def census_us(events: Iterable[Any]) -> float:
    """The time the census's scopes took inside the profiled call (to leave out of its wall time)."""
    return sum(float(e.cpu_time_total) for e in events if e.name == CENSUS_SCOPE)


def rows(events: Iterable[Any]) -> list[dict]:
    """One row per (op name, input dtypes): ``calls``; ``self_us``, the time in the op itself;
    ``top_us`` and ``top_calls``, the time and number of its calls made from Python (no profiled parent:
    what the Python code waits for), and ``top_number_calls``, those of them that took a Python number as an
    operand (:func:`scalar_operand_of`); ``py_calls``, ``py_us`` and ``py_number_calls``, the same of its calls as
    an op called from Python with nothing or only scopes above it (:func:`python_scope`: the ops of torch.optim's
    step and the code's ``record_function`` blocks too; 0 for a row of no op), ``py_scoped``, those of them under a
    scope, and ``py_scopes``, their innermost scopes with their calls (the :data:`SCOPES_KEPT` most called);
    ``shapes``, the input shapes of its first call (for replaying it). Sorted by ``self_us``, largest first. The
    census's own ops (:func:`in_census`) are left out."""
    table: dict[tuple[str, tuple[str, ...]], dict] = {}
    scopes: dict[tuple[str, tuple[str, ...]], dict[str, int]] = {}
    for event in events:
        if in_census(event) or event.name == INTACT_MARK:
            continue
        dtypes = dtypes_of(event)
        key = (event.name, tuple(dtypes))
        row = table.setdefault(key, {
            "op": event.name, "dtypes": dtypes, "calls": 0, "self_us": 0.0, "top_us": 0.0, "top_calls": 0,
            "shapes": [list(s) for s in (getattr(event, "input_shapes", None) or [])], "top_number_calls": 0,
            "py_calls": 0, "py_us": 0.0, "py_number_calls": 0, "py_scoped": 0, "py_scopes": []})
        row["calls"] += 1
        row["self_us"] += float(event.self_cpu_time_total)
        top, scope = getattr(event, "cpu_parent", None) is None, python_scope(event)
        number = (top or scope is not None) and scalar_operand_of(event)
        if top:
            row["top_us"] += float(event.cpu_time_total)
            row["top_calls"] += 1
            row["top_number_calls"] += number
        if scope is not None:
            row["py_us"] += float(event.cpu_time_total)
            row["py_calls"] += 1
            row["py_number_calls"] += number
            if scope:
                row["py_scoped"] += 1
                under = scopes.setdefault(key, {})
                under[scope] = under.get(scope, 0) + 1
    for key, under in scopes.items():
        table[key]["py_scopes"] = sorted(([name, n] for name, n in under.items()), key=lambda kv: -kv[1])[:SCOPES_KEPT]
    return sorted(table.values(), key=lambda r: -r["self_us"])


def intact(events: Iterable[Any]) -> bool:
    """Whether the probe's profiler session lasted its whole call (:data:`INTACT_MARK` was recorded)."""
    return any(event.name == INTACT_MARK for event in events)
