"""Streaming conformance: each upstream stream, and the same answer non-streamed, give the client
the same message through the proxy (the real openai SDK parses both)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_upstream import Scene, call, completion, stream_of

openai = pytest.importorskip("openai")

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
]  # fmt: skip

OSLO = '{"city": "Oslo", "days": 2}'


def tc(index: int, args: str | None = None, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    item: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        item.update(id=id, type="function")
    return {"tool_calls": [item]}


# (name, stream deltas, stream finish, the same answer non-streamed, expected (content, calls, finish))
CASES = [
    (
        "interleaved_parallel",
        [tc(0, "", "a", "get_weather"), tc(1, "", "b", "get_weather"), tc(0, '{"city": '), tc(1, '{"city": "Rome"}'),
         tc(0, '"Oslo", "days": 2}')],
        "tool_calls",
        completion(None, [call("get_weather", OSLO, "a"), call("get_weather", '{"city": "Rome"}', "b")]),
        (None, [("a", "get_weather", OSLO), ("b", "get_weather", '{"city": "Rome"}')], "tool_calls"),
    ),
    (
        "late_id",
        [tc(0, '{"city": ', name="get_weather"), tc(0, '"Oslo", ', id="late"), tc(0, '"days": 2}')],
        "tool_calls",
        completion(None, [call("get_weather", OSLO, "late")]),
        (None, [("late", "get_weather", OSLO)], "tool_calls"),
    ),
    (
        "empty_arguments",
        [tc(0, "", "t1", "get_time"), tc(1, "", "t2", "get_weather"), tc(1, '{"city": "Oslo"}')],
        "tool_calls",
        completion(None, [call("get_time", "", "t1"), call("get_weather", '{"city": "Oslo"}', "t2")]),
        (None, [("t1", "get_time", ""), ("t2", "get_weather", '{"city": "Oslo"}')], "tool_calls"),
    ),
    (
        "truncated_by_max_tokens",
        [tc(0, "", "a", "get_weather"), tc(0, '{"city": "Os')],
        "length",
        completion(None, [call("get_weather", '{"city": "Os', "a")], finish="length"),
        (None, [], "length"),
    ),
    (
        "truncated_but_reported_complete",  # vLLM reports a cut-off call as tool_calls
        [tc(0, "", "a", "get_weather"), tc(0, '{"city": "Os')],
        "tool_calls",
        completion(None, [call("get_weather", '{"city": "Os', "a")], usage=(10, 8)),
        (None, [], "length"),
    ),
    (
        "content_before_calls",
        [{"content": "Let me "}, {"content": "check."}, tc(0, OSLO, "a", "get_weather")],
        "tool_calls",
        completion("Let me check.", [call("get_weather", OSLO, "a")]),
        ("Let me check.", [("a", "get_weather", OSLO)], "tool_calls"),
    ),
    (
        "text_and_calls_mixed",
        [{"content": "First "}, tc(0, "", "a", "get_weather"), {"content": "then "}, tc(0, OSLO),
         {"content": "done."}, tc(1, "{}", "b", "get_time")],
        "tool_calls",
        completion("First then done.", [call("get_weather", OSLO, "a"), call("get_time", "{}", "b")]),
        ("First then done.", [("a", "get_weather", OSLO), ("b", "get_time", "{}")], "tool_calls"),
    ),
    (
        "one_character_fragments",
        [tc(0, "", "a", "get_weather"), *[tc(0, ch) for ch in OSLO]],
        "tool_calls",
        completion(None, [call("get_weather", OSLO, "a")]),
        (None, [("a", "get_weather", OSLO)], "tool_calls"),
    ),
    (
        "same_index_two_ids",  # Ollama sends every call at index 0
        [tc(0, OSLO, "a", "get_weather"), tc(0, "{}", "b", "get_time")],
        "tool_calls",
        completion(None, [call("get_weather", OSLO, "a"), call("get_time", "{}", "b")]),
        (None, [("a", "get_weather", OSLO), ("b", "get_time", "{}")], "tool_calls"),
    ),
    (
        "finish_stop_with_calls",  # some servers say stop for a turn with calls
        [tc(0, OSLO, "a", "get_weather")],
        "stop",
        completion(None, [call("get_weather", OSLO, "a")], finish="stop"),
        (None, [("a", "get_weather", OSLO)], "tool_calls"),
    ),
]  # fmt: skip


def collect(stream: Any) -> tuple[str | None, list[tuple[str, str, str]], str | None, Any]:
    """What a client makes of a stream: content, calls by index, finish_reason, usage."""
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    finish, usage = None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            d = choice.delta
            if d.content:
                content.append(d.content)
            for t in d.tool_calls or []:
                slot = calls.setdefault(t.index, ["", "", ""])
                assert not (slot[0] and t.id and t.id != slot[0]), "two ids in one slot"
                slot[0] = t.id or slot[0]
                slot[1] += (t.function.name or "") if t.function else ""
                slot[2] += (t.function.arguments or "") if t.function else ""
            finish = choice.finish_reason or finish
    return "".join(content) or None, [tuple(calls[i]) for i in sorted(calls)], finish, usage  # type: ignore[misc]


@pytest.mark.parametrize(("name", "deltas", "finish", "whole", "expected"), CASES, ids=[c[0] for c in CASES])
def test_stream_and_non_stream_agree(
    serve: Any, name: str, deltas: list, finish: str, whole: dict, expected: tuple
) -> None:
    usage = (whole["usage"]["prompt_tokens"], whole["usage"]["completion_tokens"])
    proxy = serve(Scene(chunks=stream_of(deltas, finish, usage=usage)), Scene(body=whole))
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    kwargs: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "weather?"}], "tools": TOOLS,
                              "max_tokens": 8}  # fmt: skip
    streamed = collect(
        client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs)
    )
    whole_resp = client.chat.completions.create(**kwargs)
    msg = whole_resp.choices[0].message
    plain = (
        msg.content,
        [(t.id, t.function.name, t.function.arguments) for t in msg.tool_calls or []],
        whole_resp.choices[0].finish_reason,
    )
    assert streamed[:3] == plain == expected
    assert streamed[3] is not None and streamed[3].total_tokens == whole_resp.usage.total_tokens
    # No re-ask was needed for any of these: the upstream saw exactly two requests.
    assert len(proxy.upstream.bodies) == 2


def test_clean_stream_content_passes_through_byte_for_byte(serve: Any) -> None:
    import urllib.request

    chunks = stream_of([{"content": "Hello"}, {"content": " world"}], "stop")
    proxy = serve(Scene(chunks=chunks))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "stream": True}
    req = urllib.request.Request(proxy.url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read().decode()
    for chunk in chunks[:3]:  # role, "Hello", " world": forwarded as the upstream wrote them
        assert "data: " + json.dumps(chunk) + "\n\n" in text
    assert text.endswith("data: [DONE]\n\n")


def test_upstream_connections_are_reused_after_streams(serve: Any) -> None:
    proxy = serve(Scene(chunks=stream_of([{"content": "hi"}], "stop")))
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    for _ in range(3):
        collect(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], tools=TOOLS, stream=True
            )
        )
    assert len(proxy.upstream.peers) == 1  # one pooled connection, not one per stream
