"""Real clients through ``toolmend serve``: the openai SDK (sync, async, streaming or not) and
LangChain's ChatOpenAI with bind_tools. Repaired and re-asked calls arrive as valid tool_calls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_upstream import Scene, call, completion, stream_of

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}  # fmt: skip
TOOLS = [WEATHER]
ASK = {"model": "m", "messages": [{"role": "user", "content": "Weather in Oslo for 3 days?"}], "tools": TOOLS}


def _stream_scene(calls: list[dict[str, Any]], usage: tuple[int, int] = (10, 5)) -> Scene:
    deltas = [{"tool_calls": [{"index": i, **c}]} for i, c in enumerate(calls)]
    return Scene(chunks=stream_of(deltas, "tool_calls", usage=usage))


BAD = call("get_weather", '{"city": "Oslo", "days": "3"}', "c1")  # a string for an integer: safe repair
MISSING = call("get_weather", '{"days": 3}', "c1")  # no city: only the model can say
GOOD = call("get_weather", '{"city": "Oslo", "days": 3}', "c2")


def test_clean_answer_is_byte_identical(serve: Any) -> None:
    raw = '{"city":"Oslo",  "days":3}'  # odd spacing survives: nothing was re-encoded
    up = completion(None, [call("get_weather", raw, "c1")])
    proxy = serve(Scene(body=up))
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    resp = client.chat.completions.with_raw_response.create(**ASK)
    assert json.loads(resp.text) == up
    assert resp.text == json.dumps(up)  # the upstream's bytes, unchanged
    assert resp.headers["x-toolmend-outcome"] == "accepted"
    assert resp.headers["x-toolmend-findings"] == "none"
    assert resp.parse().choices[0].message.tool_calls[0].function.arguments == raw


def test_sync_repair_non_streaming(serve: Any) -> None:
    proxy = serve(Scene(body=completion(None, [BAD])))
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    resp = client.chat.completions.with_raw_response.create(**ASK)
    call_ = resp.parse().choices[0].message.tool_calls[0]
    assert json.loads(call_.function.arguments) == {"city": "Oslo", "days": 3}
    assert call_.id == "c1"
    assert (resp.headers["x-toolmend-repairs"], resp.headers["x-toolmend-reasks"]) == ("1", "0")
    assert resp.headers["x-toolmend-findings"] == "invalid_type"
    assert len(proxy.upstream.bodies) == 1


def test_sync_reask_streaming_sums_usage(serve: Any) -> None:
    proxy = serve(
        _stream_scene([MISSING], usage=(10, 5)), Scene(body=completion(None, [GOOD], usage=(30, 7)))
    )
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(**ASK, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    calls = [t for c in chunks for ch in c.choices for t in ch.delta.tool_calls or []]
    assert [(t.function.name, json.loads(t.function.arguments)) for t in calls] == [
        ("get_weather", {"city": "Oslo", "days": 3})
    ]
    assert [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason] == ["tool_calls"]
    usage = chunks[-1].usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (40, 12, 52)
    assert chunks[-1].model_extra["toolmend"]["reask_usage"] == {"prompt_tokens": 30, "completion_tokens": 7}
    # The hidden re-ask went upstream non-streamed, with the pairing invariant kept.
    reask = proxy.upstream.bodies[1]
    assert reask["stream"] is False and "stream_options" not in reask
    assistant, tool = reask["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "c1" and tool["tool_call_id"] == "c1"
    assert "city" in tool["content"]


async def test_async_clients_streaming_and_not(serve: Any) -> None:
    proxy = serve(Scene(body=completion(None, [MISSING])), Scene(body=completion(None, [GOOD])),
                  _stream_scene([BAD]))  # fmt: skip
    client = openai.AsyncOpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    resp = await client.chat.completions.with_raw_response.create(**ASK)
    parsed = resp.parse()
    assert json.loads(parsed.choices[0].message.tool_calls[0].function.arguments) == {
        "city": "Oslo",
        "days": 3,
    }
    assert resp.headers["x-toolmend-outcome"] == "recovered" and resp.headers["x-toolmend-reasks"] == "1"
    assert parsed.usage.total_tokens == 30
    stream = await client.chat.completions.create(**ASK, stream=True)
    calls = [t async for c in stream for ch in c.choices for t in ch.delta.tool_calls or []]
    assert [json.loads(t.function.arguments) for t in calls] == [{"city": "Oslo", "days": 3}]
    await client.close()


def test_give_up_is_an_openai_error(serve: Any) -> None:
    proxy = serve(Scene(body=completion(None, [MISSING])))
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError) as info:
        client.chat.completions.create(**ASK)
    assert info.value.body["code"] == "tool_call_guard_gave_up"
    assert "missing_required" in info.value.body["findings"]
    assert len(proxy.upstream.bodies) == 3  # the answer and two re-asks (the default budget)
    # On a stream the same error comes in-band, and no partial or invalid call is sent.
    stream = client.chat.completions.create(**ASK, stream=True)
    seen: list[Any] = []
    with pytest.raises(openai.APIError) as err:
        seen.extend(stream)
    assert "tool_call_guard_gave_up" in str(err.value.body)
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in seen)


def test_langchain_bind_tools(serve: Any) -> None:
    lc = pytest.importorskip("langchain_openai")
    proxy = serve(
        Scene(body=completion(None, [BAD])), _stream_scene([MISSING]), Scene(body=completion(None, [GOOD]))
    )
    model = lc.ChatOpenAI(model="m", base_url=proxy.url, api_key="k", max_retries=0)

    def get_weather(city: str, days: int = 1) -> str:
        """Weather for a city."""
        return "sunny"

    bound = model.bind_tools([get_weather])
    msg = bound.invoke("Weather in Oslo for 3 days?")
    assert msg.tool_calls[0]["name"] == "get_weather"
    assert msg.tool_calls[0]["args"] == {"city": "Oslo", "days": 3}
    assert not msg.invalid_tool_calls
    chunks = list(bound.stream("Weather in Oslo for 3 days?"))
    whole = chunks[0]
    for c in chunks[1:]:
        whole = whole + c
    assert whole.tool_calls == [
        {"name": "get_weather", "args": {"city": "Oslo", "days": 3}, "id": "c2", "type": "tool_call"}
    ]
