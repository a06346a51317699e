from __future__ import annotations

from toolmend._schema import ToolCall
from toolmend.formats import parse_json_calls, write_json_calls


def codes(result: object) -> list[str]:
    return [f.code for f in result.findings]  # type: ignore[attr-defined]


def test_critictool_action_with_error_and_thought() -> None:
    text = (
        '{"error": "parameters_key_error", "thought": "the key is body, not content", '
        '"name": "Email.send", "args": {"address": "team@example.com", "body": "Hi"}}'
    )
    r = parse_json_calls(text)
    assert r.ok and r.format == "json"
    assert r.calls == [ToolCall(name="Email.send", arguments={"address": "team@example.com", "body": "Hi"})]
    assert r.extras == [{"error": "parameters_key_error", "thought": "the key is body, not content"}]


def test_finish_action_is_a_final_answer_not_a_call() -> None:
    r = parse_json_calls('{"thought": "done", "name": "FinishAction", "args": "The meeting is booked."}')
    assert r.calls == [] and r.final == "The meeting is booked."
    assert r.final_extras == {"thought": "done"}
    assert r.ok


def test_llama_style_list_with_parameters_key() -> None:
    r = parse_json_calls('[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "parameters": {}}]')
    assert [(c.name, c.arguments) for c in r.calls] == [("a", {"x": 1}), ("b", {})]
    assert r.findings == []


def test_fenced_json_with_chatter_returns_calls_and_flags_the_chatter() -> None:
    text = (
        'Sure, calling it now.\n```json\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n```\nLet me know!'
    )
    r = parse_json_calls(text)
    assert [c.name for c in r.calls] == ["get_time"]
    assert codes(r) == ["redundant_information"]
    assert r.text == "Sure, calling it now.\n\nLet me know!"
    assert r.ok  # chatter is not a format error


def test_trailing_commas_and_single_quotes_are_recovered_but_flagged() -> None:
    r = parse_json_calls("{'name': 'f', 'arguments': {'a': 'x', 'b': [1, 2,],},}")
    assert r.calls == [ToolCall(name="f", arguments={"a": "x", "b": [1, 2]})]
    assert codes(r) == ["invalid_format"]
    assert "recovered" in r.findings[0].message
    assert r.findings[0].call == 0
    assert not r.ok


def test_string_arguments_are_decoded_and_flagged() -> None:
    r = parse_json_calls('{"name": "f", "args": "{\\"a\\": 1}"}')
    assert r.calls[0].arguments == {"a": 1}
    assert codes(r) == ["invalid_format"]


def test_non_object_arguments_keep_the_call_with_empty_arguments() -> None:
    r = parse_json_calls('{"name": "f", "arguments": [1, 2]}')
    assert r.calls == [ToolCall(name="f")]
    assert codes(r) == ["invalid_format"] and r.findings[0].data["raw"] == [1, 2]


def test_one_action_per_line() -> None:
    r = parse_json_calls('{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {"k": null}}')
    assert [c.name for c in r.calls] == ["a", "b"] and r.findings == []


def test_truncated_call_is_an_invalid_format_with_no_call() -> None:
    r = parse_json_calls('{"name": "search", "arguments": {"query": "weather in Par')
    assert r.calls == [] and codes(r) == ["invalid_format"] and "cut off" in r.findings[0].message


def test_missing_closing_brace_is_not_mistaken_for_prose() -> None:
    r = parse_json_calls('{"name": "f", "arguments": {"a": 1}')
    assert r.calls == [] and codes(r) == ["invalid_format"]


def test_stray_brace_in_prose_does_not_hide_a_later_call() -> None:
    r = parse_json_calls('I use { braces weirdly {"name": "f", "arguments": {}}')
    assert [c.name for c in r.calls] == ["f"]
    assert codes(r) == ["redundant_information"]


def test_prose_with_non_call_json_is_not_a_call() -> None:
    r = parse_json_calls('The result was {"temp": 18} degrees.')
    assert r.calls == [] and r.findings == [] and r.format == "none"


def test_openai_shapes_inside_json() -> None:
    r = parse_json_calls(
        '{"type": "function", "function": {"name": "f", "arguments": "{\\"a\\": 2}"}, "id": "x"}'
    )
    assert r.format == "openai"
    assert r.calls == [ToolCall(name="f", arguments={"a": 2}, id="x")]
    assert r.findings == []


def test_writer_defaults_and_critictool_options() -> None:
    calls = [ToolCall(name="f", arguments={"a": 1}), ToolCall(name="g")]
    assert write_json_calls(calls) == '[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]'
    text = write_json_calls(calls[:1], key="args", extras=[{"error": "", "thought": "t"}])
    assert text == '{"error": "", "thought": "t", "name": "f", "args": {"a": 1}}'
    assert write_json_calls([], final="bye", key="args") == '{"name": "FinishAction", "args": "bye"}'
    fenced = write_json_calls(calls[:1], fence=True)
    assert fenced.startswith("```json\n") and parse_json_calls(fenced).calls == calls[:1]


def test_call_object_with_a_non_string_name_is_flagged() -> None:
    r = parse_json_calls('{"name": 42, "arguments": {"a": 1}}')
    assert r.calls == [] and codes(r) == ["invalid_format"] and "name" in r.findings[0].message
    # A JSON record that merely has a "name" field is prose, not a broken call.
    assert parse_json_calls('{"name": 42, "age": 3}').findings == []


def test_repeated_json_calls_are_read_once_but_independent() -> None:
    # Each distinct chunk is parsed once (a model looping on one call); the calls must not
    # share argument objects.
    from toolmend.formats import parse_calls

    r = parse_calls('{"name": "f", "arguments": {"a": [1]}}\n' * 3 + "{}" * 50)
    assert [c.name for c in r.calls] == ["f", "f", "f"]
    r.calls[0].arguments["a"].append(2)
    assert [c.arguments for c in r.calls[1:]] == [{"a": [1]}, {"a": [1]}]
