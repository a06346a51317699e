from __future__ import annotations

import pytest

from toolmend.formats._lenient import find_spans, load_lenient, split_fences, to_json_value


def test_strict_json_is_reported_as_json() -> None:
    assert load_lenient('{"a": [1, 2.5, null, true]}') == ({"a": [1, 2.5, None, True]}, "json")


def test_python_literals_are_read_without_eval() -> None:
    value, how = load_lenient("{'a': (1, 2), 'b': None, 'c': 'it\\'s'}")
    assert how == "python"
    assert value == {"a": [1, 2], "b": None, "c": "it's"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1,}', {"a": 1}),
        ('{"a": true, "b": [1, 2,],}', {"a": True, "b": [1, 2]}),
        ("{'a': true, 'b': null}", {"a": True, "b": None}),
        ('{"a": 1 // the count\n}', {"a": 1}),
        ('{"a": "line one\nline two"}', {"a": "line one\nline two"}),
        ("{'q': \"say \\\"hi\\\"\", 'r': 'x'}", {"q": 'say "hi"', "r": "x"}),
    ],
)
def test_repairs_common_breakage(text: str, expected: object) -> None:
    value, how = load_lenient(text)
    assert value == expected
    assert how in ("python", "repaired")


@pytest.mark.parametrize("text", ['{"a": 1', "{'a': 'unterminated}", "name: value", "", "{a b c}"])
def test_unrecoverable_text_raises_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        load_lenient(text)


def test_python_only_types_are_refused() -> None:
    with pytest.raises(ValueError):
        to_json_value({1, 2})
    with pytest.raises(ValueError):
        load_lenient("b'bytes'")


def test_find_spans_respects_strings_and_reports_cut_off_regions() -> None:
    text = 'a {"x": "}"} b [1, {"y": 2}] c {"z": '
    spans = find_spans(text)
    assert [(text[s.start : s.end], s.closed) for s in spans] == [
        ('{"x": "}"}', True),
        ('[1, {"y": 2}]', True),
        ('{"z": ', False),
    ]


def test_find_spans_keeps_apostrophes_in_prose_out_of_string_tracking() -> None:
    text = "I don't know {'a': 1}"
    [span] = find_spans(text)
    assert text[span.start : span.end] == "{'a': 1}"


def test_split_fences_handles_language_and_unclosed_fence() -> None:
    blocks, outside = split_fences("pre\n```json\n[1]\n```\nmid\n```python\nf(a=1)")
    assert blocks == [("json", "[1]\n"), ("python", "f(a=1)")]
    assert "pre" in outside and "mid" in outside and "f(a=1)" not in outside
