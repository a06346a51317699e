"""Toolmend's closing rule (a tool takes only keys its schema declares) meets composition.

Keys declared through ``allOf``, ``$ref`` and its siblings, matching ``anyOf`` / ``oneOf``
branches, ``if`` / ``then`` / ``else`` and ``dependentSchemas`` are taken; the rule only ever
adds a finding, so it never lets through a call JSON Schema refuses.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from toolmend._errors import SpecError
from toolmend._schema import ToolCall
from toolmend.check import Checker
from toolmend.check._checker import _Call, _full_check
from toolmend.check._spec import compile_parameters


def _codes(params: dict[str, Any], args: dict[str, Any]) -> list[str]:
    return [
        f.code
        for f in Checker([{"name": "f", "parameters": params}]).check_call(ToolCall(name="f", arguments=args))
    ]


A = {"properties": {"a": {"type": "integer"}}}
B = {"properties": {"b": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("params", "args"),
    [
        ({"type": "object", "allOf": [A]}, {"a": 1}),
        ({"type": "object", "allOf": [A, B]}, {"a": 1, "b": 2}),
        ({"type": "object", "$ref": "#/$defs/A", "properties": {"b": {}}, "$defs": {"A": A}}, {"a": 1, "b": 2}),
        ({"type": "object", "anyOf": [A, B]}, {"b": 2}),
        ({"type": "object", "oneOf": [{**A, "required": ["a"]}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
         {"b": "x"}),
        ({"type": "object", "if": A, "then": B, "else": {"properties": {"c": {}}}}, {"a": 1, "b": 2}),
        ({"type": "object", "properties": {"a": {}}, "dependentSchemas": {"a": B}}, {"a": 1, "b": 2}),
        ({"type": "object", "properties": {"o": {"allOf": [{"$ref": "#/$defs/A"}], "properties": {"b": {}}}}, "$defs": {"A": A}},
         {"o": {"a": 1, "b": 2}}),
    ],
)  # fmt: skip
def test_keys_declared_through_composition_are_taken(params: dict[str, Any], args: dict[str, Any]) -> None:
    assert _codes(params, args) == []
    assert _codes(params, {**args, "zz": 1}) == ["redundant_parameter"]


def test_a_schema_that_opens_itself_keeps_its_own_rule() -> None:
    params = {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}}
    assert _codes(params, {"a": 1, "z": 2}) == []
    assert _codes(params, {"a": 1, "z": "2"}) == ["invalid_type"]


def test_a_closed_branch_never_lets_an_invalid_call_through() -> None:
    # Both branches fit {"a": 1, "b": 1}, so oneOf refuses it; closing the first would have
    # made only the second fit.
    one_of = {
        "type": "object",
        "oneOf": [A, {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}],
    }
    assert not Draft202012Validator(one_of).is_valid({"a": 1, "b": 1})
    assert _codes(one_of, {"a": 1, "b": 1}) == ["invalid_value"]
    # "not" refuses what its schema takes; closing that schema would have let "z" through.
    negated = {"type": "object", "properties": {"p": {"not": {"properties": {"a": {"type": "string"}}}}}}
    assert not Draft202012Validator(negated).is_valid({"p": {"a": "x", "z": 1}})
    assert _codes(negated, {"p": {"a": "x", "z": 1}}) == ["invalid_value"]
    # An empty string inside "not" is no empty value of toolmend's either.
    assert _codes({"type": "object", "properties": {"p": {"not": {"properties": {"a": {"type": "string"}}}}}},
                  {"p": {"a": ""}}) == ["invalid_value"]  # fmt: skip


def test_an_empty_default_is_no_empty_value() -> None:
    params = {
        "type": "object",
        "properties": {"q": {"type": "string", "default": ""}, "r": {"type": "string"}},
    }
    assert _codes(params, {"q": ""}) == []
    assert _codes(params, {"r": ""}) == ["empty_value"]


KEYS = ["a", "b", "c"]
LEAF = st.sampled_from(
    [{}, {"type": "integer"}, {"type": "string"}, {"type": "string", "minLength": 1}, {"enum": [1, "x"]}]
)
# No null: toolmend reads null for an optional key as leaving it out (a listed rule, the one
# that admits what JSON Schema refuses: docs/checker.md).
VALUES = st.dictionaries(st.sampled_from([*KEYS, "z"]), st.sampled_from([0, 1, "", "x", [1]]), max_size=4)


def _objects() -> st.SearchStrategy[Any]:
    obj = st.builds(
        lambda props, req: {"properties": props, **({"required": req} if req else {})},
        st.dictionaries(st.sampled_from(KEYS), LEAF, max_size=2),
        st.lists(st.sampled_from(KEYS), max_size=1, unique=True),
    )

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.builds(lambda k, parts: {k: parts}, st.sampled_from(["allOf", "anyOf", "oneOf"]), st.lists(inner, min_size=1, max_size=2)),
            st.builds(lambda s: {"not": s}, inner),
            st.builds(lambda i, t: {"if": i, "then": t}, inner, inner),
            st.builds(lambda s, o: {**o, "dependentSchemas": {"a": s}}, inner, obj),
            st.builds(lambda o: {**o, "$ref": "#/$defs/D"}, obj),
        )  # fmt: skip

    return st.recursive(obj, extend, max_leaves=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_objects(), _objects(), VALUES)
def test_toolmend_refuses_whatever_json_schema_refuses(schema: Any, definition: Any, value: Any) -> None:
    """Over composed schemas: every call JSON Schema refuses gets a finding, and the fast path
    never calls a call clean that the full check does not."""
    params = {"type": "object", **schema, "$defs": {"D": definition}}
    try:
        spec = compile_parameters("f", params)
    except SpecError:
        assume(False)
        return
    full = _full_check(spec, _Call(0, "f", value, []), None)
    if not Draft202012Validator(params).is_valid(value):
        assert full, (params, value)
    if spec.fast is not None:
        try:
            clean = bool(spec.fast(value))
        except Exception:
            clean = False
        assert clean is (full == []), (params, value, full)
