"""pyext/benchctl/_native.pyi describes the built benchctl._native exactly, so that it cannot drift.

The stub is read with ast (never imported): it must declare the module's public names and no others; each
class the members it has; each function its parameters and the records it returns; and the records that
cheap native calls return must read back with the fields, types and repr the stub gives them.
"""

import ast
import builtins
import re
import types
from pathlib import Path

import pytest

from benchctl import _native

STUB = Path(__file__).resolve().parent.parent / "pyext" / "benchctl" / "_native.pyi"
TREE = ast.parse(STUB.read_text(), filename=str(STUB))
# The C fast paths (METH_NOARGS, no pybind11 signature in their docstring): named so that no other
# function can lose its signature check unnoticed.
UNSIGNED = {"cycles", "cycles_begin", "cycles_end"}


def _public(name: str) -> bool:
    return not name.startswith("_")


def _declared(body: list) -> dict:
    """Public names a stub body declares (functions, classes, annotated or assigned names) -> node."""
    out: dict = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            out.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
    return {name: node for name, node in out.items() if _public(name)}


DECLARED = _declared(TREE.body)
CLASSES = {name: node for name, node in DECLARED.items() if isinstance(node, ast.ClassDef)}
FUNCTIONS = {name: node for name, node in DECLARED.items() if isinstance(node, ast.FunctionDef)}


def _is_property(node) -> bool:
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def _fields(cls: ast.ClassDef) -> dict[str, ast.expr]:
    """The read-only attributes a stub class declares, in order, with their types."""
    return {node.name: node.returns for node in cls.body if _is_property(node)}


def _nesting(ch: str) -> int:
    return 1 if ch in "[(" else -1 if ch in "])" else 0


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += _nesting(ch)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in parts + [current] if p.strip()]


def _native_signature(fn, name: str):
    """(parameter names, return text) from the first docstring line pybind11 writes, or None."""
    first = (fn.__doc__ or "").lstrip().split("\n", 1)[0]
    if not first.startswith(name + "("):
        return None
    depth = 0
    for end, ch in enumerate(first):
        depth += _nesting(ch)
        if depth == 0 and ch == ")":
            break
    params = [p.split(":")[0].split("=")[0].strip() for p in _split_top_level(first[len(name) + 1:end])]
    return [p for p in params if p not in ("/", "*")], first[end + 1:].partition("->")[2].strip()


def _stub_parameters(node: ast.FunctionDef) -> list[str]:
    args = node.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


def _records_named(annotation) -> set[str]:
    return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name) and n.id in CLASSES} if annotation else set()


def _check_signature(runtime, node: ast.FunctionDef, where: str) -> None:
    signature = _native_signature(runtime, node.name)
    assert signature is not None, f"{where} has no pybind11 signature to compare with"
    params, returns = signature
    assert params == _stub_parameters(node), f"{where}: the stub's parameters differ from the module's"
    named = set(re.findall(r"benchctl\._native\.(\w+)", returns))
    assert named == _records_named(node.returns), f"{where}: returns {returns!r} in the module"


def test_the_stub_declares_exactly_the_public_names_of_the_module():
    runtime = {name for name in dir(_native) if _public(name)}
    assert sorted(runtime - set(DECLARED)) == [], "public in benchctl._native but missing from the stub"
    assert sorted(set(DECLARED) - runtime) == [], "declared in the stub but absent from benchctl._native"


def test_the_stub_declares_functions_as_functions_and_classes_as_classes():
    for name, node in DECLARED.items():
        obj = getattr(_native, name)
        if isinstance(node, ast.ClassDef):
            assert isinstance(obj, type), name
        elif isinstance(node, ast.FunctionDef):
            assert callable(obj) and not isinstance(obj, type), name
        else:
            assert not callable(obj), name


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - UNSIGNED))
def test_each_function_has_the_stubs_parameters_and_returns_its_records(name):
    _check_signature(getattr(_native, name), FUNCTIONS[name], name)


def test_only_the_c_fast_paths_lack_a_signature_and_they_take_no_argument():
    unsigned = {name for name in FUNCTIONS if _native_signature(getattr(_native, name), name) is None}
    assert unsigned == UNSIGNED
    for name in UNSIGNED:
        assert _stub_parameters(FUNCTIONS[name]) == []
        with pytest.raises(TypeError):
            getattr(_native, name)(0)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_each_class_has_exactly_the_members_the_stub_declares(name):
    node, cls = CLASSES[name], getattr(_native, name)
    for base in node.bases:
        assert issubclass(cls, getattr(builtins, base.id, None) or getattr(_native, base.id)), (name, base.id)
    if issubclass(cls, BaseException):
        # Its attributes are set on each raised instance, not on the class.
        assert set(_declared(node.body)) == {"call", "code"}
        return
    stub = _declared(node.body)
    runtime = {member: value for member, value in vars(cls).items() if _public(member)}
    assert sorted(stub) == sorted(runtime), name
    for member, stub_node in stub.items():
        assert isinstance(runtime[member], property) == _is_property(stub_node), f"{name}.{member}"
        if not _is_property(stub_node):
            _check_signature(runtime[member], stub_node, f"{name}.{member}")
    constructor = vars(cls).get("__init__")
    constructible = constructor is not None and not isinstance(constructor, types.WrapperDescriptorType)
    stub_init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    assert constructible == (stub_init is not None), f"{name}: a constructor in one and not the other"
    if stub_init is not None:
        _check_signature(constructor, stub_init, f"{name}.__init__")


def _samples() -> list:
    """One of each record that native calls return without changing anything or waiting long."""
    samples = [_native.fp_masks(), _native.perf_event_kinds()[0], _native.fp_broadcast_handler_state()]
    samples += _native.counter_nominal_frequencies()[:1]
    if _native.counter_name():
        samples.append(_native.calibrate_counter(1_000_000))
    if _native.fp_control_register():
        report = _native.fp_broadcast(None, {}, 1.0)  # read only
        samples += [_native.fp_thread_apply(None), report, report.tasks[0]]
    group = _native.PerfCounterGroup(["task_clock_ns"], [], [False])
    try:
        samples += group.status() + group.read()[:1]
    finally:
        group.close()
    return samples


def _conforms(value, annotation: ast.expr) -> bool:
    if isinstance(annotation, ast.Subscript) and annotation.value.id == "list":
        return isinstance(value, list) and all(_conforms(v, annotation.slice) for v in value)
    name = annotation.id
    if name in CLASSES:
        return type(value).__name__ == name
    expected = {"int": int, "float": float, "str": str, "bool": bool}[name]
    return isinstance(value, expected) and (expected is bool or not isinstance(value, bool))


def test_records_read_back_with_the_stubs_fields_types_and_repr():
    seen = set()
    for record in _samples():
        name = type(record).__name__
        fields = _fields(CLASSES[name])
        for field, annotation in fields.items():
            value = getattr(record, field)
            assert _conforms(value, annotation), f"{name}.{field} = {value!r} is not {ast.unparse(annotation)}"
            with pytest.raises(AttributeError):
                setattr(record, field, value)
        shown = ", ".join(f"{field}={getattr(record, field)!r}" for field in fields)
        assert repr(record) == f"{name}({shown})"
        seen.add(name)
    assert {"FpMasks", "PerfEventKind", "BroadcastHandlerState", "PerfEventStatus"} <= seen


def test_records_come_only_from_the_module():
    for name, node in CLASSES.items():
        if _fields(node) and not any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body):
            with pytest.raises(TypeError):
                getattr(_native, name)()
