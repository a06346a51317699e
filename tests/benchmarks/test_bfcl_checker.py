"""Hand-computed verdicts of the BFCL AST checker, one per error_type and quirk."""

from __future__ import annotations

from typing import Any

import pytest

from toolmend._schema import Tool
from toolmend.benchmarks.bfcl._checker import ast_check, bfcl_type, parallel_check, simple_check
from toolmend.formats._tools import load_tool


def bfcl_tool(name: str, properties: dict[str, Any], required: list[str]) -> Tool:
    return load_tool(
        {
            "name": name,
            "description": "",
            "parameters": {"type": "dict", "properties": properties, "required": required},
        },
        dialect="bfcl",
    )


EVENT = bfcl_tool(
    "calendar.add_event",
    {
        "title": {"type": "string"},
        "date": {"type": "string"},
        "attendees": {"type": "array", "items": {"type": "string"}},
        "duration": {"type": "float"},
        "reminders": {"type": "integer"},
        "private": {"type": "boolean"},
        "location": {"type": "dict", "properties": {"city": {"type": "string"}, "room": {"type": "integer"}}},
        "slots": {"type": "array", "items": {"type": "dict"}},
        "colour": {"type": "string"},
        "span": {"type": "tuple", "items": {"type": "integer"}},
    },
    ["title", "date"],
)

ANSWER = {
    "calendar.add_event": {
        "title": ["Standup"],
        "date": ["April 1, 2024", "2024-04-01"],
        "attendees": [["ann", "bob"], ""],
        "duration": [1.5, 2.0, ""],
        "reminders": [2, ""],
        "private": [False, ""],
        "location": [{"city": ["Paris"], "room": ["", 4]}, ""],
        "slots": [[{"start": [9]}, {"start": [10]}], ""],
        "span": [[1, 2], ""],
    }
}


def check(
    args: dict[str, Any], answer: dict[str, Any] = ANSWER, tool: Tool = EVENT, **kw: Any
) -> tuple[bool, str]:
    result = simple_check(tool, {tool.name: args}, answer, **kw)
    return result.valid, result.error_type


BASE = {"title": "Standup", "date": "2024-04-01"}


def test_minimal_valid_call_passes() -> None:
    assert check(BASE) == (True, "")


def test_bfcl_type_restores_original_names() -> None:
    assert bfcl_type(EVENT.properties["duration"]) == "float"
    assert bfcl_type(EVENT.properties["location"]) == "dict"
    assert bfcl_type(EVENT.properties["reminders"]) == "integer"
    assert bfcl_type(None) is None


def test_wrong_function_name_and_dotted_names() -> None:
    result = simple_check(EVENT, {"calendar_add_event": BASE}, ANSWER)
    assert (result.valid, result.error_type) == (False, "simple_function_checker:wrong_func_name")
    # With underscore_to_dot the expected dotted name is compared in its underscore form.
    assert simple_check(EVENT, {"calendar_add_event": BASE}, ANSWER, underscore_to_dot=True).valid
    assert not simple_check(EVENT, {"calendar.add_event": BASE}, ANSWER, underscore_to_dot=True).valid


def test_names_are_case_sensitive() -> None:
    assert not simple_check(EVENT, {"Calendar.add_event": BASE}, ANSWER).valid


def test_missing_required() -> None:
    assert check({"title": "Standup"}) == (False, "simple_function_checker:missing_required")


def test_unexpected_param_outside_schema() -> None:
    assert check({**BASE, "bogus": 1}) == (False, "simple_function_checker:unexpected_param")


def test_unexpected_param_in_schema_but_not_in_answer() -> None:
    # "colour" is a valid schema parameter, but the possible answer does not list it.
    assert "colour" in EVENT.properties
    assert check({**BASE, "colour": "red"}) == (False, "simple_function_checker:unexpected_param")


def test_int_for_float_is_accepted_float_for_int_is_not() -> None:
    assert check({**BASE, "duration": 2}) == (True, "")
    assert check({**BASE, "reminders": 2.0}) == (False, "type_error:simple")


def test_bool_is_not_int() -> None:
    assert check({**BASE, "reminders": True}) == (False, "type_error:simple")
    assert check({**BASE, "private": 0}) == (False, "type_error:simple")


def test_nested_type_error() -> None:
    required = {"calendar.add_event": {**ANSWER["calendar.add_event"], "attendees": [["ann", "bob"]]}}
    assert check({**BASE, "attendees": ["ann", 3]}, required) == (False, "type_error:nested")


def test_optional_marker_lets_nested_types_through() -> None:
    # BFCL quirk: the "" of an optional list parameter is not a list, so the item-type check
    # passes and the failure is reported by the value check instead.
    assert check({**BASE, "attendees": ["ann", 3]}) == (False, "value_error:list/tuple")


def test_tuple_value_counts_as_list_for_tuple_params_only() -> None:
    assert check({**BASE, "span": (1, 2)}) == (True, "")
    assert check({**BASE, "attendees": ("ann", "bob")}) == (False, "type_error:simple")


def test_string_normalisation() -> None:
    assert check({**BASE, "date": "april 1 2024"}) == (True, "")
    assert check({**BASE, "date": "APRIL 1,2024"}) == (True, "")
    assert check({**BASE, "date": "1 April 2024"}) == (False, "value_error:string")


def test_list_order_matters_and_elements_are_normalised() -> None:
    assert check({**BASE, "attendees": ["Ann", "B-ob"]}) == (True, "")
    assert check({**BASE, "attendees": ["bob", "ann"]}) == (False, "value_error:list/tuple")


