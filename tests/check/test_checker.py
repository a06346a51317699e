"""One test per checklist code, plus the type rules and reference handling."""

from __future__ import annotations

from typing import Any

import pytest

from toolmend._schema import Finding, Ref, Tool, ToolCall
from toolmend.check import Checker, check, format_path, repair

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "detailed": {"type": "boolean"},
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            "filters": {
                "type": "object",
                "properties": {
                    "min_temp": {"type": "number"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["min_temp"],
            },
        },
        "required": ["city"],
    },
}
TIME: dict[str, Any] = {
    "name": "get_time",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
}


def _codes(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.code, f.path) for f in findings]


def _check(args: dict[str, Any], name: str = "get_weather") -> list[Finding]:
    return check([ToolCall(name=name, arguments=args)], [WEATHER, TIME])


def test_clean_call_has_no_findings() -> None:
    args = {"city": "Oslo", "days": 3, "unit": "celsius", "detailed": False, "zip": "12345"}
    assert _check({**args, "filters": {"min_temp": 2.5, "tags": ["a"]}}) == []


def test_wrong_tool_name_carries_closest_names() -> None:
    (f,) = _check({"city": "Oslo"}, name="get_wether")
    assert f.code == "wrong_tool_name" and f.call == 0 and f.path == ""
    assert f.data["closest"][0] == "get_weather"
    assert f.suggestion == "Did you mean 'get_weather'?"


def test_wrong_tool_name_without_near_miss_lists_tools() -> None:
    (f,) = _check({}, name="book_flight")
    assert f.data["closest"] == []
    assert "get_weather" in (f.suggestion or "")


def test_missing_required_top_level_and_nested() -> None:
    assert _codes(_check({"days": 2})) == [("missing_required", "city")]
    assert _codes(_check({"city": "Oslo", "filters": {"tags": []}})) == [
        ("missing_required", "filters.min_temp")
    ]
    (f,) = _check({})
    assert f.suggestion is not None and "City name" in f.suggestion


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ({"city": 5}, "city"),
        ({"city": "Oslo", "days": "3"}, "days"),
        ({"city": "Oslo", "days": 3.0}, "days"),  # BFCL: a float is not an integer
        ({"city": "Oslo", "days": True}, "days"),  # nor is a bool
        ({"city": "Oslo", "detailed": "true"}, "detailed"),
        ({"city": "Oslo", "filters": {"min_temp": "2"}}, "filters.min_temp"),
        ({"city": "Oslo", "filters": {"min_temp": 1, "tags": ["a", 2]}}, "filters.tags[1]"),
        ({"city": "Oslo", "filters": "cold"}, "filters"),
    ],
)
def test_invalid_type(args: dict[str, Any], path: str) -> None:
    assert _codes(_check(args)) == [("invalid_type", path)]


def test_int_is_accepted_for_number_and_bfcl_float() -> None:
    tool = {
        "name": "area",
        "parameters": {"type": "dict", "properties": {"r": {"type": "float"}}, "required": ["r"]},
    }
    assert check([ToolCall(name="area", arguments={"r": 2})], [tool]) == []
    assert _codes(check([ToolCall(name="area", arguments={"r": "2"})], [tool])) == [("invalid_type", "r")]


def test_bfcl_tuple_is_an_array_and_any_accepts_anything() -> None:
    tool = {
        "name": "f",
        "parameters": {
            "type": "dict",
            "properties": {"p": {"type": "tuple", "items": {"type": "integer"}}, "x": {"type": "any"}},
        },
    }
    assert check([ToolCall(name="f", arguments={"p": [1, 2], "x": {"a": 1}})], [tool]) == []
    assert _codes(check([ToolCall(name="f", arguments={"p": 1})], [tool])) == [("invalid_type", "p")]


def test_type_suggestion_offers_the_safe_conversion() -> None:
    (f,) = _check({"city": "Oslo", "days": "3"})
    assert f.suggestion == "Use 3 instead of '3'."
    assert f.data["expected"] == ["integer"] and f.data["got"] == "string"


def test_empty_value() -> None:
    assert _codes(_check({"city": ""})) == [("empty_value", "city")]
    assert _codes(_check({"city": None})) == [("empty_value", "city")]
    # A single space is a real value (a separator, say); null for an optional parameter is omission.
    assert _check({"city": " ", "unit": None}) == []


