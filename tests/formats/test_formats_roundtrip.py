"""write → parse gives the same calls back, for every format (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_formats import ANY_REFS, NESTOOLS_TEXT, PLACEHOLDER_REFS, TAG_SAFE_TEXT, calls

from toolmend._schema import ToolCall
from toolmend.formats import (
    parse_calls,
    parse_json_calls,
    parse_nestools_calls,
    parse_openai_message,
    parse_python_calls,
    parse_tagged_calls,
    to_openai_tool_calls,
    write_calls,
    write_json_calls,
    write_nestools_calls,
    write_python_calls,
    write_tagged_calls,
)

SETTINGS = settings(max_examples=60, deadline=None)


def _same(a: list[ToolCall], b: list[ToolCall]) -> bool:
    return [(c.name, c.arguments) for c in a] == [(c.name, c.arguments) for c in b]


@SETTINGS
@given(calls(refs=ANY_REFS), st.sampled_from(["arguments", "args", "parameters"]), st.booleans())
def test_json_round_trip(cs: list[ToolCall], key: str, fence: bool) -> None:
    text = write_json_calls(cs, key=key, fence=fence)  # type: ignore[arg-type]
    r = parse_json_calls(text)
    assert r.ok and r.findings == [] and r.calls == cs
    assert parse_calls(text).calls == cs


@SETTINGS
@given(calls(refs=ANY_REFS))
def test_python_round_trip(cs: list[ToolCall]) -> None:
    text = write_python_calls(cs)
    r = parse_python_calls(text)
    assert r.ok and r.findings == [] and r.calls == cs
    assert parse_calls(text).calls == cs


@SETTINGS
@given(
    calls(text=TAG_SAFE_TEXT, keys=TAG_SAFE_TEXT, refs=ANY_REFS),
    st.one_of(st.none(), TAG_SAFE_TEXT.map(str.strip)),
    st.one_of(st.none(), TAG_SAFE_TEXT.map(str.strip)),
    st.sampled_from(["tool_call", "call"]),
)
def test_tags_round_trip(cs: list[ToolCall], reflect: str | None, final: str | None, tag: str) -> None:
    text = write_tagged_calls(cs, reflect=reflect, final=final, tag=tag)  # type: ignore[arg-type]
    r = parse_tagged_calls(text)
    assert r.ok and r.findings == [] and r.calls == cs
    assert (r.reflect, r.final) == (reflect, final)
    assert parse_calls(text).calls == cs


@SETTINGS
@given(calls(keys=st.text(max_size=8), refs=ANY_REFS, with_ids=True))
def test_openai_round_trip(cs: list[ToolCall]) -> None:
    r = parse_openai_message({"role": "assistant", "tool_calls": to_openai_tool_calls(cs)})
    assert r.ok and r.findings == [] and _same(r.calls, cs)
    assert [c.id for c in r.calls] == [c.id or f"call_{i}" for i, c in enumerate(cs)]
    text = write_calls(cs, "openai")
    assert _same(parse_calls(text, "openai").calls, cs) and _same(parse_calls(text).calls, cs)


@SETTINGS
@given(
    calls(text=NESTOOLS_TEXT, keys=st.text(max_size=8), refs=PLACEHOLDER_REFS, outputs=True),
    st.booleans(),
)
def test_nestools_round_trip(cs: list[ToolCall], with_ids: bool) -> None:
    ids = list(range(100, 100 + len(cs))) if with_ids else None
    text = write_nestools_calls(cs, api_ids=ids)
    r = parse_nestools_calls(text)
    assert r.ok and r.findings == [] and r.calls == cs
    assert [e.get("api_id") for e in r.extras] == (ids or [None] * len(cs))
    assert parse_calls(text).calls == cs
