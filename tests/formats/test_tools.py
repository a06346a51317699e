"""Tool-spec loading across dialects, on real specs from the shared data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._errors import DatasetError
from toolmend.formats._tools import detect_dialect, load_tool, load_tools, to_openai_tool


def test_bfcl_types_keep_their_original_names(data_dir: Path) -> None:
    line = (data_dir / "bfcl" / "BFCL_v4_simple_python.json").read_text().splitlines()[0]
    (tool,) = load_tools(json.loads(line)["function"])
    assert tool.name == "calculate_triangle_area" and tool.parameters["type"] == "object"
    assert tool.required == ["base", "height"]
    area = load_tool(
        {
            "name": "a",
            "parameters": {"type": "dict", "properties": {"r": {"type": "float"}, "p": {"type": "tuple"}}},
        }
    )
    assert area.properties["r"] == {"type": "number", "x-original-type": "float"}
    assert area.properties["p"]["type"] == "array"


def test_nestools_spec_with_responses(data_dir: Path) -> None:
    rec = json.loads((data_dir / "nestools" / "test_data.jsonl").read_text().splitlines()[0])
    tools = load_tools(rec["api"])
    assert detect_dialect(rec["api"][0]) == "nestools"
    assert tools[0].properties["isbn"]["type"] == "string"
    assert (
        tools[0].returns is not None and tools[0].returns["properties"]["availability"]["type"] == "boolean"
    )


def test_enum_on_an_array_moves_to_its_items() -> None:
    tool = load_tool(
        {
            "name": "f",
            "parameters": {
                "type": "dict",
                "properties": {"m": {"type": "array", "items": {"type": "string"}, "enum": ["a", "b"]}},
            },
        }
    )
    assert tool.properties["m"]["items"] == {"type": "string", "enum": ["a", "b"]}
    assert "enum" not in tool.properties["m"] and tool.properties["m"]["x-enum-on-array"] is True
    whole = load_tool(
        {
            "name": "g",
            "parameters": {
                "type": "object",
                "properties": {"m": {"type": "array", "items": {}, "enum": [[1, 2]]}},
            },
        }
    )
    assert whole.properties["m"]["enum"] == [[1, 2]]


def test_openai_and_critictool_dialects_and_round_trip() -> None:
    oa = load_tool(
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
            },
        }
    )
    assert to_openai_tool(oa)["function"]["parameters"]["properties"] == {"x": {"type": "integer"}}
    ct = load_tool(
        {
            "name": "Email.send",
            "required_parameters": [{"name": "to", "type": "STRING"}],
            "optional_parameters": [{"name": "cc", "type": "STRING"}],
        }
    )
    assert ct.required == ["to"] and set(ct.properties) == {"to", "cc"}


def test_bad_files_name_the_file_line_and_entry(tmp_path: Path) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text('[{"name": "ok"},\n {"name": 3')
    with pytest.raises(DatasetError, match=r"tools.json, line 2: not valid JSON"):
        load_tools(bad)
    bad.write_text('[{"name": "ok"}, {"description": "no name"}]')
    with pytest.raises(DatasetError, match=r"field '\[1\]'.*non-empty name"):
        load_tools(bad)
    with pytest.raises(DatasetError, match="cannot read"):
        load_tools(tmp_path / "missing.json")
