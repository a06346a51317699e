"""Corrupted benchmark files get a DatasetError naming file, line and field, never a raw
TypeError; duplicate ids are reported at load time with both lines (issue 16, item 10)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from toolmend._errors import DatasetError
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks

WRONG: list[Any] = [None, 5, "x", {"k": 1}, [1], True]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if len(prefix) < 4 and isinstance(value, dict):
        for k, v in list(value.items())[:8]:
            out += _paths(v, (*prefix, k))
    elif len(prefix) < 4 and isinstance(value, list):
        for i, v in enumerate(value[:2]):
            out += _paths(v, (*prefix, i))
    return out


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for k in path[:-1]:
        value = value[k]
    value[path[-1]] = new


@pytest.mark.parametrize(
    ("bench", "folder", "file"),
    [
        ("nestools", "nestools", "test_data.jsonl"),
        ("reflection-bench", "tool-reflection-bench", "test_qwen_sample.jsonl"),
    ],
)
def test_every_wrong_field_type_is_a_dataset_error(
    tmp_path: Path, data_dir: Path, bench: str, folder: str, file: str
) -> None:
    load_builtin_benchmarks()
    src = data_dir / folder
    rows = [json.loads(x) for x in (src / file).read_text(encoding="utf-8").splitlines()[:2]]
    work = tmp_path / "data"
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("*.md", "LICENSE"))
    tried = 0
    for path in _paths(rows[0]):
        for wrong in WRONG:
            mutated = json.loads(json.dumps(rows))
            _set(mutated[0], path, wrong)
            (work / file).write_text("\n".join(json.dumps(r) for r in mutated) + "\n", encoding="utf-8")
            tried += 1
            try:
                BENCHMARKS.get(bench)().load(work)
            except DatasetError as exc:
                assert str(work / file) in str(exc) or "line" in str(exc), str(exc)
    assert tried > 40


def test_duplicate_ids_name_both_lines(tmp_path: Path, data_dir: Path) -> None:
    load_builtin_benchmarks()
    work = tmp_path / "nestools"
    shutil.copytree(data_dir / "nestools", work, ignore=shutil.ignore_patterns("*.md", "LICENSE"))
    lines = (work / "test_data.jsonl").read_text(encoding="utf-8").splitlines()
    (work / "test_data.jsonl").write_text("\n".join([lines[0], lines[1], lines[0]]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 3, field 'test_id': duplicate id '1': also on line 1"):
        BENCHMARKS.get("nestools")().load(work)
