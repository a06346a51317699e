from __future__ import annotations

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats import parse_calls, write_calls


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('<tool_call>{"name": "f", "arguments": {}}</tool_call>', "tags"),
        ("<final>done</final>", "tags"),
        ('{"name": "f", "args": {}}', "json"),
        ('```json\n[{"name": "f", "parameters": {}}]\n```', "json"),
        ('{"name": "FinishAction", "args": "bye"}', "json"),
        ('{"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}', "openai"),
        ("[{'api_name': 'f', 'api_id': 3, 'parameters': {}, 'responses': {}}]", "nestools"),
        ("[f(a=1)]", "python"),
        ("f(a=1)", "python"),
        ("It is sunny in Paris today.", "none"),
    ],
)
def test_auto_detection(text: str, fmt: str) -> None:
    assert parse_calls(text).format == fmt


def test_think_is_stripped_for_every_format() -> None:
    r = parse_calls("<think>need f</think>\n[f(a=1)]")
    assert r.format == "python" and r.think == "need f" and r.ok
    lead = parse_calls('the user wants f\n</think>\n{"name": "f", "arguments": {}}')
    assert lead.format == "json" and lead.think == "the user wants f" and lead.ok


def test_three_outcomes_stay_distinct() -> None:
    prose = parse_calls("I cannot help with that.")
    broken = parse_calls('{"name": "f", "arguments": {"a": ')
    called = parse_calls('{"name": "f", "arguments": {"a": 1}}')
    assert (prose.calls, prose.findings, prose.ok) == ([], [], False)
    assert broken.calls == [] and [f.code for f in broken.findings] == ["invalid_format"]
    assert called.ok


def test_near_misses_are_not_duplicated() -> None:
    r = parse_calls('[{"api_name": "f", "parameters": {"a": }]')
    assert [f.code for f in r.findings] == ["invalid_format"]


def test_forced_format_does_not_fall_back() -> None:
    assert parse_calls("[f(a=1)]", "json").calls == []
    assert parse_calls('{"name": "f", "arguments": {}}', "python").calls == []


def test_unknown_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        parse_calls("x", "yaml")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        write_calls([ToolCall(name="f")], "auto")


def test_non_text_input_is_a_finding() -> None:
    r = parse_calls(None)  # type: ignore[arg-type]
    assert r.format == "none" and r.findings[0].code == "invalid_format"


@pytest.mark.parametrize("fmt", ["openai", "json", "python", "tags", "nestools"])
def test_write_calls_dispatches_and_round_trips(fmt: str) -> None:
    calls = [ToolCall(name="f", arguments={"a": 1, "b": ["x"]}), ToolCall(name="g.h")]
    text = write_calls(calls, fmt)  # type: ignore[arg-type]
    back = parse_calls(text)
    assert back.format == fmt and back.ok
    assert [(c.name, c.arguments) for c in back.calls] == [(c.name, c.arguments) for c in calls]


@pytest.mark.parametrize("fmt", ["json", "nestools"])
def test_a_tag_inside_a_json_value_is_a_value(fmt: str) -> None:
    # Found by the round-trip property test: '<CALL>' as an argument value used to send the
    # whole output to the tag reader, which found no call.
    calls = [ToolCall(name="A"), ToolCall(name="A", arguments={"": "<CALL>", "b": "<tool_call>x"})]
    back = parse_calls(write_calls(calls, fmt))  # type: ignore[arg-type]
    assert back.format == fmt and back.ok and back.calls == calls
    assert parse_calls('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>').format == "tags"
