"""The model-driven variant: a valid corruption is kept, an invalid one falls back to the rules."""

from __future__ import annotations

import json

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import Message, Tool, ToolCall
from toolmend.check import Checker
from toolmend.synth.inject import (
    InjectContext,
    build_messages,
    inject,
    inject_with_model,
    validate_corruption,
)

TOOLS = [
    Tool(name="weather_current", description="Current weather in a city.", parameters={"type": "object",
         "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
         "required": ["city"]}),
    Tool(name="weather_forecast", description="Forecast for a city on a day.", parameters={"type": "object",
         "properties": {"city": {"type": "string"}, "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}},
         "required": ["city", "date"]}),
]  # fmt: skip
CALLS = [ToolCall(name="weather_current", arguments={"city": "Oslo", "unit": "celsius"})]


class Scripted:
    """A fake chat model: answers from a script and records what it was asked."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen: list[list[Message]] = []

    async def __call__(self, messages: list[Message]) -> str:
        self.seen.append(messages)
        return self.replies.pop(0)


def _reply(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


@pytest.mark.parametrize(
    ("operator", "reply", "sub_label"),
    [
        ("tool_hallucination", _reply("weather_now", city="Oslo", unit="celsius"), "hallucination.model"),
        ("tool_selection", _reply("weather_forecast", city="Oslo", date="2025-07-01"), "select.model"),
        ("parameter_key", _reply("weather_current", location="Oslo", unit="celsius"), "key.alias"),
        ("parameter_value", _reply("weather_current", city="Oslo", unit="Kelvin"), "value.bad_format"),
        ("parameter_value", _reply("weather_current", city="Bergen", unit="celsius"), "value.from_context"),
    ],
)
async def test_a_valid_model_corruption_is_kept(operator: str, reply: str, sub_label: str) -> None:
    model = Scripted("Here you go:\n" + reply)
    inj = await inject_with_model(CALLS, TOOLS, operator, generate=model, seed=0,
                                  context=InjectContext(query="Weather in Oslo?"))  # fmt: skip
    assert inj is not None and inj.source == "model" and inj.note is None
    assert inj.sub_label == sub_label
    assert inj.calls[0] == ToolCall.model_validate_json(json.dumps(json.loads(reply)))
    assert "Weather in Oslo?" in model.seen[0][1].content


@pytest.mark.parametrize(
    ("operator", "reply", "why"),
    [
        ("tool_hallucination", _reply("weather_forecast", city="Oslo", date="2025-07-01"), "offered tool"),
        ("tool_selection", _reply("weather_now", city="Oslo"), "not an offered tool"),
        ("tool_selection", _reply("weather_forecast", city="Oslo", date="01/07/2025"), "invalid"),
        ("parameter_key", _reply("weather_current", city="Oslo", unit="kelvin"), "no parameter-key"),
        ("parameter_value", _reply("weather_current", city="Oslo"), "names changed"),
        ("parameter_value", _reply("weather_current", city="Oslo", unit="celsius"), "unchanged"),
        ("parameter_key", "I cannot do that.", "no call"),
    ],
)
async def test_an_invalid_model_corruption_falls_back(operator: str, reply: str, why: str) -> None:
    inj = await inject_with_model(CALLS, TOOLS, operator, generate=Scripted(reply), seed=3)
    assert inj is not None and inj.source == "fallback"
    assert inj.note is not None and why in inj.note
    rule = inject(CALLS, TOOLS, operator, seed=3, step=0)
    assert rule is not None
    assert inj.model_dump(exclude={"source", "note"}) == rule.model_dump(exclude={"source", "note"})


async def test_only_critictool_internal_operators_have_a_model_variant() -> None:
    with pytest.raises(ConfigError, match="no model-driven variant"):
        await inject_with_model(CALLS, TOOLS, "hitec_invalid_format", generate=Scripted(), seed=0)


def test_prompt_is_replaceable_and_names_the_error() -> None:
    checker = Checker(TOOLS)
    default = build_messages(CALLS, checker, "parameters_key_error", 0)
    assert "parameter name wrong" in default[0].content and "weather_forecast" in default[1].content
    custom = build_messages(CALLS, checker, "parameters_key_error", 0, system="Break it: $label",
                            template="Call: $call")  # fmt: skip
    assert custom[0].content == "Break it: parameters_key_error"
    assert (
        custom[1].content
        == 'Call: {"name": "weather_current", "arguments": {"city": "Oslo", "unit": "celsius"}}'
    )


def test_validate_corruption_rejects_mixed_errors() -> None:
    checker = Checker(TOOLS)
    wrong = ToolCall(name="weather_current", arguments={"city": 3, "unit": "celsius"})
    assert validate_corruption(CALLS[0], wrong, "parameters_value_error", checker) is None
    mixed = ToolCall(name="weather_current", arguments={"city": 3, "units": "celsius"})
    assert validate_corruption(CALLS[0], mixed, "parameters_value_error", checker) is not None