def test_dict_one_level() -> None:
    assert check({**BASE, "location": {"city": "paris"}}) == (True, "")
    assert check({**BASE, "location": {"city": "Paris", "room": 4}}) == (True, "")
    assert check({**BASE, "location": {"city": "Lyon"}}) == (False, "value_error:dict_value")
    assert check({**BASE, "location": {"city": "Paris", "floor": 2}}) == (False, "value_error:dict_key")
    assert check({**BASE, "location": {"room": 4}}) == (False, "value_error:dict_key")


def test_list_of_dicts() -> None:
    assert check({**BASE, "slots": [{"start": 9}, {"start": 10}]}) == (True, "")
    assert check({**BASE, "slots": [{"start": 9}]}) == (False, "value_error:list_dict_count")
    # The last candidate's verdict is reported: with the optional "" last, a wrong dict inside
    # a list of the right length still reads as a count error, as in BFCL.
    assert check({**BASE, "slots": [{"start": 10}, {"start": 9}]}) == (False, "value_error:list_dict_count")
    required = {
        "calendar.add_event": {**ANSWER["calendar.add_event"], "slots": [[{"start": [9]}, {"start": [10]}]]}
    }
    assert check({**BASE, "slots": [{"start": 10}, {"start": 9}]}, required) == (
        False,
        "value_error:dict_value",
    )


def test_value_error_others() -> None:
    assert check({**BASE, "duration": 3.0}) == (False, "value_error:others")
    assert check({**BASE, "private": True}) == (False, "value_error:others")


def test_missing_optional() -> None:
    answer = {"calendar.add_event": {**ANSWER["calendar.add_event"], "reminders": [2]}}
    assert check(BASE, answer) == (False, "simple_function_checker:missing_optional")
    assert check({**BASE, "reminders": 2}, answer) == (True, "")


def test_variable_escape_hatch() -> None:
    # The answer holds a string where the schema says integer: a string is then accepted,
    # compared by plain membership (no normalisation).
    answer = {"calendar.add_event": {"title": ["Standup"], "date": ["x"], "reminders": ["count"]}}
    assert check({"title": "Standup", "date": "x", "reminders": "count"}, answer) == (True, "")
    assert check({"title": "Standup", "date": "x", "reminders": "Count"}, answer) == (
        False,
        "value_error:others",
    )
    assert check({"title": "Standup", "date": "x", "reminders": 3}, answer) == (False, "value_error:others")


def test_checks_stop_at_the_first_failure_in_bfcl_order() -> None:
    # Wrong type on the first parameter wins over an unexpected one after it.
    assert check({**BASE, "reminders": "two", "bogus": 1}) == (False, "type_error:simple")
    assert check({**BASE, "bogus": 1, "reminders": "two"}) == (
        False,
        "simple_function_checker:unexpected_param",
    )


ADD = bfcl_tool("add", {"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a"])


def test_count_errors_by_category() -> None:
    answers = [{"add": {"a": [1], "b": ["", 2]}}]
    assert ast_check("simple_python", [ADD], [], answers).error_type == "simple_function_checker:wrong_count"
    two = [{"add": {"a": 1}}, {"add": {"a": 1}}]
    assert ast_check("multiple", [ADD], two, answers).error_type == "multiple_function_checker:wrong_count"
    assert (
        ast_check("parallel", [ADD], two, answers).error_type
        == "parallel_function_checker_no_order:wrong_count"
    )
    assert ast_check("live_simple", [ADD], [{"add": {"a": 1}}], answers).valid


def test_multiple_checks_the_expected_tool() -> None:
    other = bfcl_tool("sub", {"a": {"type": "integer"}}, ["a"])
    answers = [{"add": {"a": [1]}}]
    assert ast_check("multiple", [other, ADD], [{"add": {"a": 1}}], answers).valid
    result = ast_check("multiple", [other, ADD], [{"sub": {"a": 1}}], answers)
    assert result.error_type == "simple_function_checker:wrong_func_name"


def test_parallel_is_order_free() -> None:
    answers = [{"add": {"a": [1]}}, {"add": {"a": [2]}}]
    calls = [{"add": {"a": 2}}, {"add": {"a": 1}}]
    assert parallel_check([ADD], calls, answers).valid
    bad = parallel_check([ADD], [{"add": {"a": 2}}, {"add": {"a": 3}}], answers)
    assert bad.error_type == "parallel_function_checker_no_order:cannot_find_match"


@pytest.mark.parametrize("mode", ["compat", "improved"])
def test_greedy_false_negative_fixed_by_improved(mode: str) -> None:
    # Answer 0 lets b be omitted or 2; answer 1 needs b=2. Greedy gives call 0 (b=2) to answer 0
    # and then finds nothing for answer 1; the assignment 0→1, 1→0 passes.
    answers = [{"add": {"a": [1], "b": ["", 2]}}, {"add": {"a": [1], "b": [2]}}]
    calls = [{"add": {"a": 1, "b": 2}}, {"add": {"a": 1}}]
    result = parallel_check([ADD], calls, answers, mode)  # type: ignore[arg-type]
    if mode == "compat":
        assert (result.valid, result.error_type) == (
            False,
            "parallel_function_checker_no_order:cannot_find_match",
        )
    else:
        assert result.valid


def test_improved_parallel_still_fails_without_a_perfect_matching() -> None:
    answers = [{"add": {"a": [1]}}, {"add": {"a": [2]}}]
    calls = [{"add": {"a": 1}}, {"add": {"a": 1}}]
    result = parallel_check([ADD], calls, answers, "improved")
    assert result.error_type == "parallel_function_checker_no_order:cannot_find_match"
