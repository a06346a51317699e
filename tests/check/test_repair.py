"""Each safe fix, that it names the finding it answers, and what repair must leave alone."""

from __future__ import annotations

from typing import Any

from toolmend._schema import Ref, ToolCall
from toolmend.check import Checker, repair

TOOLS: list[dict[str, Any]] = [
    {
        "name": "math.factorial",
        "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
    },
    {
        "name": "book_hotel",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "nights": {"type": "integer", "minimum": 1},
                "price": {"type": "float"},
                "breakfast": {"type": "boolean"},
                "room": {"type": "string", "enum": ["single", "double"]},
                "guests": {"type": "array", "items": {"type": "string"}},
                "user_id": {"type": "string"},
                "note": {"type": "string"},
            },
            "required": ["city", "nights"],
        },
    },
]


def _one(args: dict[str, Any], name: str = "book_hotel") -> Any:
    return repair([ToolCall(name=name, arguments=args)], TOOLS)


def test_clean_calls_are_untouched() -> None:
    result = _one({"city": "Rome", "nights": 2})
    assert not result.changed and result.clean
    assert result.calls[0].arguments == {"city": "Rome", "nights": 2}


def test_fuzzy_tool_name_dot_underscore() -> None:
    result = _one({"number": 5}, name="math_factorial")
    (fix,) = result.fixes
    assert (fix.action, fix.before, fix.after, fix.finding.code) == (
        "rename_tool",
        "math_factorial",
        "math.factorial",
        "wrong_tool_name",
    )
    assert result.calls[0].name == "math.factorial" and result.clean


def test_unrelated_tool_name_is_not_guessed() -> None:
    result = _one({}, name="send_email")
    assert result.calls[0].name == "send_email"
    assert [f.code for f in result.findings] == ["wrong_tool_name"]


def test_type_coercions() -> None:
    result = _one({"city": "Rome", "nights": "3", "price": "99.5", "breakfast": "TRUE", "guests": "Ann"})
    assert result.calls[0].arguments == {
        "city": "Rome",
        "nights": 3,
        "price": 99.5,
        "breakfast": True,
        "guests": ["Ann"],
    }
    assert sorted((f.path, f.before, f.after) for f in result.fixes) == [
        ("breakfast", "TRUE", True),
        ("guests", "Ann", ["Ann"]),
        ("nights", "3", 3),
        ("price", "99.5", 99.5),
    ]
    assert all(f.action == "coerce" and f.finding.code == "invalid_type" for f in result.fixes)
    assert result.clean


def test_integral_float_to_integer_and_number_to_string() -> None:
    result = _one({"city": "Rome", "nights": 2.0, "user_id": 1234})
    assert result.calls[0].arguments == {"city": "Rome", "nights": 2, "user_id": "1234"}


def test_enum_case() -> None:
    result = _one({"city": "Rome", "nights": 1, "room": "Double"})
    (fix,) = result.fixes
    assert (fix.action, fix.after, fix.finding.code) == ("enum_case", "double", "invalid_value")
    assert result.calls[0].arguments["room"] == "double"


def test_key_aliases_keep_position_and_drop_unknown_keys() -> None:
    result = _one({"City": "Rome", "userId": "u1", "nigths": 2, "colour": "red"})
    assert list(result.calls[0].arguments.items()) == [("city", "Rome"), ("user_id", "u1"), ("nights", 2)]
    actions = sorted((f.action, str(f.before)) for f in result.fixes)
    assert actions == [
        ("drop_key", "{'colour': 'red'}"),
        ("rename_key", "City"),
        ("rename_key", "nigths"),
        ("rename_key", "userId"),
    ]
    assert all(f.finding.code == "redundant_parameter" for f in result.fixes)
    assert result.clean


def test_empty_optional_is_dropped_but_empty_required_stays() -> None:
    result = _one({"city": "", "nights": 1, "note": ""})
    assert result.calls[0].arguments == {"city": "", "nights": 1}
    assert [f.action for f in result.fixes] == ["drop_empty"]
    assert [(f.code, f.path) for f in result.findings] == [("empty_value", "city")]


def test_never_invents_values() -> None:
    result = _one({"city": "Rome", "nights": 0, "room": "suite", "price": "cheap"})
    assert result.fixes == []
    assert sorted(f.code for f in result.findings) == ["invalid_type", "invalid_value", "invalid_value"]
    missing = _one({"city": "Rome"})
    assert [f.code for f in missing.findings] == ["missing_required"] and not missing.changed


def test_duplicate_calls_beyond_the_expected_count_are_dropped() -> None:
    a = ToolCall(name="math.factorial", arguments={"number": 5})
    b = ToolCall(name="math.factorial", arguments={"number": 6})
    result = repair([a, b, a, a], TOOLS, expected_count=3)
    assert [c.arguments["number"] for c in result.calls] == [5, 6, 5]
    (fix,) = result.fixes
    assert (fix.action, fix.call, fix.finding.code) == ("drop_call", 3, "duplicate_call")
    free = repair([a, a, b], TOOLS)
    assert len(free.calls) == 2 and free.clean


def test_fix_after_rename_reports_the_original_call_index() -> None:
    calls = [
        ToolCall(name="math.factorial", arguments={"number": 1}),
        ToolCall(name="bookHotel", arguments={"city": "X", "nights": "2"}),
    ]
    result = repair(calls, Checker(TOOLS))
    assert [(f.call, f.action) for f in result.fixes] == [(1, "rename_tool"), (1, "coerce")]
    assert result.fixes[1].describe() == "call 1 'nights': coerce '2' -> 2"


def test_input_calls_are_not_modified_and_refs_are_left_alone() -> None:
    call = ToolCall(
        name="book_hotel", arguments={"city": "Rome", "nights": "2", "note": Ref(target="API_call_0")}
    )
    repair([call], TOOLS)
    assert call.arguments["nights"] == "2"
    assert isinstance(call.arguments["note"], Ref)


def test_text_for_a_declared_float_becomes_a_float() -> None:
    result = _one({"city": "Rome", "nights": 1, "price": "99"})
    value = result.calls[0].arguments["price"]
    assert value == 99.0 and type(value) is float
