"""The checker against jsonschema's own verdicts on a corpus of Draft 2020-12 cases.

Each case is a parameter schema, a value, and whether the value is valid. The value is passed
as the one (required) parameter ``v`` of a tool, so toolmend's own rules for tool calls (closed
objects, empty strings, BFCL's float-is-not-integer) are kept out of the way except where a case
says so; every verdict must equal ``jsonschema``'s on the same schema, and the fast path must
agree with the full findings.
"""

from __future__ import annotations

import builtins
import io
import os
import socket
import urllib.request
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from toolmend._errors import DatasetError, SpecError
from toolmend._schema import ToolCall
from toolmend.check import Checker
from toolmend.check._checker import _Call, _full_check
from toolmend.check._spec import MAX_SCHEMA_DEPTH, compile_parameters

POINT = {
    "type": "object",
    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
    "required": ["x", "y"],
    "additionalProperties": False,
}
TREE_DEFS = {
    "Node": {
        "type": "object",
        "properties": {
            "label": {"type": "string", "minLength": 1},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
        "required": ["label"],
        "additionalProperties": False,
    }
}

# (name, schema of parameter v, value, valid per JSON Schema)
CASES: list[tuple[str, dict[str, Any], Any, bool]] = [
    ("ref ok", {"$ref": "#/$defs/P"}, {"x": 1, "y": 2.5}, True),
    ("ref bad", {"$ref": "#/$defs/P"}, {"x": 1, "y": "2"}, False),
    ("ref missing", {"$ref": "#/$defs/P"}, {"x": 1}, False),
    ("ref extra", {"$ref": "#/$defs/P"}, {"x": 1, "y": 2, "z": 3}, False),
    ("tree ok", {"$ref": "#/$defs/Node"}, {"label": "a", "children": [{"label": "b", "children": []}]}, True),
    ("tree deep bad", {"$ref": "#/$defs/Node"}, {"label": "a", "children": [{"label": "b", "children": [{}]}]}, False),
    ("tree type", {"$ref": "#/$defs/Node"}, {"label": "a", "children": [{"label": 3}]}, False),
    ("anyOf ok", {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]}, "abc", True),
    ("anyOf bad", {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]}, "abcd", False),
    ("anyOf type", {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, [1], False),
    ("oneOf ok", {"oneOf": [{"type": "integer"}, {"type": "string"}]}, 3, True),
    ("oneOf both", {"oneOf": [{"type": "number"}, {"type": "integer"}]}, 3, False),
    ("oneOf none", {"oneOf": [{"type": "number"}, {"type": "integer"}]}, "3", False),
    ("allOf ok", {"allOf": [{"type": "integer"}, {"minimum": 2}]}, 3, True),
    ("allOf bad", {"allOf": [{"type": "integer"}, {"minimum": 2}]}, 1, False),
    ("allOf objects", {"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"type": "string"}}}]},
     {"a": 1, "b": "x"}, True),  # fmt: skip
    ("allOf objects bad", {"allOf": [{"properties": {"a": {"type": "integer"}}}, {"required": ["b"]}]}, {"a": 1}, False),
    ("not ok", {"not": {"type": "string"}}, 3, True),
    ("not bad", {"not": {"type": "string"}}, "s", False),
    ("const ok", {"const": "on"}, "on", True),
    ("const bad", {"const": "on"}, "off", False),
    ("const bool", {"const": 1}, True, False),
    ("enum ok", {"enum": ["a", 1, None]}, 1, True),
    ("enum bad", {"enum": ["a", 1]}, 2, False),
    ("enum bool", {"enum": [0, 1]}, False, False),
    ("enum list", {"enum": [[1, 2]]}, [1, 2], True),
    ("null union ok", {"type": ["string", "null"]}, None, True),
    ("null union str", {"type": ["string", "null"]}, "x", True),
    ("null union bad", {"type": ["string", "null"]}, 3, False),
    ("null refused", {"type": "string"}, None, False),
    ("integer", {"type": "integer"}, 3, True),
    ("number int", {"type": "number"}, 3, True),
    ("bool not int", {"type": "integer"}, True, False),
    ("minimum", {"type": "number", "minimum": 1}, 1, True),
    ("minimum bad", {"type": "number", "minimum": 1}, 0.5, False),
    ("maximum bad", {"type": "number", "maximum": 1}, 2, False),
    ("exclusiveMinimum edge", {"type": "number", "exclusiveMinimum": 1}, 1, False),
    ("exclusiveMaximum ok", {"type": "number", "exclusiveMaximum": 1}, 0.9, True),
    ("exclusiveMaximum edge", {"type": "number", "exclusiveMaximum": 1}, 1, False),
    ("multipleOf", {"type": "integer", "multipleOf": 5}, 10, True),
    ("multipleOf bad", {"type": "integer", "multipleOf": 5}, 7, False),
    ("pattern ok", {"type": "string", "pattern": "^[0-9]{5}$"}, "12345", True),
    ("pattern bad", {"type": "string", "pattern": "^[0-9]{5}$"}, "1234a", False),
    ("pattern search", {"type": "string", "pattern": "b"}, "abc", True),
    ("minLength bad", {"type": "string", "minLength": 3}, "ab", False),
    ("maxLength ok", {"type": "string", "maxLength": 3}, "abc", True),
    ("maxLength unicode", {"type": "string", "maxLength": 2}, "é€", True),
    ("minItems bad", {"type": "array", "minItems": 2}, [1], False),
    ("maxItems ok", {"type": "array", "maxItems": 2}, [1, 2], True),
    ("uniqueItems bad", {"type": "array", "uniqueItems": True}, [1, 1], False),
    ("items bad", {"type": "array", "items": {"type": "integer"}}, [1, "2"], False),
    ("points ok", {"type": "array", "items": {"$ref": "#/$defs/P"}}, [{"x": 1, "y": 2}], True),
    ("points bad", {"type": "array", "items": {"$ref": "#/$defs/P"}}, [{"x": 1, "y": "a"}], False),
    ("prefixItems ok", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, ["a", 1, {}], True),
    ("prefixItems bad", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, ["a", "b"], False),
    ("prefixItems closed", {"type": "array", "prefixItems": [{"type": "string"}], "items": False}, ["a", 1], False),
    ("prefixItems rest", {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}, ["a", 1, 2], True),
    ("additionalProperties schema", {"type": "object", "additionalProperties": {"type": "integer"}}, {"a": 1}, True),
    ("additionalProperties bad", {"type": "object", "additionalProperties": {"type": "integer"}}, {"a": "1"}, False),
    ("additionalProperties false", {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
     {"b": 1}, False),  # fmt: skip
    ("patternProperties", {"type": "object", "patternProperties": {"^n_": {"type": "integer"}}}, {"n_a": "x"}, False),
    ("dependentRequired ok", {"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
     {"a": 1, "b": 2}, True),  # fmt: skip
    ("dependentRequired bad", {"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
     {"a": 1}, False),  # fmt: skip
    ("if then", {"if": {"type": "integer"}, "then": {"minimum": 3}}, 2, False),
    ("minProperties", {"type": "object", "minProperties": 1}, {}, False),
    ("propertyNames", {"type": "object", "propertyNames": {"maxLength": 2}}, {"abc": 1}, False),
    ("contains", {"type": "array", "contains": {"type": "integer"}}, ["a"], False),
    ("true schema", True, {"any": [1, "x"]}, True),
    ("false schema", False, 1, False),
]  # fmt: skip


def _tool(schema: Any) -> dict[str, Any]:
    return {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {"v": schema},
            "required": ["v"],
            "$defs": {"P": POINT, **TREE_DEFS},
        },
    }


@pytest.mark.parametrize(("name", "schema", "value", "valid"), CASES, ids=[c[0] for c in CASES])
def test_verdict_matches_jsonschema(name: str, schema: Any, value: Any, valid: bool) -> None:
    tool = _tool(schema)
    assert Draft202012Validator(tool["parameters"]).is_valid({"v": value}) is valid
    checker = Checker([tool])
    findings = checker.check_call(ToolCall(name="f", arguments={"v": value}))
    assert (findings == []) is valid, findings
    spec = compile_parameters("f", tool["parameters"])
    full = _full_check(spec, _Call(0, "f", {"v": value}, []), None)
    assert (full == []) is valid
    assert spec.fast is not None and spec.fast({"v": value}) is valid


def test_nested_findings_name_the_whole_route() -> None:
    tool = _tool({"type": "array", "items": {"$ref": "#/$defs/P"}})
    (f,) = Checker([tool]).check_call(
        ToolCall(name="f", arguments={"v": [{"x": 1, "y": 2}, {"x": 0, "y": "a"}]})
    )
    assert (f.code, f.path, f.data["expected"]) == ("invalid_type", "v[1].y", ["number"])
    tree = _tool({"$ref": "#/$defs/Node"})
    value = {"label": "a", "children": [{"label": "b", "children": [{"label": "c", "colour": 1}]}]}
    (g,) = Checker([tree]).check_call(ToolCall(name="f", arguments={"v": value}))
    assert (g.code, g.path) == ("redundant_parameter", "v.children[0].children[0].colour")
    (h,) = Checker([tree]).check_call(ToolCall(name="f", arguments={"v": {"children": []}}))
    assert (h.code, h.path) == ("missing_required", "v.label")


def test_combinator_findings_keep_their_codes() -> None:
    union = _tool({"anyOf": [{"type": "integer"}, {"type": "boolean"}]})
    (f,) = Checker([union]).check_call(ToolCall(name="f", arguments={"v": "3"}))
    assert (f.code, f.data["expected"], f.suggestion) == (
        "invalid_type",
        ["integer", "boolean"],
        "Use 3 instead of '3'.",
    )
    dep = _tool({"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}})
    (g,) = Checker([dep]).check_call(ToolCall(name="f", arguments={"v": {"a": 1}}))
    assert (g.code, g.path) == ("missing_required", "v.b")
    enum_ref = {**_tool({"$ref": "#/$defs/Unit"})}
    enum_ref["parameters"]["$defs"]["Unit"] = {"type": "string", "enum": ["celsius", "fahrenheit"]}
    (h,) = Checker([enum_ref]).check_call(ToolCall(name="f", arguments={"v": "Celsius"}))
    assert (h.code, h.data["keyword"], h.suggestion) == ("invalid_value", "enum", "Use 'celsius'.")


def test_toolmend_rules_on_top_of_json_schema() -> None:
    """Where toolmend is deliberately stricter (or laxer) than JSON Schema for tool calls."""
    tool = {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "s": {"type": "string"},
                "o": {"type": "string", "nullable": True},
                "obj": {"$ref": "#/$defs/Open"},
            },
            "$defs": {"Open": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        },
    }
    checker = Checker([tool])

    def codes(args: dict[str, Any]) -> list[tuple[str, str]]:
        return [(f.code, f.path) for f in checker.check_call(ToolCall(name="f", arguments=args))]

    assert codes({"n": 5.0}) == [("invalid_type", "n")]  # JSON Schema: 5.0 is an integer
    assert codes({"s": ""}) == [("empty_value", "s")]
    assert codes({"s": None, "o": None}) == []  # null for an optional parameter is leaving it out
    assert codes({"obj": {"a": 1, "b": 2}}) == [("redundant_parameter", "obj.b")]  # declared keys close it


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"type": "object", "properties": {"a": {"type": "strng"}}}, "/properties/a/type"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"}, "/required"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(["}}},
            "/properties/a/pattern",
        ),
        ({"type": "object", "properties": {"a": {"minimum": "1"}}}, "/properties/a/minimum"),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.org/s.json"}}},
            "/properties/a/$ref",
        ),
        ({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}, "/properties/a/$ref"),
        ({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}, "/properties/a/$ref"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}, "/properties/a/$ref"),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#"}},
                "$ref": "#/$defs/L",
                "$defs": {"L": {"$ref": "#"}},
            },
            "/",
        ),
        (
            # An embedded resource is followed; one it names beside itself is not there.
            {"type": "object", "properties": {"a": {"$id": "https://x.org/a", "$ref": "b.json"}}},
            "/properties/a/$ref",
        ),
    ],
)
def test_broken_schemas_are_spec_errors_naming_tool_and_pointer(schema: dict[str, Any], pointer: str) -> None:
    with pytest.raises(SpecError) as info:
        Checker([{"name": "broken", "parameters": schema}]).check_call(ToolCall(name="broken", arguments={}))
    message = str(info.value)
    assert message.startswith("tool 'broken': schema at ")
    if pointer != "/":
        assert f"schema at {pointer}:" in message, message


