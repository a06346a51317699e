"""The shared JSON / JSON Lines readers: values with line numbers, errors naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmend._errors import DatasetError
from toolmend.benchmarks._io import read_json, read_jsonl


def test_jsonl_skips_blank_lines_and_keeps_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n  \n[2]\n"x\u2028y"\n', encoding="utf-8")
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (4, [2]), (5, "x\u2028y")]


def test_jsonl_objects_only(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n[2]\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"a.jsonl, line 2: expected a JSON object, got list"):
        list(read_jsonl(path, objects=True))


def test_jsonl_bad_line_missing_file_and_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"a.jsonl, line 2: not valid JSON \(Expecting value"):
        list(read_jsonl(path))
    with pytest.raises(DatasetError, match="cannot read"):
        list(read_jsonl(tmp_path / "missing.jsonl"))
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(DatasetError, match="not UTF-8 text"):
        list(read_jsonl(path))


def test_json_document(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('[{"a": 1}]', encoding="utf-8")
    assert read_json(path) == [{"a": 1}]
    path.write_text("[1,", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"a.json: not valid JSON \(.*line 1, column 4\)"):
        read_json(path)
    with pytest.raises(DatasetError, match="cannot read"):
        read_json(tmp_path / "missing.json")


def test_reads_the_real_nestools_ids(data_dir: Path) -> None:
    rows = list(read_jsonl(data_dir / "nestools" / "test_api_ids.jsonl", objects=True))
    assert rows[0][0] == 1 and isinstance(rows[0][1]["api_ids"], list)
    assert len(rows) > 100
