"""The grounding check: string values the conversation never mentions."""

from __future__ import annotations

from toolmend import Finding, Message, Ref, ToolCall
from toolmend.check import Checker, ungrounded
from toolmend.guard import Turn
from toolmend.guard._reask import refine_reask, turn_findings

TOOLS = [
    {
        "name": "send",
        "parameters": {
            "type": "object",
            "properties": {
                "to": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "mode": {"anyOf": [{"const": "fast"}, {"type": "null"}]},
                "body": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "meta": {"type": "object", "properties": {"city": {"type": "string"}}},
                "n": {"type": "integer"},
            },
        },
    }
]


def paths(args: dict[str, object], context: object, **kw: object) -> list[str]:
    return [f.path for f in ungrounded([ToolCall(name="send", arguments=args)], context, TOOLS, **kw)]  # type: ignore[arg-type]


def test_a_copied_value_passes_whatever_its_case_and_spacing() -> None:
    assert paths({"to": "Ana  LARSEN"}, "Write to ana larsen today.") == []
    assert paths({"to": "Sami Larsen"}, "Write to Ana Larsen today.") == ["to"]


def test_nested_values_are_named_by_their_path() -> None:
    args = {"tags": ["home", "work"], "meta": {"city": "Rome"}}
    assert paths(args, "Tag it home, in Paris.") == ["tags[1]", "meta.city"]


def test_chosen_long_short_and_non_string_values_are_not_checked() -> None:
    body = "Hi Ana, the meeting moved to Friday at ten, see you there and bring the notes."
    args = {"unit": "fahrenheit", "mode": "fast", "body": body, "to": "x", "n": 7}
    assert paths(args, "Tell Ana.") == []
    assert paths({"body": body}, "Tell Ana.", max_words=40) == ["body"]
    long = ungrounded([ToolCall(name="send", arguments={"to": "x" * 5000})], "Tell Ana.", TOOLS)
    assert len(long[0].message) < 200 and long[0].data["value"] == "x" * 5000
    call = ToolCall(name="send", arguments={"to": Ref(target="API_call_0")})
    assert ungrounded([call], "Tell Ana.", TOOLS) == []


def test_every_message_of_the_conversation_counts() -> None:
    found = [
        Message(role="user", content="Email my sister."),
        Message(role="assistant", tool_calls=[ToolCall(name="lookup", arguments={"who": "sister"})]),
        Message(role="tool", content='{"email": "ana@example.com", "name": "Jos\\u00e9"}'),
    ]
    assert paths({"to": "ana@example.com"}, found) == []
    assert paths({"to": "José"}, found) == []  # escaped in the tool's JSON output
    assert paths({"to": "ana@example.com"}, [{"role": "user", "content": "Email ana@example.com"}]) == []
    assert paths({"to": "bob@example.com"}, ["Email ana@example.com"]) == ["to"]


def test_a_tool_not_offered_still_has_its_values_checked() -> None:
    found = ungrounded([{"name": "other", "arguments": {"q": "Lisbon"}}], "Weather in Porto?", Checker(TOOLS))
    assert [(f.code, f.call, f.path, f.data) for f in found] == [
        ("invalid_value", 0, "q", {"ungrounded": True, "value": "Lisbon"})
    ]


def test_a_place_already_faulted_is_not_reported_again() -> None:
    call = ToolCall(name="send", arguments={"to": "Bob", "meta": {"city": "Rome"}})
    earlier = [Finding(code="invalid_type", message="...", call=0, path="to")]
    assert [f.path for f in ungrounded([call], "to Ana", TOOLS, besides=earlier)] == ["meta.city"]


def test_a_malformed_schema_reads_as_no_schema() -> None:
    odd = [{"name": "send", "parameters": {"type": "object", "properties": {"to": {"anyOf": 3}}}}]
    call = ToolCall(name="send", arguments={"to": "Bob"})
    assert [f.path for f in ungrounded([call], "to Ana", odd)] == ["to"]


def test_turn_findings_add_grounding_only_where_the_schema_found_nothing() -> None:
    checker = Checker(TOOLS)
    turn = Turn.from_text('[send(to="Bob", n="x")]', "python")
    assert [f.code for f in turn_findings(turn, checker)] == ["invalid_type"]
    with_context = turn_findings(turn, checker, "Send it to Ana.")
    assert [(f.code, f.path) for f in with_context] == [("invalid_type", "n"), ("invalid_value", "to")]
    ask = refine_reask(turn, checker, context="Send it to Ana.")
    assert "'to' is 'Bob', which appears nowhere in the conversation. Use the value" in ask