def test_pathological_nesting_stops_before_recursion_limit() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(400):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(SpecError, match=f"deeper than {MAX_SCHEMA_DEPTH}"):
        compile_parameters("deep", deep)
    # A legitimate recursive schema checks a deep value without recursing for ever.
    tree = _tool({"$ref": "#/$defs/Node"})
    value: dict[str, Any] = {"label": "leaf"}
    for _ in range(30):  # 62 levels: past MAX_VALUE_DEPTH, within what a ToolCall takes
        value = {"label": "n", "children": [value]}
    (f,) = Checker([tree]).check_call(ToolCall(name="f", arguments={"v": value}))
    assert (f.code, f.data["keyword"]) == ("invalid_value", "depth")


def test_check_command_exits_2_naming_tool_and_pointer(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from toolmend.cli import app

    tools = tmp_path / "tools.json"
    tools.write_text(
        '[{"name": "f", "parameters": {"type": "object", "properties": {"a": {"$ref": "http://x/y"}}}}]'
    )
    calls = tmp_path / "calls.json"
    calls.write_text('[{"name": "f", "arguments": {}}]')
    result = CliRunner().invoke(app, ["check", "--tools", str(tools), "--calls", str(calls)])
    assert result.exit_code == 2
    assert "tool 'f'" in result.output and "/properties/a/$ref" in result.output
    assert "Traceback" not in result.output


def test_no_network_or_file_access_while_specs_load_and_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """An untrusted spec cannot make toolmend connect or open anything: every such call fails loudly."""
    touched: list[str] = []

    def refuse(what: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            touched.append(what)
            raise AssertionError(f"{what} called while checking a tool spec")

        return fail

    compile_parameters("warm", {"type": "object"})  # imports done before the doors are shut
    for target, name in (
        (socket, "create_connection"), (socket, "getaddrinfo"), (socket.socket, "connect"),
        (urllib.request, "urlopen"), (builtins, "open"), (io, "open"), (os, "open"),
    ):  # fmt: skip
        monkeypatch.setattr(target, name, refuse(f"{getattr(target, '__name__', target)}.{name}"))
    hostile = [
        {"$ref": "http://127.0.0.1:9/schema.json"},
        {"$ref": "https://example.org/schema.json#/defs/x"},
        {"$ref": "file:///etc/passwd"},
        {"$ref": "/etc/passwd"},
        {"$ref": "schema.json"},
        {"$dynamicRef": "http://127.0.0.1:9/x"},
    ]
    for i, schema in enumerate(hostile):
        tool = {"name": f"t{i}", "parameters": {"type": "object", "properties": {"a": schema}}}
        with pytest.raises(SpecError, match="only references inside the tool's own schema"):
            Checker([tool]).check_call(ToolCall(name=f"t{i}", arguments={"a": "x"}))
    # A foreign $schema names a dialect; it is never fetched.
    meta = {
        "name": "m",
        "parameters": {"type": "object", "properties": {"a": {"$schema": "http://127.0.0.1:9/m"}}},
    }
    assert Checker([meta]).check_call(ToolCall(name="m", arguments={"a": "x"})) == []
    ok = _tool({"$ref": "#/$defs/Node"})
    assert Checker([ok]).check_call(ToolCall(name="f", arguments={"v": {"label": "x"}})) == []
    assert touched == []


def test_unknown_type_name_in_json_schema_spec_is_a_spec_error() -> None:
    from toolmend.formats._tools import load_tools

    with pytest.raises(DatasetError, match=r"schema at /properties/a/type: unknown type name"):
        load_tools([{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "strng"}}}}])
    # BFCL's own dialect is still normalised.
    (bfcl,) = load_tools(
        [{"name": "f", "parameters": {"type": "dict", "properties": {"a": {"type": "float"}}}}]
    )
    assert bfcl.parameters["properties"]["a"]["type"] == "number"