def test_empty_string_allowed_when_enum_lists_it() -> None:
    tool = {
        "name": "f",
        "parameters": {"type": "object", "properties": {"s": {"type": "string", "enum": ["", "a"]}}},
    }
    assert check([ToolCall(name="f", arguments={"s": ""})], [tool]) == []


def test_redundant_parameter_plain_and_near_miss() -> None:
    (plain,) = _check({"city": "Oslo", "language": "en"})
    assert (plain.code, plain.path, plain.data["alias"]) == ("redundant_parameter", "language", None)
    assert "Remove 'language'" in (plain.suggestion or "")
    findings = _check({"City": "Oslo"})
    assert _codes(findings) == [("redundant_parameter", "City"), ("missing_required", "city")]
    assert findings[0].data["alias"] == "city"
    assert "did you mean 'city'" in findings[0].message


def test_redundant_nested_key_and_tool_without_parameters() -> None:
    assert _codes(_check({"city": "Oslo", "filters": {"min_temp": 1, "colour": "red"}})) == [
        ("redundant_parameter", "filters.colour")
    ]
    bare = {"name": "ping", "parameters": {"type": "object", "properties": {}}}
    assert _codes(check([ToolCall(name="ping", arguments={"x": 1})], [bare])) == [
        ("redundant_parameter", "x")
    ]


def test_free_form_object_and_additional_properties_stay_open() -> None:
    tool = {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {
                "meta": {"type": "object"},
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            },
        },
    }
    assert check([ToolCall(name="f", arguments={"meta": {"any": 1}, "counts": {"a": 1}})], [tool]) == []
    assert _codes(check([ToolCall(name="f", arguments={"counts": {"a": "x"}})], [tool])) == [
        ("invalid_type", "counts.a")
    ]


@pytest.mark.parametrize(
    "parameters",
    [{"type": "object"}, {}, {"type": "object", "required": ["a"]}, {"type": "object", "description": "x"}],
)
def test_parameters_without_properties_take_any_arguments(parameters: dict[str, Any]) -> None:
    """No ``properties`` and no ``additionalProperties: false``: every argument is allowed."""
    args = {"a": 1, "b": {"c": [1, "x"]}, "d": None}
    for tools in ([{"name": "f", "parameters": parameters}], [Tool(name="f", parameters=parameters)]):
        checker = Checker(tools)
        call = ToolCall(name="f", arguments=args)
        assert checker.check([call]) == []
        assert checker.check_call(call) == []
        result = repair([call], checker)
        assert result.calls[0].arguments == args and not result.fixes and result.clean
    # Still a JSON Schema object: "required" and "additionalProperties: false" keep their meaning.
    closed = {"type": "object", "required": ["a"], "additionalProperties": False}
    assert _codes(check([ToolCall(name="f", arguments={"b": 1})], [{"name": "f", "parameters": closed}])) == [
        ("redundant_parameter", "b"),
        ("missing_required", "a"),
    ]


@pytest.mark.parametrize(
    ("args", "keyword"),
    [
        ({"city": "Oslo", "unit": "kelvin"}, "enum"),
        ({"city": "Oslo", "days": 0}, "range"),
        ({"city": "Oslo", "days": 15}, "range"),
        ({"city": "Oslo", "zip": "1234a"}, "pattern"),
    ],
)
def test_invalid_value(args: dict[str, Any], keyword: str) -> None:
    (f,) = _check(args)
    assert f.code == "invalid_value" and f.data["keyword"] == keyword


def test_enum_suggestion_names_case_match() -> None:
    (f,) = _check({"city": "Oslo", "unit": "Celsius"})
    assert f.suggestion == "Use 'celsius'."


def test_enum_of_integers_rejects_bool() -> None:
    tool = {"name": "f", "parameters": {"type": "object", "properties": {"n": {"enum": [0, 1]}}}}
    assert _codes(check([ToolCall(name="f", arguments={"n": True})], [tool])) == [("invalid_value", "n")]


