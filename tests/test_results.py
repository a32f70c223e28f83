"""The results document: round trip, atomic replacement, and clear errors on bad files."""

import json
import math
import os

import pytest

from benchctl._results import document as results
from benchctl._results.document import ResultsError


def _doc():
    doc = results.new_document("sleep", {"ms": 1.0}, {"alloc": ["default", "retain"]}, 2, {"host": "x"})
    doc["runs"].append({"cell": {"alloc": "default"}, "repetition": 0, "status": "ok",
                        "phases": {"sleep": {"ticks": [10, 11], "ns": [1.0, 1.1], "counters": {}, "warmup": 0}}})
    return doc


def test_save_load_round_trip(tmp_path):
    path = str(tmp_path / "r.json")
    doc = _doc()
    results.save(doc, path)
    assert results.load(path) == doc


def test_non_finite_floats_are_stored_as_null(tmp_path):
    path = str(tmp_path / "r.json")
    doc = _doc()
    doc["metadata"]["nan"] = math.nan
    results.save(doc, path)
    with open(path) as f:
        text = f.read()
    assert "NaN" not in text
    assert results.load(path)["metadata"]["nan"] is None


def test_failed_save_leaves_previous_file_and_no_temporary(tmp_path):
    path = str(tmp_path / "r.json")
    results.save(_doc(), path)
    before = open(path).read()
    bad = _doc()
    bad["metadata"]["unserialisable"] = {1, 2}
    with pytest.raises(TypeError):
        results.save(bad, path)
    assert open(path).read() == before
    assert os.listdir(tmp_path) == ["r.json"]


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ResultsError, match="no such results file"):
        results.load(str(tmp_path / "absent.json"))
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(ResultsError, match="empty file"):
        results.load(str(tmp_path / "empty.json"))


def test_truncated_file_says_truncated(tmp_path):
    path = tmp_path / "r.json"
    text = results.dumps(_doc())
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ResultsError, match=r"not valid JSON at line \d+ column \d+.*truncated"):
        results.load(str(path))


def test_binary_garbage(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b"\x80\x81\x82 not text")
    with pytest.raises(ResultsError, match="not a text file"):
        results.load(str(path))


def test_newer_version_asks_for_upgrade(tmp_path):
    path = tmp_path / "r.json"
    doc = _doc()
    doc["version"] = results.VERSION + 1
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=f"newer benchctl .*version {results.VERSION + 1}.*upgrade"):
        results.load(str(path))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(schema="pyperf"), "not a benchctl results file"),
        (lambda d: d.update(version="1"), "invalid schema version"),
        (lambda d: d.pop("runs"), "missing top-level key 'runs'"),
        (lambda d: d.update(matrix=[]), "'matrix' must be a dict"),
        (lambda d: d["runs"][0].update(status="maybe"), r"runs\[0\]: status 'maybe'"),
        (lambda d: d["runs"][0].pop("cell"), r"runs\[0\]: 'cell' missing"),
        (lambda d: d["runs"][0]["phases"]["sleep"].pop("ns"), "phase 'sleep' has no 'ns' list"),
    ],
)
def test_malformed_documents(tmp_path, edit, message):
    path = tmp_path / "r.json"
    doc = _doc()
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=message):
        results.load(str(path))


def test_top_level_not_an_object(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[1, 2]")
    with pytest.raises(ResultsError, match="expected a JSON object"):
        results.load(str(path))


def test_cell_id_ignores_key_order():
    assert results.cell_id({"a": 1, "b": "x"}) == results.cell_id({"b": "x", "a": 1})
    assert results.cell_id({"a": 1}) != results.cell_id({"a": 2})


def test_mostly_shared_needs_at_least_half_of_the_workers():
    from benchctl._results import queries

    shared, alone = {"beside": {"other_cpus": 0.9, "steal_cpus": 0.0}}, {"beside": {"other_cpus": 0.1}}
    assert queries.mostly_shared([shared, alone]) and queries.mostly_shared([shared])
    assert not queries.mostly_shared([shared, alone, alone]) and not queries.mostly_shared([])


def test_a_saved_document_is_compact_json_and_reads_back_the_same(tmp_path):
    doc = _doc()
    doc["runs"] = [{"ns": [float(i) for i in range(5000)]}]
    text = results.dumps(doc)
    assert "\n" not in text and ", " not in text  # the C encoder's compact form: a tenth of the indented one's time
    assert json.loads(text) == doc
