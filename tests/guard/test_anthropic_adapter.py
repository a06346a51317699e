"""toolmend.wrap(Anthropic()) with the real anthropic SDK against a scripted Messages server on
127.0.0.1: create (streamed or not) and stream, sync and async, with the guarantees of the
OpenAI adapter."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from messages_upstream import MessagesUpstream, events, message, text, tool_use
from scripted_upstream import Scene

anthropic = pytest.importorskip("anthropic")

from toolmend import wrap  # noqa: E402
from toolmend.guard import GuardPolicy  # noqa: E402
from toolmend.guard.anthropic_client import GuardAborted, GuardedAnthropic  # noqa: E402

WEATHER = {"name": "get_weather", "input_schema": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}  # fmt: skip
ASK: dict[str, Any] = {"model": "claude-x", "max_tokens": 128, "tools": [WEATHER],
                       "messages": [{"role": "user", "content": "Weather in Oslo for 3 days?"}]}  # fmt: skip
BAD = tool_use("get_weather", {"city": "Oslo", "days": "3"}, "toolu_bad")
MISSING = tool_use("get_weather", {"days": 3}, "toolu_missing")
GOOD = tool_use("get_weather", {"city": "Oslo", "days": 3}, "toolu_good")


@pytest.fixture
def upstream() -> Iterator[Callable[..., MessagesUpstream]]:
    started: list[MessagesUpstream] = []

    def make(*scenes: Scene) -> MessagesUpstream:
        started.append(MessagesUpstream(*scenes).start())
        return started[-1]

    yield make
    for u in started:
        u.stop()


def _client(up: MessagesUpstream, **kw: Any) -> Any:
    return wrap(anthropic.Anthropic(base_url=up.thread.url, api_key="k", max_retries=0), **kw)


def test_wrap_dispatches_on_the_client_and_leaves_openai_users_alone() -> None:
    assert isinstance(wrap(anthropic.Anthropic(api_key="k")), GuardedAnthropic)
    code = "import toolmend, openai, sys; toolmend.wrap(openai.OpenAI(api_key='k')); print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_clean_answer_is_the_sdks_own_object(upstream: Any) -> None:
    up = upstream(Scene(body=message(text("Checking."), GOOD)))
    client = anthropic.Anthropic(base_url=up.thread.url, api_key="k", max_retries=0)
    guarded = wrap(client)
    got = guarded.messages.create(**ASK)
    assert got.content[1].input == {"city": "Oslo", "days": 3} and got.stop_reason == "tool_use"
    assert guarded.events and guarded.events[-1]["action"] == "accept"
    assert guarded.models is client.models  # everything else passes through


def test_repair_and_reask(upstream: Any) -> None:
    up = upstream(Scene(body=message(BAD)), Scene(body=message(MISSING, usage=(10, 5))),
                  Scene(body=message(GOOD, usage=(30, 7))))  # fmt: skip
    client = _client(up)
    got = client.messages.create(**ASK)
    assert (got.content[0].id, got.content[0].input) == ("toolu_bad", {"city": "Oslo", "days": 3})
    assert len(up.bodies) == 1
    got = client.messages.create(**ASK)
    assert (got.content[0].id, got.content[0].input) == ("toolu_good", {"city": "Oslo", "days": 3})
    assert (got.usage.input_tokens, got.usage.output_tokens) == (40, 12)
    assistant, user = up.bodies[2]["messages"][-2:]
    assert assistant["content"][0] == {"type": "tool_use", "id": "toolu_missing", "name": "get_weather",
                                       "input": {"days": 3}}  # fmt: skip
    result = user["content"][0]
    assert (
        result["type"] == "tool_result"
        and result["is_error"] is True
        and result["tool_use_id"] == "toolu_missing"
    )
    assert "get_weather" in result["content"] and "city" in result["content"]


def test_give_up_raises_guard_aborted(upstream: Any) -> None:
    up = upstream(Scene(body=message(MISSING)))
    with pytest.raises(GuardAborted) as info:
        _client(up, policy=GuardPolicy(max_reasks_per_turn=1)).messages.create(**ASK)
    assert info.value.last_response["content"][0]["id"] == "toolu_missing"
    assert len(up.bodies) == 2


def test_stream_helper_gets_the_decided_message(upstream: Any) -> None:
    up = upstream(Scene(chunks=events(text("On it."), MISSING)), Scene(body=message(GOOD)),
                  Scene(chunks=events(GOOD, pieces=5)))  # fmt: skip
    client = _client(up)
    with client.messages.stream(**ASK) as stream:
        seen = [e.type for e in stream]
        final = stream.get_final_message()
    # The answer is the re-ask's (as for the OpenAI adapter): the rejected turn is gone whole.
    assert [(b.id, b.input) for b in final.content] == [("toolu_good", {"city": "Oslo", "days": 3})]
    assert "input_json" in seen and final.stop_reason == "tool_use"
    # A clean stream is replayed as it came: the same input_json_delta fragments.
    raw = client.messages.create(**ASK, stream=True)
    pieces = [e.delta.partial_json for e in raw if e.type == "content_block_delta"]
    assert pieces == [
        e["delta"]["partial_json"] for e in events(GOOD, pieces=5) if e["type"] == "content_block_delta"
    ]


def test_tool_choice_is_enforced(upstream: Any) -> None:
    up = upstream(Scene(body=message(text("Sunny."), GOOD)))
    got = _client(up).messages.create(**ASK, tool_choice={"type": "none"})
    assert [b.type for b in got.content] == ["text"] and got.stop_reason == "end_turn"


async def test_async_create_stream_and_helper(upstream: Any) -> None:
    up = upstream(Scene(body=message(BAD)), Scene(chunks=events(MISSING)), Scene(body=message(GOOD)),
                  Scene(chunks=events(BAD)))  # fmt: skip
    client = wrap(anthropic.AsyncAnthropic(base_url=up.thread.url, api_key="k", max_retries=0))
    got = await client.messages.create(**ASK)
    assert got.content[0].input == {"city": "Oslo", "days": 3}
    stream = await client.messages.create(**ASK, stream=True)
    evs = [e async for e in stream]
    await stream.close()
    joined = "".join(e.delta.partial_json for e in evs if e.type == "content_block_delta")
    assert json.loads(joined) == {"city": "Oslo", "days": 3}
    async with client.messages.stream(**ASK) as s:
        final = await s.get_final_message()
    assert final.content[0].input == {"city": "Oslo", "days": 3} and final.content[0].id == "toolu_bad"
