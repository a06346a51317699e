"""Tool specs as generators write them load with their parameters and check valid calls clean.

pydantic, ``openai.pydantic_function_tool`` and LangChain run here for real; the MCP, Anthropic,
Responses-API and zod shapes are written out as those tools emit them (zod and the MCP SDK are
not Python dependencies of toolmend).
"""

from __future__ import annotations

from typing import Any, Literal

import openai
import pytest
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_function, convert_to_openai_tool
from pydantic import BaseModel, Field

from toolmend._errors import SpecError
from toolmend._schema import ToolCall
from toolmend.check import Checker
from toolmend.formats._tools import load_tool

PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}


def _codes(spec: Any, args: dict[str, Any], name: str = "weather") -> list[str]:
    return [f.code for f in Checker([spec]).check_call(ToolCall(name=name, arguments=args))]


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "weather", "description": "d", "inputSchema": PARAMS},  # MCP tools/list
        {"name": "weather", "description": "d", "input_schema": PARAMS},  # Anthropic
        {
            "type": "function",
            "name": "weather",
            "description": "d",
            "parameters": PARAMS,
            "strict": False,
        },  # Responses
        {"type": "function", "function": {"name": "weather", "parameters": PARAMS}},  # Chat Completions
        {"toolSpec": {"name": "weather", "inputSchema": {"json": PARAMS}}},  # Bedrock Converse
    ],
    ids=["mcp", "anthropic", "responses", "chat", "bedrock"],
)
def test_every_dialect_loads_its_parameters(spec: dict[str, Any]) -> None:
    tool = load_tool(spec)
    assert tool.name == "weather" and tool.required == ["city"] and set(tool.properties) == {"city", "days"}
    assert _codes(spec, {"city": "Oslo", "days": 2}) == []
    assert _codes(spec, {"city": "Oslo", "dayz": 2}) == ["redundant_parameter"]
    assert _codes(spec, {"days": 0}) == ["invalid_value", "missing_required"]


class Address(BaseModel):
    street: str
    zip_code: str | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: bool


class Order(BaseModel):
    """Place an order."""

    item: str = Field(description="what to buy")
    address: Address
    pet: Cat | Dog = Field(discriminator="kind")
    note: str = ""
    extra: dict[str, Any] = Field(default={"type": "gift"}, examples=[{"type": "x"}])


def test_pydantic_and_openai_and_langchain_specs() -> None:
    good: dict[str, Any] = {"item": "a", "address": {"street": "s"}, "pet": {"kind": "dog", "barks": True}}
    specs = [
        {"name": "Order", "parameters": Order.model_json_schema()},
        openai.pydantic_function_tool(Order),
        convert_to_openai_tool(Order),
        convert_to_openai_function(Order),
    ]
    for spec in specs:
        name = spec.get("name") or spec["function"]["name"]
        if spec.get("function", {}).get("strict"):
            # Strict mode: every property is required, the optional ones as nullable.
            assert _codes(spec, good, name) == ["missing_required"] * 3, spec
            good = {**good, "address": {"street": "s", "zip_code": None}, "note": "n", "extra": {}}
        assert _codes(spec, good, name) == [], spec
        # A default that is the empty string is no empty value.
        assert _codes(spec, {**good, "note": ""}, name) == [], spec
        assert _codes(spec, {**good, "pet": {"kind": "dog", "barks": True, "meows": 1}}, name) == [
            "redundant_parameter"
        ], spec
        assert _codes(spec, {**good, "address": {**good["address"], "zip": "1"}}, name) == [
            "redundant_parameter"
        ], spec
        wrong_kind = _codes(spec, {**good, "pet": {"kind": "cow", "barks": True}}, name)
        assert wrong_kind and "redundant_parameter" not in wrong_kind, spec


def test_langchain_tool_decorator() -> None:
    @lc_tool
    def weather(city: str, days: int = 1) -> str:
        """Weather for a city."""
        return city

    spec = convert_to_openai_tool(weather)
    assert _codes(spec, {"city": "Oslo"}) == []
    assert _codes(spec, {"city": 3}) == ["invalid_type"]


ZOD = {
    # zod-to-json-schema (target jsonSchema7), as the Vercel AI SDK sends it
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "point": {
            "type": "array",
            "items": [{"type": "number"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
        "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
    },
    "required": ["point"],
    "additionalProperties": False,
    "definitions": {
        "Tag": {
            "type": "object",
            "properties": {"label": {"type": "string"}},
            "required": ["label"],
            "additionalProperties": False,
        }
    },
}


def test_zod_draft_07_tuple_items() -> None:
    spec = {"type": "function", "function": {"name": "z", "parameters": ZOD}}
    assert _codes(spec, {"point": [1, "a"], "tags": [{"label": "x"}]}, "z") == []
    assert _codes(spec, {"point": ["a", 1]}, "z") == ["invalid_type", "invalid_type"]
    assert _codes(spec, {"point": [1, "a"], "tags": [{"label": "x", "y": 1}]}, "z") == ["redundant_parameter"]
    assert Checker([spec]).spec("z").dialect == "http://json-schema.org/draft-07/schema#"  # type: ignore[union-attr]


def test_the_declared_draft_decides() -> None:
    """The same schema text means what its own draft says."""
    tuple_items = {"type": "object", "properties": {"p": {"type": "array", "items": [{"type": "integer"}]}}}
    assert _codes({"name": "t", "parameters": {"$schema": "http://json-schema.org/draft-07/schema#", **tuple_items}},
                  {"p": [1, "x"]}, "t") == []  # fmt: skip
    with pytest.raises(SpecError):  # 2020-12: "items" is one schema, never a list
        Checker([{"name": "t", "parameters": tuple_items}]).verify()
    # Draft 4: a boolean exclusiveMaximum modifies maximum.
    d4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
          "properties": {"n": {"type": "number", "maximum": 3, "exclusiveMaximum": True}}}  # fmt: skip
    assert _codes({"name": "t", "parameters": d4}, {"n": 2}, "t") == []
    assert _codes({"name": "t", "parameters": d4}, {"n": 3}, "t") == ["invalid_value"]
    # Draft 7 ignores every keyword beside "$ref".
    d7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
          "properties": {"n": {"$ref": "#/definitions/N", "maximum": 0}}, "definitions": {"N": {"type": "integer"}}}  # fmt: skip
    assert _codes({"name": "t", "parameters": d7}, {"n": 5}, "t") == []
    assert _codes({"name": "t", "parameters": d7}, {"n": "5"}, "t") == ["invalid_type"]


def test_annotation_values_are_data() -> None:
    params = {
        "type": "object",
        "properties": {
            "filter": {
                "type": "object",
                "default": {"type": "strng"},
                "examples": [{"type": "dict", "properties": 3}],
                "properties": {"type": {"type": "string"}},
            },
            "kind": {"enum": [{"type": "weird"}, "plain"]},
            "fixed": {"const": {"type": "tuple"}},
        },
    }
    for spec in ({"name": "a", "parameters": params}, {"name": "a", "inputSchema": params}):
        tool = load_tool(spec)
        assert tool.metadata["dialect"] != "bfcl"
        assert tool.properties["filter"]["default"] == {"type": "strng"}
        assert (
            _codes(
                spec, {"filter": {"type": "x"}, "kind": {"type": "weird"}, "fixed": {"type": "tuple"}}, "a"
            )
            == []
        )
        assert _codes(spec, {"kind": {"type": "other"}}, "a") == ["invalid_value"]
