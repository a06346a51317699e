"""No value can make a check take super-linear time: patterns run on RE2, uniqueItems hashes.

Sizes, not clocks: each input is one that a backtracking engine or a pairwise comparison would
take hours (or far longer) over, so the test finishing at all is the check.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolmend._errors import SpecError
from toolmend._schema import ToolCall
from toolmend.check import Checker
from toolmend.check._spec import _canonical, _unique, regex


def _checker(schema: dict[str, Any]) -> Checker:
    return Checker([{"name": "f", "parameters": {"type": "object", "properties": {"v": schema}}}])


def _codes(checker: Checker, value: Any) -> list[str]:
    return [f.code for f in checker.check_call(ToolCall(name="f", arguments={"v": value}))]


def test_nested_quantifiers_match_in_linear_time() -> None:
    # A backtracking engine tries about 2**n ways to split n a's before it gives up on the "b":
    # at n = 30 that is already a billion steps; here n is 200,000.
    for pattern in ("^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "(x+x+)+y"):
        checker = _checker({"type": "string", "pattern": pattern})
        text = ("x" if "x" in pattern else "a") * 200_000 + "b"
        assert _codes(checker, text) == ["invalid_value"], pattern
    keys = Checker([{"name": "f", "parameters": {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}},
                                                 "propertyNames": {"pattern": "^(a|a)*$"}}}])  # fmt: skip
    codes = [f.code for f in keys.check_call(ToolCall(name="f", arguments={"a" * 100_000 + "b": 1}))]
    assert codes == ["invalid_value"]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", "backtracking"),
        (r"^(?=.*\d)\w+$", "backtracking"),
        (r"(?<!x)y", "backtracking"),
        ("(", "not a valid"),
    ],
)
def test_patterns_that_need_backtracking_are_refused_with_the_reason(pattern: str, why: str) -> None:
    for schema in (
        {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}},
        {"type": "object", "patternProperties": {pattern: {}}},
        {"type": "object", "propertyNames": {"pattern": pattern}},
    ):
        with pytest.raises(SpecError, match=why):
            Checker([{"name": "f", "parameters": schema}]).verify()


def test_ecma_meanings_of_classes_and_anchors() -> None:
    """RE2 reads these as ECMA-262 does (and unlike Python's re): ASCII \\d, $ only at the end."""
    assert regex(r"^\d+$").search("١٢٣") is None  # Arabic-Indic digits are no \d in ECMA-262
    assert regex("^a$").search("a\n") is None
    assert regex(r"^\p{Letter}+$").search("Ωmega") is not None


def test_unique_items_hashes_once_per_item() -> None:
    checker = _checker({"type": "array", "uniqueItems": True})
    # 30,000 distinct objects: pairwise comparison would be 4.5 * 10**8 of them (minutes).
    many = [{"id": i, "tags": [i % 7, str(i)]} for i in range(30_000)]
    assert _codes(checker, many) == []
    assert _codes(checker, [*many, {"tags": [3, "3"], "id": 3}]) == ["invalid_value"]


def test_unique_items_follows_json_equality() -> None:
    def unique(items: list[Any]) -> bool:
        return not list(_unique(None, True, items, {}))

    assert not unique([1, 1.0])
    assert unique([True, 1]) and unique([False, 0]) and unique([[True], [1]])
    assert not unique([{"a": 1, "b": [2.0]}, {"b": [2], "a": 1.0}])
    assert unique([{"a": None}, {}]) and unique(["1", 1]) and unique([[1, 2], [2, 1]])
    assert _canonical({"a": [1]}) == _canonical({"a": [1.0]})
