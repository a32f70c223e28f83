"""Property tests (Hypothesis): the settings' canonical forms, the CLI's assignment parser, the
results loader on mutated and truncated documents (issue 27).

Each property draws its inputs from a strategy much wider than the valid
values: what is valid must round-trip, what is not must be refused with the
project's own error naming what was wrong, and nothing may escape as another
exception from inside.
"""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from benchctl import ArgumentError, settings
from benchctl._cli.run import assignments
from benchctl._results import document, processes
from benchctl._results.comparison import Outcome

from synthetic_results import make_doc

EXAMPLES = int(os.environ.get("BENCHCTL_PROPERTY_EXAMPLES", "400"))
# Derandomized: CI tries the same examples every run, so a pass or a failure is this code's, not a draw's;
# BENCHCTL_HYPOTHESIS_EXPLORE=1 draws new ones (random draws found the threads="²" and env-value bugs).
PROPERTY = hsettings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                     derandomize=not os.environ.get("BENCHCTL_HYPOTHESIS_EXPLORE"))

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
    if not _has_text_form(canon):
        return
    text = settings.format_value(canon)
    assert setting.canonical(text) == canon, f"{name}: {canon!r} is written {text!r}, read back differently"


def _has_text_form(canon) -> bool:
    """Whether a value can be written on the command line at all: an env value holding ',' or a
    bracket (OMP_PLACES={0},{1}) has none inside env=[A=...,B=...]; Python callers pass a dict."""
    if isinstance(canon, dict):
        return all(_has_text_form(v) and not (isinstance(v, str) and any(c in v for c in ",[]"))
                   for v in canon.values())
    return True


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
        except (KeyError, IndexError, TypeError, AttributeError):
            continue  # an earlier mutation removed or replaced this path (a parent may now be a scalar)
    loaded = _loads_or_refuses(tmp, json.dumps(doc))
    if loaded is not None:
        assert document.validate(loaded) is loaded


# -- the process-level statistics ----------------------------------------------
# Per-process medians as they occur: 1 ps to 1000 s, in ns. (Far outside it,
# e.g. 1e-300 against 1e300, the interval's exp() overflows: see the issue note.)
MEDIAN = st.floats(min_value=1e-3, max_value=1e12, allow_nan=False, allow_infinity=False)
SIDE = st.lists(MEDIAN, min_size=1, max_size=8)
SCALE = st.floats(min_value=1e-3, max_value=1e3)


def _close(a, b, rel=1e-7):
    if a is None or b is None:
        return a is b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, rel) for x, y in zip(a, b))
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


@PROPERTY
@given(a=SIDE, b=SIDE, scale=SCALE, same_cell=st.booleans())
def test_a_ratio_and_its_interval_do_not_change_when_both_sides_are_scaled(a, b, scale, same_cell):
    if same_cell and (len(a) < 2 or len(b) < 2):
        same_cell = False
    plain = processes.compare(a, b, same_cell=same_cell)
    scaled = processes.compare([v * scale for v in a], [v * scale for v in b], same_cell=same_cell)
    assert _close(plain.ratio, scaled.ratio)
    assert _close(plain.ci95, scaled.ci95, rel=1e-6)
    assert processes.judge(plain) == processes.judge(scaled) or _near_an_edge(plain)


def _near_an_edge(cmp, band=processes.FLOOR):
    """An interval end within rounding of the band's edge, where scaling may tip the outcome."""
    ci = cmp.ci95
    return ci is not None and any(math.isclose(abs(math.log(x)), math.log1p(band), rel_tol=1e-6) for x in ci)


@PROPERTY
@given(a=SIDE, b=SIDE)
def test_swapping_the_sides_inverts_the_ratio_and_its_interval(a, b):
    ab, ba = processes.compare(a, b), processes.compare(b, a)
    assert _close(ab.ratio, 1 / ba.ratio)
    ci_ab, ci_ba = ab.ci95, ba.ci95
    assert (ci_ab is None) == (ci_ba is None)
    if ci_ab is not None:
        assert _close(ci_ab, [1 / ci_ba[1], 1 / ci_ba[0]], rel=1e-6)


@PROPERTY
@given(a=SIDE, b=SIDE, same_cell=st.booleans())
def test_no_nan_or_infinity_reaches_a_verdict(a, b, same_cell):
    if same_cell and (len(a) < 2 or len(b) < 2):
        same_cell = False
    cmp = processes.compare(a, b, same_cell=same_cell)
    ratio, ci, p = cmp.ratio, cmp.ci95, cmp.p_value
    assert math.isfinite(ratio) and ratio > 0
    if ci is not None:
        assert all(math.isfinite(x) and x > 0 for x in ci) and ci[0] <= ratio * (1 + 1e-12)
        assert ci[1] >= ratio * (1 - 1e-12)
        assert 0.0 <= p <= 1.0
    band = processes.band_from_control(cmp if same_cell else None)
    assert math.isfinite(band) and band >= processes.FLOOR
    assert processes.judge(cmp, band) in tuple(Outcome)


@PROPERTY
@given(a=SIDE, b=SIDE, bands=st.lists(st.floats(min_value=0.0, max_value=3.0), min_size=2, max_size=6))
def test_judge_is_monotone_in_the_band(a, b, bands):
    # A wider band can only move an outcome from effect towards no effect, and never says
    # no effect beyond the widest band it accepts.
    cmp = processes.compare(a, b)
    rank = {Outcome.EFFECT: 0, Outcome.UNRESOLVED: 1, Outcome.NO_EFFECT: 2, Outcome.ONE_PROCESS: None}
    outcomes = [processes.judge(cmp, band) for band in sorted(bands)]
    if cmp.ci95 is None:
        assert set(outcomes) == {Outcome.ONE_PROCESS}
        return
    within = [rank[o] for band, o in zip(sorted(bands), outcomes) if band <= processes.MAX_NO_EFFECT_BAND]
    assert within == sorted(within)
    beyond = [o for band, o in zip(sorted(bands), outcomes) if band > processes.MAX_NO_EFFECT_BAND]
    assert Outcome.NO_EFFECT not in beyond
    assert [o for o in beyond if o == Outcome.EFFECT] == beyond[:len([o for o in beyond if o == Outcome.EFFECT])]


@PROPERTY
@given(values=SIDE, scale=SCALE)
def test_a_cell_interval_holds_its_value_and_scales_with_it(values, scale):
    cell = processes.cell_interval(values)
    scaled = processes.cell_interval([v * scale for v in values])
    value, ci = cell["value"], cell["ci"]
    assert _close(scaled["value"], value * scale)
    if len(values) < 2:
        assert ci is None
        return
    assert ci[0] <= value * (1 + 1e-12) and value <= ci[1] * (1 + 1e-12)
    assert _close(scaled["ci"], [ci[0] * scale, ci[1] * scale], rel=1e-6)


@PROPERTY
@given(values=st.lists(st.one_of(MEDIAN, st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf])),
                       min_size=0, max_size=5))
def test_a_value_no_process_can_have_is_refused_with_an_argument_error(values):
    bad = not values or any(not (math.isfinite(v) and v > 0) for v in values)
    try:
        processes.cell_interval(values)
        processes.compare(values, [1.0, 2.0])
    except ArgumentError as e:
        assert bad and "values" in str(e)
        return
    assert not bad
