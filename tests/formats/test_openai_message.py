from __future__ import annotations

import json

from toolmend._schema import Ref, ToolCall
from toolmend.formats import parse_calls, parse_openai_message, to_openai_tool_calls, write_openai_message


def _msg(arguments: object, **extra: object) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        ],
        **extra,
    }


def test_valid_message() -> None:
    r = parse_openai_message(_msg('{"a": 1, "b": [true, null]}'))
    assert r.ok and r.format == "openai" and r.findings == []
    assert r.calls == [ToolCall(name="f", arguments={"a": 1, "b": [True, None]}, id="call_1")]
    assert r.extras == [{}]


def test_broken_arguments_are_recovered_and_flagged() -> None:
    r = parse_openai_message(_msg("{'a': 1,}"))
    assert r.calls[0].arguments == {"a": 1}
    assert [(f.code, f.call) for f in r.findings] == [("invalid_format", 0)]


def test_unreadable_arguments_keep_the_call_with_no_arguments() -> None:
    r = parse_openai_message(_msg('{"a": 1'))
    assert r.calls == [ToolCall(name="f", id="call_1")]
    assert r.findings[0].code == "invalid_format" and r.findings[0].data["raw"] == '{"a": 1'
    assert not r.ok


def test_empty_and_dict_arguments_are_accepted() -> None:
    assert parse_openai_message(_msg("")).findings == []
    assert parse_openai_message(_msg({"a": 2})).calls[0].arguments == {"a": 2}


def test_content_think_and_reasoning_content() -> None:
    r = parse_openai_message(
        _msg('{"a": 1}', content="<think>plan</think>Calling f.", reasoning_content="deep")
    )
    assert r.text == "Calling f." and r.think == "deep\nplan"


def test_calls_in_content_when_the_server_has_no_tool_parser() -> None:
    msg = {"role": "assistant", "content": '<tool_call>{"name": "g", "arguments": {"x": "y"}}</tool_call>'}
    r = parse_openai_message(msg)
    assert r.format == "tags" and r.calls == [ToolCall(name="g", arguments={"x": "y"})]
    parts = {"role": "assistant", "content": [{"type": "text", "text": "[g(x='y')]"}]}
    assert parse_openai_message(parts).calls == [ToolCall(name="g", arguments={"x": "y"})]


def test_legacy_function_call_and_malformed_items() -> None:
    legacy = {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}
    assert parse_openai_message(legacy).calls == [ToolCall(name="f")]
    bad = parse_openai_message({"role": "assistant", "tool_calls": [{"type": "function"}, "x"]})
    assert bad.calls == [] and [f.code for f in bad.findings] == ["invalid_format", "invalid_format"]


def test_writer_and_text_form_round_trip() -> None:
    calls = [ToolCall(name="f", arguments={"r": Ref(target="API_call_0")}), ToolCall(name="g", id="abc")]
    items = to_openai_tool_calls(calls)
    assert [i["id"] for i in items] == ["call_0", "abc"]
    assert json.loads(items[0]["function"]["arguments"]) == {"r": {"$ref": "API_call_0"}}
    text = write_openai_message(calls)
    r = parse_calls(text, "openai")
    assert [(c.name, c.arguments) for c in r.calls] == [(c.name, c.arguments) for c in calls]
    assert parse_calls(text).format == "openai"  # auto recognises a serialised message
    assert parse_calls(json.dumps(items), "openai").calls[1].id == "abc"
    assert parse_calls("not json", "openai").findings[0].code == "invalid_format"