def test_keywords_beyond_the_fast_path_use_jsonschema() -> None:
    tool = {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 3}]},
                "step": {"type": "number", "multipleOf": 5},
            },
        },
    }
    checker = Checker([tool])
    assert checker.check([ToolCall(name="f", arguments={"id": "abc", "step": 10})]) == []
    assert _codes(checker.check([ToolCall(name="f", arguments={"id": [1]})])) == [("invalid_type", "id")]
    assert _codes(checker.check([ToolCall(name="f", arguments={"step": 7})])) == [("invalid_value", "step")]


def test_wrong_tool_count() -> None:
    calls = [ToolCall(name="get_time", arguments={})]
    (f,) = check(calls, [TIME], expected_count=2)
    assert (f.code, f.call, f.data["expected"], f.data["got"]) == ("wrong_tool_count", None, 2, 1)
    assert check(calls, [TIME], expected_count=1) == []


def test_duplicate_call_unless_the_repeats_are_expected() -> None:
    calls = [
        ToolCall(name="get_time", arguments={"tz": "UTC"}),
        ToolCall(name="get_time", arguments={"tz": "UTC"}),
    ]
    (f,) = check(calls, [TIME])
    assert (f.code, f.call, f.data["first"]) == ("duplicate_call", 1, 0)
    assert check(calls, [TIME], expected_count=2) == []
    assert {x.code for x in check(calls, [TIME], expected_count=1)} == {"duplicate_call", "wrong_tool_count"}
    different = [calls[0], ToolCall(name="get_time", arguments={"tz": "CET"})]
    assert check(different, [TIME]) == []


def test_call_index_points_at_the_offending_call() -> None:
    calls = [ToolCall(name="get_time", arguments={}), ToolCall(name="get_weather", arguments={})]
    (f,) = check(calls, [WEATHER, TIME])
    assert f.call == 1


CHAIN_TOOLS: list[dict[str, Any]] = [
    {
        "api_name": "scan",
        "parameters": {"isbn": {"type": "str"}},
        "required": ["isbn"],
        "responses": {"details": {"type": "str"}, "available": {"type": "bool"}},
    },
    {
        "api_name": "locate",
        "parameters": {"info": {"type": "str"}, "count": {"type": "int"}},
        "required": ["info"],
        "responses": {"place": {"type": "str"}},
    },
]


def _chain(info: Any, outputs: list[str] | None = None, **extra: Any) -> list[ToolCall]:
    return [
        ToolCall(name="scan", arguments={"isbn": "978"}, outputs=outputs or ["API_call_0", "API_call_1"]),
        ToolCall(name="locate", arguments={"info": info, **extra}, outputs=["API_call_2"]),
    ]


def test_refs_to_earlier_outputs_of_the_right_type_pass() -> None:
    assert check(_chain(Ref(target="API_call_0")), CHAIN_TOOLS) == []


def test_ref_to_unknown_or_later_output_is_invalid_value() -> None:
    (f,) = check(_chain(Ref(target="API_call_9")), CHAIN_TOOLS)
    assert (f.code, f.path, f.data["ref"]) == ("invalid_value", "info", "API_call_9")
    (g,) = check(_chain(Ref(target="API_call_2")), CHAIN_TOOLS)
    assert g.code == "invalid_value"


def test_ref_to_output_of_wrong_declared_type_is_invalid_type() -> None:
    (f,) = check(_chain("x", count=Ref(target="API_call_0")), CHAIN_TOOLS)
    assert (f.code, f.path, f.data["got"]) == ("invalid_type", "count", ["string"])


def test_ref_without_declared_outputs_is_accepted_as_is() -> None:
    calls = [ToolCall(name="locate", arguments={"info": Ref(target="anything"), "count": Ref(target="x")})]
    assert check(calls, CHAIN_TOOLS) == []


def test_checker_accepts_tool_objects_dict_calls_and_compiles_lazily() -> None:
    checker = Checker([Tool(name="get_time")])
    assert checker.check([{"name": "get_time", "arguments": {}}]) == []
    assert checker.check_call(ToolCall(name="nope"))[0].code == "wrong_tool_name"


def test_format_path() -> None:
    assert format_path(("filters", 0, "max")) == "filters[0].max"
    assert format_path(()) == ""
