"""The reply parser follows the official format_load procedure step by step."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend.formats._critictool import parse_action


def test_plain_json_object() -> None:
    a = parse_action('{"error": "tool_select_error", "name": "A.b", "args": {"x": 1}}')
    assert (a.error, a.name, a.args, a.parsed) == ("tool_select_error", "A.b", {"x": 1}, True)
    assert a.thought == ""


def test_json_fence_and_surrounding_prose() -> None:
    text = 'Let me fix it.\n```json\n{"name": "A.b", "args": {"q": "x"}}\n```\nDone.'
    assert parse_action(text).args == {"q": "x"}


def test_python_literal_is_tried_first() -> None:
    # JSON would fail on the single quotes and on True; ast.literal_eval reads it.
    a = parse_action("{'name': 'A.b', 'args': {'flag': True}}")
    assert a.args == {"flag": True}


def test_single_quote_replacement_fallback() -> None:
    # Neither a Python literal (true) nor JSON (quotes): the third attempt swaps the quotes.
    a = parse_action("{'name': 'A.b', 'args': {'flag': true}}")
    assert a.args == {"flag": True}


def test_first_brace_to_last_brace() -> None:
    # Two objects: the cut spans both and is unreadable, so everything is empty.
    a = parse_action('{"name": "A"} and then {"name": "B"}')
    assert not a.parsed and a.name == "" and a.args == ""


def test_missing_keys_are_empty_strings_and_name_is_stringified() -> None:
    a = parse_action('{"name": 12, "thought": null}')
    assert (a.name, a.thought, a.args, a.error) == ("12", "None", "", "")


def test_finish_action_keeps_string_args() -> None:
    assert parse_action('{"name": "FinishAction", "args": "all done"}').args == "all done"


def test_unreadable_inputs() -> None:
    for text in ["", "no json here", "}{", "{", "{1, 2}", "[1, 2]", "{'a': }"]:
        a = parse_action(text)
        assert not a.parsed and a.name == "" and a.args == "", text


def test_same_call_uses_python_equality() -> None:
    a = parse_action('{"name": "W.f", "args": {"days": 3.0}}')
    assert a.same_call("W.f", {"days": 3})
    assert not parse_action('{"name": "W.f", "args": {"days": "3"}}').same_call("W.f", {"days": 3})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), json_values.map(json.dumps), json_values.map(repr)))
def test_never_raises(text: str) -> None:
    a = parse_action(text)
    assert isinstance(a.name, str) and isinstance(a.thought, str)
    if not a.parsed:
        assert (a.error, a.thought, a.name, a.args) == ("", "", "", "")


def test_two_fenced_objects_are_unreadable() -> None:
    # Everything after the first fence is kept (the second fence too), so the cut spans both
    # objects and fails; reading only the first block would score a reply the reference rejects.
    text = '```json\n{"name": "A.b", "args": {}}\n```\nor\n```json\n{"name": "C.d", "args": {}}\n```'
    assert not parse_action(text).parsed


def test_without_the_object_cut_prose_makes_a_reply_unreadable() -> None:
    reply = '{"name": "A.b", "args": {"x": 1}}'
    assert not parse_action(f"Trying again: {reply}", find_object=False).parsed
    assert not parse_action(f"{reply} -- retrying", find_object=False).parsed
    # A fence and surrounding whitespace are still fine; text after the closing fence is not.
    assert parse_action(f"```json\n{reply}\n```", find_object=False).args == {"x": 1}
    assert parse_action(f"  {reply}\n", find_object=False).name == "A.b"
    assert not parse_action(f"```json\n{reply}\n```\nthanks", find_object=False).parsed
    assert parse_action(f"```json\n{reply}\n```\nthanks").name == "A.b"
