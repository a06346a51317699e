from __future__ import annotations

from typing import Any

import pytest

from toolmend.check._coerce import NO_COERCION, coerce, json_type
from toolmend.check._names import best_match, closest, fold, key_alias


def test_fold_and_aliases() -> None:
    assert fold("math.factorial") == fold("math_factorial") == "mathfactorial"
    assert key_alias("user-id", ["user_id"]) == "user_id"
    assert key_alias("USERID", ["user_id", "username"]) == "user_id"
    assert key_alias("locaton", ["location"]) == "location"
    assert key_alias("ab", ["xy"]) is None


def test_ambiguous_alias_and_tie_return_none() -> None:
    assert key_alias("cat", ["bat", "hat"]) is None
    assert best_match("get_x", ["get_a", "get_b"]) is None
    assert best_match("math_factorial", ["math.factorial", "math.gcd"]) == "math.factorial"
    assert best_match("weather", ["get_time"]) is None
    assert closest("get_wether", ["get_weather", "book"]) == ["get_weather"]


@pytest.mark.parametrize(
    ("value", "types", "out"),
    [
        ("5", ("integer",), 5),
        (" -5 ", ("integer",), -5),
        (5.0, ("integer",), 5),
        ("5.0", ("integer",), 5),
        ("2.5", ("number",), 2.5),
        ("7", ("number",), 7),
        ("True", ("boolean",), True),
        ("false", ("boolean",), False),
        (7, ("string",), "7"),
        ("[1, 2]", ("array",), [1, 2]),
        ('{"a": 1}', ("object",), {"a": 1}),
        ("Paris", ("array",), ["Paris"]),
        (["Paris"], ("string",), "Paris"),
        (["5"], ("integer",), 5),
    ],
)
def test_safe_coercions(value: Any, types: tuple[str, ...], out: Any) -> None:
    got = coerce(value, types)
    assert got == out and type(got) is type(out)


@pytest.mark.parametrize(
    ("value", "types"),
    [
        ("five", ("integer",)),
        (2.5, ("integer",)),
        (1, ("boolean",)),
        ("yes", ("boolean",)),
        (True, ("string",)),
        ("nan", ("number",)),
        ("{bad", ("object",)),
        (["a", "b"], ("string",)),
        (None, ("array",)),
    ],
)
def test_unsafe_conversions_are_refused(value: Any, types: tuple[str, ...]) -> None:
    assert coerce(value, types) is NO_COERCION


def test_json_type() -> None:
    assert [json_type(v) for v in (None, True, 1, 1.5, "s", (1,), {})] == [
        "null",
        "boolean",
        "integer",
        "number",
        "string",
        "array",
        "object",
    ]
