from __future__ import annotations

from toolmend._schema import ToolCall
from toolmend.formats import parse_tagged_calls, strip_think, write_tagged_calls


def codes(r: object) -> list[str]:
    return [f.code for f in r.findings]  # type: ignore[attr-defined]


HERMES = """I'll look both up.
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris"}}
</tool_call>
<tool_call>
{"name": "get_weather", "arguments": {"city": "Rome"}}
</tool_call>"""


def test_multiple_hermes_blocks_with_planning_text() -> None:
    r = parse_tagged_calls(HERMES)
    assert r.ok and r.format == "tags" and r.findings == []
    assert [c.arguments["city"] for c in r.calls] == ["Paris", "Rome"]
    assert r.text == "I'll look both up."


def test_reflect_then_call_and_final() -> None:
    r = parse_tagged_calls(
        '<reflect>\nwrong key\n</reflect>\n<call>{"name": "f", "arguments": {"k": 1}}</call>'
    )
    assert r.reflect == "wrong key" and r.calls == [ToolCall(name="f", arguments={"k": 1})]
    done = parse_tagged_calls("<reflect>all good</reflect><final>It is 18°C.</final>")
    assert done.final == "It is 18°C." and done.calls == [] and done.ok


def test_reflect_is_opaque_even_when_it_quotes_calls() -> None:
    text = (
        '<reflect>I wrote <tool_call>{"name": "f", "arguments": {"a": null}}</tool_call> '
        'but should have written ```json\n{"name": "f", "arguments": {"a": 1}}\n```</reflect>\n'
        '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    )
    r = parse_tagged_calls(text)
    assert r.calls == [ToolCall(name="f", arguments={"a": 1})] and r.ok


def test_think_blocks_are_stripped_including_an_opener_left_in_the_prompt() -> None:
    r = parse_tagged_calls('<think>check units</think><tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert r.think == "check units" and r.ok
    r2 = parse_tagged_calls(
        'reasoning only\n</think>\n\n<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    )
    assert r2.think == "reasoning only" and r2.ok and r2.text == ""


def test_unclosed_think_runs_to_the_first_tag_and_is_flagged() -> None:
    r = parse_tagged_calls('<think>hmm, f it is\n<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert r.think == "hmm, f it is" and [c.name for c in r.calls] == ["f"]
    assert codes(r) == ["invalid_format"] and "think" in r.findings[0].message
    assert strip_think("<think>never ends") == ("", "never ends", "a <think> block is never closed")


def test_unclosed_call_tag_keeps_a_complete_call_but_flags_it() -> None:
    r = parse_tagged_calls('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n')
    assert r.calls == [ToolCall(name="f", arguments={"a": 1})]
    assert codes(r) == ["invalid_format"] and not r.ok


def test_call_tag_closed_by_the_next_opener() -> None:
    r = parse_tagged_calls(
        '<tool_call>{"name": "a", "arguments": {}}<tool_call>{"name": "b", "arguments": {}}</tool_call>'
    )
    assert [c.name for c in r.calls] == ["a", "b"] and codes(r) == ["invalid_format"]


def test_broken_json_inside_a_tag() -> None:
    r = parse_tagged_calls('<tool_call>{"name": "f", "arguments": {"a": </tool_call>')
    assert r.calls == [] and set(codes(r)) == {"invalid_format"}
    repaired = parse_tagged_calls("<tool_call>{'name': 'f', 'arguments': {'a': 1,}}</tool_call>")
    assert repaired.calls[0].arguments == {"a": 1} and codes(repaired) == ["invalid_format"]


def test_empty_tag_stray_closer_and_bare_json_outside_tags() -> None:
    assert codes(parse_tagged_calls("<tool_call>\n</tool_call>")) == ["invalid_format"]
    assert codes(parse_tagged_calls("done</tool_call>")) == ["invalid_format"]
    r = parse_tagged_calls('<reflect>x</reflect>\n{"name": "f", "arguments": {"a": 1}}')
    assert r.calls == [ToolCall(name="f", arguments={"a": 1})]
    assert codes(r) == ["invalid_format"] and r.findings[0].call == 0


def test_bfcl_toolcall_tag_with_python_syntax_and_text_inside_a_tag() -> None:
    r = parse_tagged_calls("<TOOLCALL>[f(a=1), g(b='x')]</TOOLCALL>")
    assert [c.name for c in r.calls] == ["f", "g"] and r.ok
    chatty = parse_tagged_calls('<tool_call>here: {"name": "f", "arguments": {}}</tool_call>')
    assert chatty.calls and codes(chatty) == ["invalid_format"]


def test_writer_layout() -> None:
    text = write_tagged_calls(
        [ToolCall(name="f", arguments={"a": 1})], think="t", reflect="r", final="done", tag="call"
    )
    assert text == (
        "<think>\nt\n</think>\n\n<reflect>\nr\n</reflect>\n\n"
        '<call>\n{"name": "f", "arguments": {"a": 1}}\n</call>\n\n<final>\ndone\n</final>'
    )
    r = parse_tagged_calls(text)
    assert (r.think, r.reflect, r.final, r.calls) == (
        "t",
        "r",
        "done",
        [ToolCall(name="f", arguments={"a": 1})],
    )


def test_a_loop_of_identical_blocks_counts_its_problems_once() -> None:
    # A model repeating empty or broken tags: each problem is listed once, with how often it
    # occurred, and the outcome (not ok, no call) is the one a single such block gives.
    r = parse_tagged_calls("</call>" * 7 + "<tool_call></tool_call>" * 500 + "<tool_call>" * 300)
    assert not r.ok and r.calls == []
    counts = [(f.message, f.data.get("count", 1)) for f in r.findings]
    assert counts == [
        ("a stray closing tag '</call>'", 7),
        ("<tool_call> is empty", 800),
        ("<tool_call> is never closed", 300),
    ]
    broken = parse_tagged_calls("<tool_call>{oops</tool_call>" * 40)
    assert [(f.message, f.data["count"]) for f in broken.findings] == [
        ("<tool_call> holds no parsable call", 40)
    ]


def test_repeated_blocks_give_independent_calls_in_order() -> None:
    block = '<tool_call>{"name": "f", "arguments": {"a": [1]}}</tool_call>'
    r = parse_tagged_calls(block * 3 + '<tool_call>{"name": "g", "arguments": {}}</tool_call>' + block)
    assert [c.name for c in r.calls] == ["f", "f", "f", "g", "f"] and r.ok and r.findings == []
    r.calls[0].arguments["a"].append(2)
    assert [c.arguments for c in r.calls[1:3]] == [{"a": [1]}, {"a": [1]}]
    # Text beside the call inside each tag: one finding of the text, counted.
    mixed = parse_tagged_calls('<tool_call>{"name": "f", "arguments": {}} extra</tool_call>' * 3)
    assert len(mixed.calls) == 3 and [(f.call, f.data["count"]) for f in mixed.findings] == [(None, 3)]
