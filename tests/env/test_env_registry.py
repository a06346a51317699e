"""Specs built from function signatures and docstrings."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from toolmend._errors import ConfigError, SpecError
from toolmend._schema import Tool, ToolCall
from toolmend.env import Environment, ToolRegistry, schema_from_function


class Item(BaseModel):
    sku: str
    qty: Annotated[int, Field(ge=1)] = 1


def order(
    items: list[Item],
    speed: Literal["standard", "express"] = "standard",
    note: str | None = None,
    day: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD.")] = "2025-01-01",
) -> dict[str, int]:
    """Place an order.

    Longer explanation that belongs to the summary.

    Args:
        items: What to buy,
            one entry per product.
        speed: Delivery speed.
        day: Delivery day.

    Returns:
        Counts.
    """
    return {"lines": len(items)}


def test_spec_from_signature_and_docstring() -> None:
    spec, _ = schema_from_function(order)
    Draft202012Validator.check_schema(spec.parameters)
    assert spec.description == "Place an order. Longer explanation that belongs to the summary."
    props = spec.properties
    assert spec.required == ["items"]
    assert props["items"]["description"] == "What to buy, one entry per product."
    assert props["items"]["items"]["required"] == ["sku"]  # nested model inlined, no $ref
    assert props["items"]["items"]["properties"]["qty"]["minimum"] == 1
    assert props["speed"]["enum"] == ["standard", "express"]
    assert props["note"] == {"type": "string"}  # Optional shows as the plain type
    assert props["day"]["description"] == "Delivery day. YYYY-MM-DD."
    assert "$defs" not in str(spec.parameters) and "title" not in props["items"]
    assert spec.returns == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_registered_tool_executes_with_coerced_nested_arguments() -> None:
    tools = ToolRegistry()
    tools.tool(order)
    r = Environment(tools).execute(ToolCall(name="order", arguments={"items": [{"sku": "a"}, {"sku": "b"}]}))
    assert r.ok and r.data == {"lines": 2}


def test_explicit_spec_registration_and_injected_context() -> None:
    tools = ToolRegistry()
    spec = Tool(
        name="greet",
        parameters={"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]},
    )
    tools.add(spec, lambda who, prefix: f"{prefix} {who}", inject=["prefix"])
    env = Environment(tools, context={"prefix": "Hello"})
    assert env.execute(ToolCall(name="greet", arguments={"who": "Ada"})).data == "Hello Ada"
    with pytest.raises(ConfigError, match="already registered"):
        tools.add(spec, print)


def test_unannotated_parameters_are_rejected() -> None:
    def bad(x) -> int:  # type: ignore[no-untyped-def]
        """No annotation."""
        return 1

    with pytest.raises(SpecError, match="no type annotation"):
        schema_from_function(bad)
