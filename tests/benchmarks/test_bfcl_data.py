"""Loading BFCL question and possible-answer files (real data from the shared folder)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from toolmend._errors import DatasetError
from toolmend.benchmarks.bfcl._data import SUPPORTED_CATEGORIES, category_of, load_bfcl

COUNTS = {
    "simple_python": 400,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "live_simple": 258,
    "irrelevance": 240,
}


def test_category_of() -> None:
    assert category_of("BFCL_v4_live_simple.json") == "live_simple"
    assert category_of("x/BFCL_v3_simple.json") == "simple"
    assert category_of("BFCL_v4_simple_python_result.json") == "simple_python_result"
    assert category_of("notes.json") is None


def test_loads_every_category_present(data_dir: Path) -> None:
    samples = load_bfcl(data_dir / "bfcl")
    assert Counter(s.metadata["category"] for s in samples) == COUNTS
    assert len({s.id for s in samples}) == len(samples)


def test_sample_contents(data_dir: Path) -> None:
    samples = {
        s.id: s for s in load_bfcl(data_dir / "bfcl", categories=["simple_python", "parallel_multiple"])
    }
    first = samples["simple_python_0"]
    assert first.messages[0].role == "user" and "triangle" in first.messages[0].content
    assert first.tools[0].properties["base"]["type"] == "integer"
    assert first.metadata["ground_truth"] == [
        {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}
    ]
    # Target from the first acceptable values.
    assert first.target[0].arguments == {"base": 10, "height": 5, "unit": "units"}
    pm = samples["parallel_multiple_2"]
    assert [c.name for c in pm.target] == ["circle.calculate_area", "circle.calculate_circumference"]
    # BFCL's own type names survive the load.
    kinds = {
        p.get("x-original-type") for s in samples.values() for t in s.tools for p in t.properties.values()
    }
    assert {"float", "dict", "tuple", "any"} & kinds


def test_optional_first_values_are_left_out(data_dir: Path) -> None:
    (sample,) = [
        s
        for s in load_bfcl(data_dir / "bfcl", categories=["parallel_multiple"])
        if s.id == "parallel_multiple_26"
    ]
    # The answer lists "type" (a key of the list items) at top level with "" allowed: dropped.
    assert "type" not in sample.target[1].arguments
    assert "starting_balance" not in sample.target[1].arguments


def test_unsatisfiable_answers_are_flagged(data_dir: Path) -> None:
    flagged = {
        s.id: s.metadata["unsatisfiable"]
        for s in load_bfcl(data_dir / "bfcl")
        if "unsatisfiable" in s.metadata
    }
    assert set(flagged) == {"live_simple_106-63-0", "live_simple_112-68-0"}
    assert "record.acc_routing_start" in flagged["live_simple_112-68-0"]


def test_irrelevance_has_no_target(data_dir: Path) -> None:
    samples = load_bfcl(data_dir / "bfcl" / "BFCL_v4_irrelevance.json")
    assert len(samples) == 240
    assert all(s.target == [] and "ground_truth" not in s.metadata for s in samples)


def test_category_selection_errors(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="unsupported BFCL categories"):
        load_bfcl(data_dir / "bfcl", categories=["simple_java"])
    with pytest.raises(DatasetError, match="no question file"):
        load_bfcl(tmp_path, categories=["parallel"])
    with pytest.raises(DatasetError, match="no such file"):
        load_bfcl(tmp_path / "missing")
    assert "live_relevance" in SUPPORTED_CATEGORIES


def _copy_pair(data_dir: Path, tmp_path: Path, category: str = "simple_python") -> tuple[Path, Path]:
    (tmp_path / "possible_answer").mkdir()
    q = tmp_path / f"BFCL_v4_{category}.json"
    a = tmp_path / "possible_answer" / q.name
    lines = (data_dir / "bfcl" / q.name).read_text(encoding="utf-8").splitlines()[:3]
    answers = (data_dir / "bfcl" / "possible_answer" / q.name).read_text(encoding="utf-8").splitlines()[:3]
    q.write_text("\n".join(lines) + "\n", encoding="utf-8")
    a.write_text("\n".join(answers) + "\n", encoding="utf-8")
    return q, a


def test_bad_json_line_names_file_and_line(data_dir: Path, tmp_path: Path) -> None:
    q, _ = _copy_pair(data_dir, tmp_path)
    q.write_text(q.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_bfcl(tmp_path)
    assert info.value.path == str(q) and info.value.line == 4


def test_mismatched_ids_are_reported(data_dir: Path, tmp_path: Path) -> None:
    _, a = _copy_pair(data_dir, tmp_path)
    records = [json.loads(x) for x in a.read_text(encoding="utf-8").splitlines()]
    records[1]["id"] = "simple_python_99"
    a.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_bfcl(tmp_path)
    assert (info.value.path, info.value.line, info.value.field) == (str(a), 2, "id")


def test_bad_answer_shape_names_the_field(data_dir: Path, tmp_path: Path) -> None:
    _, a = _copy_pair(data_dir, tmp_path)
    records = [json.loads(x) for x in a.read_text(encoding="utf-8").splitlines()]
    records[0]["ground_truth"][0]["calculate_triangle_area"]["base"] = 10
    a.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="list of acceptable values") as info:
        load_bfcl(tmp_path)
    assert info.value.field == "ground_truth[0].base" and info.value.line == 1


def test_bad_question_shape_names_the_field(data_dir: Path, tmp_path: Path) -> None:
    q, _ = _copy_pair(data_dir, tmp_path)
    records = [json.loads(x) for x in q.read_text(encoding="utf-8").splitlines()]
    records[2]["function"][0]["parameters"] = "nope"
    q.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_bfcl(tmp_path)
    assert info.value.line == 3 and (info.value.field or "").startswith("function")


def test_missing_answer_file(data_dir: Path, tmp_path: Path) -> None:
    shutil.copy(data_dir / "bfcl" / "BFCL_v4_parallel.json", tmp_path)
    with pytest.raises(DatasetError, match="possible-answer file"):
        load_bfcl(tmp_path)


def _two_records(src: Path, dst: Path, breaks: tuple[str, ...] = ()) -> Path:
    """The first two simple_python records of the real data in ``dst``, the second one's
    parameter schema given each ``breaks`` field as null."""
    name = "BFCL_v4_simple_python.json"
    (dst / "possible_answer").mkdir(parents=True)
    for sub in ("", "possible_answer/"):
        head = (src / f"{sub}{name}").read_text(encoding="utf-8").splitlines()[:2]
        if not sub and breaks:
            record = json.loads(head[1])
            params = record["function"][0]["parameters"]
            for field in breaks:
                if field == "type":
                    params["properties"]["number"]["type"] = None
                else:
                    params[field] = None
            head[1] = json.dumps(record)
        (dst / f"{sub}{name}").write_text("\n".join(head) + "\n", encoding="utf-8")
    return dst


def _score(data: Path, predictions: Path) -> tuple[int, str]:
    from typer.testing import CliRunner

    from toolmend.cli import app

    result = CliRunner().invoke(app, ["score", "bfcl", "-p", str(predictions), "--data", str(data), "--json"])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("breaks", "field"),
    [
        (("type",), "function[0].parameters.properties.number.type"),
        (("properties",), "function[0].parameters.properties"),
        (("required",), "function[0].parameters.required"),
    ],
)
def test_a_null_schema_field_is_refused_not_scored(
    tmp_path: Path, data_dir: Path, breaks: tuple[str, ...], field: str
) -> None:
    """A null ``type`` took any value (a float for an integer passed) and a null ``properties``
    declared none: the sample was scored against a tool it does not have."""
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        '{"id": "simple_python_0", "output": "[calculate_triangle_area(base=10, height=5)]"}\n'
        '{"id": "simple_python_1", "output": "[math.factorial(number=5.0)]"}\n'
    )
    good = _two_records(data_dir / "bfcl", tmp_path / "good")
    code, output = _score(good, predictions)
    assert code == 0 and json.loads(output)["metrics"]["accuracy:simple_python"] == 0.5, output
    broken = _two_records(data_dir / "bfcl", tmp_path / "broken", breaks)
    with pytest.raises(DatasetError) as err:
        load_bfcl(broken)
    assert err.value.line == 2 and err.value.field == field, str(err.value)
    assert err.value.path == str(broken / "BFCL_v4_simple_python.json")
    assert "got null" in str(err.value)
    code, output = _score(broken, predictions)
    assert code == 2 and output.startswith("error: ") and f"'{field}'" in output, output
