"""The one JSON reader and writer (``toolmend._jsontext``): its stated rules, checked at the owner
and at every reader that goes through it (predictions, replay, training rows, world tasks, tool
files, benchmark data, run records)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from toolmend import _jsontext as jt
from toolmend._errors import DatasetError

# The characters str.splitlines() breaks at that JSON allows raw in a string (the others are
# control characters, which JSON escapes).
BREAKS = ["\u2028", "\u2029", "\x85"]
DEEP = "[" * 100_000 + "]" * 100_000


# -- lines ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", BREAKS, ids=[f"U+{ord(c):04X}" for c in BREAKS])
def test_lines_split_at_newline_only(char: str) -> None:
    first = json.dumps({"text": f"a{char}b"}, ensure_ascii=False)
    assert char in first
    got = list(jt.lines(f"{first}\r\n\n  \n[2]\n"))
    assert got == [(1, first), (4, "[2]")]
    assert jt.loads(got[0][1]) == {"text": f"a{char}b"}


@pytest.mark.parametrize("char", ["\u2028", "\u2029"])
def test_read_jsonl_keeps_a_record_whole(tmp_path: Path, char: str) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(f'{{"a": "x{char}y"}}\r\n{{"b": 2}}\n'.encode())
    assert list(jt.read_jsonl(path)) == [(1, {"a": f"x{char}y"}), (2, {"b": 2})]


# -- byte order mark --------------------------------------------------------------------------------


def test_a_bom_at_the_start_is_skipped_everywhere(tmp_path: Path) -> None:
    bom = "\ufeff"
    assert jt.loads(bom + '{"a": 1}') == {"a": 1}
    assert jt.loads(b"\xef\xbb\xbf" + b'{"a": 1}') == {"a": 1}
    doc = tmp_path / "a.json"
    doc.write_text(bom + '[{"a": 1}]', encoding="utf-8")
    assert jt.read_json(doc) == [{"a": 1}]
    rows = tmp_path / "a.jsonl"
    rows.write_text(bom + '{"a": 1}\n{"a": 2}\n', encoding="utf-8")
    assert list(jt.read_jsonl(rows)) == [(1, {"a": 1}), (2, {"a": 2})]
    assert jt.read_text(rows).startswith('{"a": 1}')
    # Inside the text it is text, as any other character.
    assert jt.loads('"x\ufeffy"') == "x\ufeffy"


def test_every_jsonl_reader_takes_a_bom_and_u2028(tmp_path: Path) -> None:
    from toolmend.benchmarks._predictions import read_predictions
    from toolmend.models._fakes import ReplayModel
    from toolmend.train._recipes import load_rows

    path = tmp_path / "pred.jsonl"
    path.write_text(
        '\ufeff{"id": "a", "output": "x\u2028y"}\r\n{"id": "b", "output": "z"}\n', encoding="utf-8"
    )
    preds = read_predictions(path)
    assert preds.problems == [] and preds.outputs == {"a": "x\u2028y", "b": "z"}
    assert ReplayModel(path).outputs == {"a": ["x\u2028y"], "b": ["z"]}
    assert [r["id"] for r in load_rows(path)] == ["a", "b"]


def test_world_tasks_and_tool_files_take_a_bom_and_u2028(tmp_path: Path) -> None:
    from toolmend.benchmarks.world._benchmark import read_tasks
    from toolmend.formats import load_tools
    from toolmend.world import generate_tasks

    task = next(iter(generate_tasks(0)))
    line = task.model_dump_json()
    path = tmp_path / "tasks.jsonl"
    path.write_text("\ufeff" + line + "\n", encoding="utf-8")
    assert [t.model_dump_json() for t in read_tasks(path)] == [line]
    tools = tmp_path / "tools.jsonl"
    tools.write_text(
        '\ufeff{"name": "a", "description": "x\u2028y"}\n{"name": "b", "description": "z"}\n',
        encoding="utf-8",
    )
    assert [(t.name, t.description) for t in load_tools(tools)] == [("a", "x\u2028y"), ("b", "z")]


# -- depth ------------------------------------------------------------------------------------------


def test_nesting_beyond_the_limit_is_an_error_not_a_recursion_error() -> None:
    assert jt.depth(jt.loads("[" * jt.MAX_DEPTH + "]" * jt.MAX_DEPTH), 10_000) == jt.MAX_DEPTH
    for text in (DEEP, DEEP.encode(), "[" * (jt.MAX_DEPTH + 1) + "]" * (jt.MAX_DEPTH + 1)):
        with pytest.raises(json.JSONDecodeError, match="nested too deeply") as info:
            jt.loads(text)
        assert info.value.pos == jt.MAX_DEPTH  # the bracket that goes one level too deep
    # Within the standard library's path too (a NaN or a lone surrogate sends text there).
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        jt.loads('["\\ud83d", NaN, ' + DEEP + "]")
    # Brackets inside strings are text, not nesting.
    assert jt.loads(json.dumps(["[" * 10_000])) == ["[" * 10_000]


def test_a_deep_line_names_the_file_and_line(tmp_path: Path) -> None:
    from toolmend.benchmarks._predictions import read_predictions
    from toolmend.models._fakes import ReplayModel
    from toolmend.train._recipes import load_rows

    path = tmp_path / "deep.jsonl"
    path.write_text(
        '{"id": "a", "output": "x"}\n' + '{"id": "b", "output": ' + DEEP + "}\n", encoding="utf-8"
    )
    with pytest.raises(DatasetError, match=r"deep.jsonl, line 2: not valid JSON \(nested too deeply"):
        list(jt.read_jsonl(path))
    with pytest.raises(DatasetError, match=r"deep.jsonl, line 2: not valid JSON \(nested too deeply"):
        ReplayModel(path)
    with pytest.raises(DatasetError, match=r"deep.jsonl, line 2: not JSON: nested too deeply"):
        load_rows(path)
    assert [str(p) for p in read_predictions(path).problems] == [
        f"line 2: not valid JSON (nested too deeply (more than {jt.MAX_DEPTH} levels))"
    ]
    doc = tmp_path / "deep.json"
    doc.write_text(DEEP, encoding="utf-8")
    with pytest.raises(DatasetError, match=r"deep.json: not valid JSON \(nested too deeply"):
        jt.read_json(doc)


def test_a_deep_world_task_or_run_record_is_a_dataset_error(tmp_path: Path) -> None:
    from toolmend.benchmarks.world._benchmark import read_tasks

    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": ' + DEEP + "}\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="tasks.jsonl:1"):
        read_tasks(path)


# -- NaN and Infinity -------------------------------------------------------------------------------


def test_non_finite_numbers_are_read_as_floats_and_written_as_null() -> None:
    value = jt.loads('{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e400}')
    assert math.isnan(value["a"]) and value["b"] == value["d"] == math.inf and value["c"] == -math.inf
    assert jt.dumps(value) == '{"a":null,"b":null,"c":null,"d":null}'
    # On the standard library's path as well (a lone surrogate sends the value there), at any depth.
    mixed = {"s": "\ud83d", "x": [float("nan"), {"y": float("-inf")}], 1: 2.5}
    text = jt.dumps(mixed)
    assert text == '{"s":"\\ud83d","x":[null,{"y":null}],"1":2.5}'
    json.loads(text, parse_constant=lambda c: pytest.fail(f"wrote {c}"))
    assert jt.dumps([float("nan")], indent=2) == "[\n  null\n]"


def test_what_default_returns_is_held_to_the_same_rule() -> None:
    class Score:
        pass

    assert (
        jt.dumps({"s": Score(), "t": "\ud83d"}, default=lambda _: float("nan")) == '{"s":null,"t":"\\ud83d"}'
    )


# -- lone surrogates and the fast path --------------------------------------------------------------


def test_lone_surrogates_are_written_escaped_and_read_back() -> None:
    for value in ("\ud83d", "cut \ud83d", "\udc00x", {"k\ud83d": ["\ud83d"]}):
        raw = jt.dumpb(value)
        raw.decode("utf-8")  # valid UTF-8
        assert jt.loads(raw) == value and jt.loads(raw.decode()) == value
    # A whole pair is one character: written as it is.
    assert jt.dumps("\U0001f600") == '"\U0001f600"'


@pytest.mark.parametrize(
    "value",
    [
        {"city": "Zürich", "n": [1, 2.5, -0.0, 1e-7, 1e22, True, None], "e": {}, "l": []},
        {"big": 2**64 + 1, "neg": -(2**63) - 1, "edge": 2**64 - 1},
        {"order": {"b": 1, "a": 2}},
        ["\u2028", "\x00\x1f", "\\", '"', "</script>"],
        (1, 2),
    ],
)
def test_writer_and_reader_agree_with_the_standard_library(value: Any) -> None:
    want = json.loads(json.dumps(value))
    for indent in (None, 2, 4):
        for sort_keys in (False, True):
            text = jt.dumps(value, indent=indent, sort_keys=sort_keys)
            assert json.loads(text) == want
            assert jt.loads(text) == want and jt.loads(text.encode()) == want


def test_the_written_style_is_the_same_on_both_paths() -> None:
    # Compact, or indented with ": "; the standard library's path (taken for the surrogate) agrees.
    value = {"b": [1, {"c": None}], "a": "Zürich"}
    for options in ({}, {"indent": 2}, {"sort_keys": True}):
        fast = jt.dumps(value, **options)  # type: ignore[arg-type]
        slow = jt.dumps({**value, "s": "\ud83d"}, **options)  # type: ignore[arg-type]
        assert fast == json.dumps(value, ensure_ascii=False, separators=(",", ":") if not options.get("indent")
                                  else (",", ": "), **options)  # fmt: skip
        assert slow.replace(',"s":"\\ud83d"', "").replace(',\n  "s": "\\ud83d"', "") == fast


def test_every_indent_width_is_the_standard_librarys_layout() -> None:
    # Widths other than 2 are orjson's output re-indented; the bytes must be what json.dumps writes.
    value = {"b": [1, {"c": None, "d": [], "e": {}}], "a": "Zürich\nline", "z": [[["deep"]]], "f": 2.5}
    for indent in (1, 3, 4):
        for sort_keys in (False, True):
            want = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
            assert jt.dumps(value, indent=indent, sort_keys=sort_keys) == want


def test_integers_beyond_64_bits_are_read_exactly() -> None:
    # orjson would read them as floats; the reader takes them as the standard library does.
    for n in (2**64, 2**64 + 1, -(2**63) - 1, 10**30):
        assert jt.loads(str(n)) == n and type(jt.loads(str(n).encode())) is int
    assert jt.loads('{"id": "12345678901234567890123"}') == {"id": "12345678901234567890123"}


def test_what_json_cannot_hold_is_a_type_error_as_in_the_standard_library() -> None:
    with pytest.raises(TypeError):
        jt.dumps({"a": object()})
    assert jt.dumps({"a": object()}, default=lambda o: "obj") == '{"a":"obj"}'


def test_bad_json_is_a_json_decode_error_with_the_standard_message() -> None:
    for bad in ("", "{", '{"a": }', "[1,]", b"\xff"):
        with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)):
            jt.loads(bad)
    with pytest.raises(json.JSONDecodeError, match="Expecting value: line 1 column 7"):
        jt.loads('{"a": }')
