"""The grounding check: string values the conversation never mentions."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.mark.parametrize(
    ("value", "context"),
    [
        ("2023-04-25", "The forecast for Palo Alto for April 25th 2023?"),
        ("2023-03-02", "the weather on the 2nd of march 2023"),
        ("2023-06-20", "this weekend, Jun.20,2023"),
        ("2024-03-12 16:00:00", "available on 12/03/2024 16:00 - 18:00"),
        ("2023-11-01T20:00:00", "Move it to November 1, 2023 at 8pm London time."),
        ("04-2022", "performing next month (April 2022)"),
        ("2022-01-28", "the game on Jan. 28, 2022"),
        ("油炸鸡翅", "我想买30个油炸鸡翅，90根薯条"),
        ("Big Mac", "I'd like two Big Macs."),
        ("3x + 2", "where y=3x+2 meets y=2x+3"),
        ("3x**2", "the integral of f(x) = 3x^2"),
        ("without_joker", "a heart from a deck without joker"),
        ("Nashville, TN", "a guitar shop in Nashville"),
        ("12/03/2023 15:00", "departing on the 12th of March 2023 at 3 in the afternoon"),
        ("America/New_York", "Convert 3pm from New York time to London time."),
        ("track:Wrecking Ball artist:Miley Cyrus", "play wrecking ball by Miley Cyrus"),
        ('brand:"Apple"', "How have views of Apple changed?"),
        ("EUR", "Convert 200 euros to dollars."),
        ("CA", "a purchase in San Francisco, California"),
        ("GB", "the weather in London, in the UK"),
        ("mi", "the distance in miles"),
    ],
)
def test_a_value_written_in_another_form_is_seen(value: str, context: str) -> None:
    assert paths({"to": value}, context) == []


@pytest.mark.parametrize(
    ("value", "context"),
    [
        ("2023-04-27", "The upcoming Wednesday; today is Monday April 25th 2023."),  # computed, not copied
        ("2022-10-30T16:30:00", "Next Thursday at 4:30 PM? Today is 2022-10-20."),  # 30 is a minute there
        ("2023-03-05", "The forecast for Marshall, MN on the 5th, 2023."),  # "Mar" of Marshall is no month
        ("2023-05-07", "You may book it for the 7th, 2023."),  # nor is the verb "may"
        ("2023-04-25T09:00:00", "April 25th 2023 at 10am"),
        ("London, UK", "Weather in Paris, UK?"),
        ("鸡翅", "我想买30个油炸鸡腿"),
        ("Big Macs", "I'd like a Big Mac."),
        ("12/03/2023 15:00", "departing on the 12th of March 2023 at 3 in the morning"),
        ("Europe/Paris", "Convert 3pm from New York time to London time."),
        ("track:Friends artist:Marshmello", "Play the song 'Friends'."),  # the artist is the model's
        ("q:a", "a question"),  # a one-letter field value grounds nothing
        ("CA", "a purchase in Austin, Texas"),
        ("KRW", "Who won the game?"),  # the won is named with its country
        ("GBP", "Convert 10 euros to yen."),
    ],
)
def test_a_value_not_in_the_conversation_in_any_form_is_reported(value: str, context: str) -> None:
    assert paths({"to": value}, context) == ["to"]


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


def test_a_long_value_is_matched_only_as_written() -> None:
    # The looser forms are a regular expression per token: not for a value an attacker sizes.
    value = ",".join(["a1"] * 5000)
    context = " , ".join(["a1"] * 5000)
    assert paths({"to": value}, context) == ["to"]
    assert paths({"to": "a1,a1"}, context) == []  # short: any spacing
    assert paths({"to": "__"}, context) == ["to"]  # nothing to anchor a loose search on


def test_every_known_code_is_lower_case_and_named_by_words() -> None:
    from toolmend.check._known import KNOWN

    assert all(code == code.lower() and names for code, names in KNOWN.items())
    assert all(name == name.lower() and len(name) > 1 for names in KNOWN.values() for name in names)


def test_a_long_value_counts_inside_a_longer_word() -> None:
    from toolmend.check._ground import _mentions

    assert _mentions("x" + "ab" * 60 + "y", "ab" * 60)
    assert not _mentions("x" + "ab" * 60 + "y", "ab" * 3)


def test_a_value_that_repeats_itself_in_a_long_word_is_looked_for_at_word_starts() -> None:
    # Each occurrence inside "abab…" fails the boundary; the search goes on from the next word,
    # not from the next letter (about 50,000 comparisons of 81 letters otherwise).
    from toolmend.check._ground import _mentions

    word = "ab" * 50_000
    assert not _mentions(word, "ab" * 40 + "a")
    assert _mentions(word + " " + "ab" * 40 + "a", "ab" * 40 + "a")
    assert _mentions(word + "-ab", "ab")


@settings(max_examples=1000, deadline=None)
@given(st.text("ab _-.Ö1", max_size=40), st.text("ab _-.Ö1", min_size=1, max_size=6))
def test_a_mention_is_a_whole_word_match(text: str, value: str) -> None:
    # str.find with the neighbours looked at must agree with the regular expression it replaced,
    # whose boundaries stand only at the value's word-character edges.
    from toolmend.check._ground import _mentions

    left = r"(?<!\w)" if re.match(r"\w", value[0]) else ""
    right = r"(?!\w)" if re.match(r"\w", value[-1]) else ""
    assert _mentions(text, value) == (re.search(left + re.escape(value) + right, text) is not None)
