"""The streaming assembler and the content gate on their own (no server)."""

from __future__ import annotations

import pytest

from toolmend.serve._assembler import ContentGate, StreamAssembler


def _calls(*deltas: list[dict]) -> list[tuple]:
    a = StreamAssembler()
    for d in deltas:
        a.add(d)
    return [(c.id, c.name, c.arguments) for c in a.calls()]


def test_interleaved_parallel_calls_are_grouped_by_index() -> None:
    got = _calls(
        [{"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x"'}}],
        [{"index": 1, "id": "b", "function": {"name": "g", "arguments": '{"y"'}}],
        [{"index": 1, "function": {"arguments": ": 2}"}}, {"index": 0, "function": {"arguments": ": 1}"}}],
    )
    assert got == [("a", "f", '{"x": 1}'), ("b", "g", '{"y": 2}')]


def test_late_and_repeated_ids() -> None:
    got = _calls(
        [{"index": 0, "function": {"name": "f", "arguments": "{"}}],
        [{"index": 0, "id": "late", "function": {"arguments": '"x": 1'}}],
        [{"index": 0, "id": "late", "function": {"arguments": "}"}}],
    )
    assert got == [("late", "f", '{"x": 1}')]


def test_two_ids_on_one_index_never_merge() -> None:
    # Ollama-style: every call at index 0.
    got = _calls(
        [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}],
        [{"index": 0, "id": "b", "function": {"name": "g", "arguments": '{"y": 1}'}}],
    )
    assert got == [("a", "f", "{}"), ("b", "g", '{"y": 1}')]


def test_missing_index_and_one_character_fragments() -> None:
    text = '{"city": "Oslo"}'
    deltas = [[{"id": "a", "function": {"name": "w", "arguments": ""}}]]
    deltas += [[{"function": {"arguments": ch}}] for ch in text]
    assert _calls(*deltas) == [("a", "w", text)]


@pytest.mark.parametrize(
    ("pieces", "sent", "held"),
    [
        (["Hello ", "world"], "Hello world", ""),
        (["  ", "[get_weather(", 'city="Oslo")]'], "", '  [get_weather(city="Oslo")]'),
        (['{"name": "f"', ', "arguments": {}}'], "", '{"name": "f", "arguments": {}}'),
        (["Sure. [TOOL_", 'CALLS][{"name": "f"}]'], "Sure. ", '[TOOL_CALLS][{"name": "f"}]'),
        (["The list [1, 2] is short"], "The list [1, 2] is short", ""),
        (["<tool", "_call>{}</tool_call>"], "", "<tool_call>{}</tool_call>"),
        (["a <b>tag</b>"], "a <b>tag</b>", ""),
    ],
)
def test_content_gate(pieces: list[str], sent: str, held: str) -> None:
    gate = ContentGate()
    out = "".join(gate.feed(p) for p in pieces) + gate.flush()
    assert (out, gate.held) == (sent, held)
