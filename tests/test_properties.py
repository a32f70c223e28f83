"""Property tests (Hypothesis): the settings' canonical forms, the CLI's assignment parser, the
results loader on mutated and truncated documents (issue 27).

Each property draws its inputs from a strategy much wider than the valid
values: what is valid must round-trip, what is not must be refused with the
project's own error naming what was wrong, and nothing may escape as another
exception from inside.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from benchctl import settings
from benchctl.cli.run import assignments
from benchctl.results import document

from synthetic_results import make_doc

EXAMPLES = int(os.environ.get("BENCHCTL_PROPERTY_EXAMPLES", "400"))
PROPERTY = hsettings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values a user or a caller could hand any setting: text (also text that looks
# like each setting's syntax), numbers, flags, lists, mappings.
SYNTAX = st.sampled_from(["off", "on", "process", "thread", "openmp", "compact", "scatter", "pool", "none",
                          "all", "default", "retain", "jemalloc", "tcmalloc", "[", "]", ",", "=", "[0,1]",
                          "[A=1,B=2]", "A=1", "{}", " ", "", "-1", "0", "1", "2", "1.5", "[alloc=retain]",
                          "[threads=1,pin=compact]", "[]", "[0,0]", "[-1]"])
TEXT = st.one_of(st.text(max_size=30), SYNTAX,
                 st.lists(SYNTAX, min_size=1, max_size=4).map("".join))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 2**40), st.floats(allow_nan=True), TEXT)
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(TEXT, inner, max_size=3)), max_leaves=8)


def _canonical_or_refused(name: str, value):
    """The canonical form, or None when refused as a setting must refuse: a SettingError naming it."""
    try:
        return settings.SETTINGS[name].canonical(value)
    except settings.SettingError as e:
        assert name in str(e), f"{name}: the error does not name the setting: {e}"
        return None


@pytest.mark.parametrize("name", sorted(settings.SETTINGS))
@PROPERTY
@given(value=VALUE)
def test_a_setting_value_is_canonical_once_and_its_text_parses_back(name, value):
    canon = _canonical_or_refused(name, value)
    if canon is None:
        return
    setting = settings.SETTINGS[name]
    assert setting.canonical(canon) == canon  # canonical is a fixed point
    assert json.loads(json.dumps(canon)) == canon  # it survives the results file
    text = settings.format_value(canon)
    assert setting.canonical(text) == canon, f"{name}: {canon!r} is written {text!r}, read back differently"


@PROPERTY
@given(text=TEXT, key=st.sampled_from(sorted(settings.SETTINGS)))
def test_a_set_assignment_parses_into_canonical_values_or_a_setting_error(text, key):
    try:
        parsed = assignments([f"{key}={text}"], multi=True)
        matrix = settings.canonical_matrix(parsed, {})
    except settings.SettingError as e:
        assert str(e)
        return
    assert list(matrix) == [key] and len(matrix[key]) == len(parsed[key])
    # The matrix of canonical values is itself a fixed point (a resumed file's matrix must match).
    assert settings.canonical_matrix(matrix, {}) == matrix


@PROPERTY
@given(value=VALUE, default=st.sampled_from([1, 1.0, True, "s", None, [1], {"a": 1}]))
def test_a_workload_parameter_is_typed_like_its_default_or_refused_naming_it(value, default):
    try:
        canon = settings.canonical_value("param", value, {"param": default})
    except settings.SettingError as e:
        assert "param" in str(e)
        return
    if isinstance(default, bool) and isinstance(value, str):
        assert isinstance(canon, bool)
    elif isinstance(default, (int, float)) and not isinstance(default, bool) and isinstance(value, str):
        assert type(canon) is type(default)


# -- the results loader ------------------------------------------------------

def _valid_text() -> str:
    doc = make_doc({"init": ["normal", "zero"]}, lambda c: {"normal": 1.0, "zero": 1.3}[c["init"]], repeat=2,
                   control=True)
    return document.dumps(doc)


VALID = _valid_text()


def _load_text(tmp_path, text: str, name: str = "r.json"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return document.load(str(path))


def _loads_or_refuses(tmp_path, text: str):
    try:
        return _load_text(tmp_path, text)
    except document.ResultsError as e:
        assert "r.json" in str(e)  # names the file
        return None


@PROPERTY
@given(cut=st.integers(0, len(VALID) - 1))
def test_a_truncated_document_is_a_clear_error(tmp_path_factory, cut):
    tmp = tmp_path_factory.mktemp("cut")
    assert _loads_or_refuses(tmp, VALID[:cut]) is None  # a complete JSON object cannot end early


@PROPERTY
@given(data=st.data())
def test_a_byte_mutated_document_loads_valid_or_is_a_clear_error(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("bytes")
    raw = bytearray(VALID.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp / "r.json"
    path.write_bytes(bytes(raw))
    try:
        doc = document.load(str(path))
    except document.ResultsError as e:
        assert "r.json" in str(e)
        return
    assert document.validate(doc) is doc


def _paths(node, prefix=()):
    """Every (path, value) inside a JSON value."""
    yield prefix, node
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        yield from _paths(child, prefix + (key,))


JSON_VALUE = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                    st.text(max_size=5)),
                          lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                  st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                          max_leaves=5)


@PROPERTY
@given(data=st.data())
def test_a_structurally_mutated_document_loads_valid_or_is_a_clear_error(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("tree")
    doc = json.loads(VALID)
    paths = [p for p, _ in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            if data.draw(st.booleans()):
                parent[path[-1]] = data.draw(JSON_VALUE)
            elif isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced this path
    loaded = _loads_or_refuses(tmp, json.dumps(doc))
    if loaded is not None:
        assert document.validate(loaded) is loaded
