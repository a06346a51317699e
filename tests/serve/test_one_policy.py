"""One tool-call policy: the same reply through ``wrap()`` (the real openai client), the LangChain
middleware (a real agent) and the proxy gets the same decision, in strict mode and for a call
printed as text (both are :class:`~toolmend.guard.GuardPolicy` settings)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_upstream import Scene, call, completion

from toolmend.guard import GuardPolicy, wrap
from toolmend.guard.openai_client import GuardAborted

openai = pytest.importorskip("openai")
pytest.importorskip("langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from toolmend.guard.langchain import GuardMiddleware  # noqa: E402

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}  # fmt: skip
ASK = {"model": "m", "messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [WEATHER]}
PRINTED = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
FIXABLE = {"city": "Oslo", "days": "2"}  # repair would coerce "2"
RAN: list[dict[str, Any]] = []


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Weather for a city."""
    RAN.append({"city": city, "days": days})
    return f"sunny in {city}"


class FakeModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self


def _langchain(policy: GuardPolicy, first: AIMessage) -> tuple[AIMessage, list[dict[str, Any]]]:
    """The agent's first model answer after the guard, and the guard's events."""
    RAN.clear()
    guard = GuardMiddleware(policy)
    fake = FakeModel(messages=iter([first, AIMessage(content="done")]))
    messages = create_agent(fake, tools=[get_weather], middleware=[guard]).invoke(
        {"messages": [HumanMessage(content="Weather in Oslo?")]}
    )["messages"]
    return next(m for m in messages if isinstance(m, AIMessage)), guard.events


def _calls(tool_calls: Any) -> list[tuple[str, Any]]:
    return [(t.function.name, json.loads(t.function.arguments)) for t in tool_calls or []]


def test_a_call_printed_as_text_becomes_the_same_call_everywhere(serve: Any) -> None:
    proxy = serve(Scene(body=completion(PRINTED)), Scene(body=completion(PRINTED)))
    want = [("get_weather", {"city": "Oslo"})]

    msg = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0).chat.completions.create(**ASK)
    through_proxy = msg.choices[0]
    assert _calls(through_proxy.message.tool_calls) == want and not through_proxy.message.content
    assert through_proxy.finish_reason == "tool_calls"

    client = wrap(openai.OpenAI(base_url=proxy.upstream.base_url, api_key="k", max_retries=0))
    through_wrap = client.chat.completions.create(**ASK).choices[0]
    assert _calls(through_wrap.message.tool_calls) == want and not through_wrap.message.content
    assert through_wrap.finish_reason == "tool_calls"
    assert [(e["action"], e["fixed"]) for e in client.events] == [("repaired", ["tool_call_in_content"])]

    ai, events = _langchain(GuardPolicy(), AIMessage(content=PRINTED))
    assert [(c["name"], c["args"]) for c in ai.tool_calls] == want and not ai.content
    assert RAN == [{"city": "Oslo", "days": 1}]
    assert [(e["action"], e["fixed"]) for e in events][:1] == [("repaired", ["tool_call_in_content"])]


def test_rescue_off_leaves_the_text_everywhere(serve: Any) -> None:
    policy = GuardPolicy(rescue=False)
    proxy = serve(Scene(body=completion(PRINTED)), Scene(body=completion(PRINTED)), policy=policy)
    msg = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0).chat.completions.create(**ASK)
    assert msg.choices[0].message.content == PRINTED and not msg.choices[0].message.tool_calls
    client = wrap(openai.OpenAI(base_url=proxy.upstream.base_url, api_key="k", max_retries=0), policy=policy)
    got = client.chat.completions.create(**ASK).choices[0].message
    assert got.content == PRINTED and not got.tool_calls
    ai, _ = _langchain(policy, AIMessage(content=PRINTED))
    assert ai.content == PRINTED and not ai.tool_calls and RAN == []


@pytest.mark.parametrize("how", ["policy", "flag"])
def test_strict_mode_refuses_the_same_answer_everywhere(serve: Any, how: str) -> None:
    policy = GuardPolicy(strict=True)
    bad = completion(None, [call("get_weather", FIXABLE, "c1")])
    config: dict[str, Any] = {"policy": policy} if how == "policy" else {"strict": True}
    proxy = serve(Scene(body=bad), Scene(body=bad), **config)

    with pytest.raises(openai.UnprocessableEntityError) as info:
        openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0).chat.completions.create(**ASK)
    assert info.value.body["code"] == "invalid_tool_call" and info.value.body["findings"] == ["invalid_type"]
    assert len(proxy.upstream.bodies) == 1  # nothing re-asked

    client = wrap(openai.OpenAI(base_url=proxy.upstream.base_url, api_key="k", max_retries=0), policy=policy)
    with pytest.raises(GuardAborted) as aborted:
        client.chat.completions.create(**ASK)
    final = aborted.value.outcome.final
    assert (final.action, final.codes) == ("abort", ["invalid_type"])
    assert final.reason.startswith("strict mode: the answer would need changes: invalid_type")
    assert len(proxy.upstream.bodies) == 2  # one request, no re-ask

    first = AIMessage(
        content="", tool_calls=[{"name": "get_weather", "args": FIXABLE, "id": "c1", "type": "tool_call"}]
    )
    ai, events = _langchain(policy, first)
    assert RAN == [] and not ai.tool_calls
    meta = ai.response_metadata["toolmend_guard"]
    assert (meta["status"], meta["codes"]) == ("aborted", ["invalid_type"]) and "strict mode" in ai.content
    assert [e["action"] for e in events] == ["abort"]


def test_strict_mode_lets_a_valid_answer_through_everywhere(serve: Any) -> None:
    policy = GuardPolicy(strict=True)
    good = completion(None, [call("get_weather", {"city": "Oslo"}, "c1")])
    proxy = serve(Scene(body=good), Scene(body=good), policy=policy)
    msg = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0).chat.completions.create(**ASK)
    assert _calls(msg.choices[0].message.tool_calls) == [("get_weather", {"city": "Oslo"})]
    client = wrap(openai.OpenAI(base_url=proxy.upstream.base_url, api_key="k", max_retries=0), policy=policy)
    assert _calls(client.chat.completions.create(**ASK).choices[0].message.tool_calls) == [
        ("get_weather", {"city": "Oslo"})
    ]
    first = AIMessage(
        content="",
        tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"}],
    )
    ai, _ = _langchain(policy, first)
    assert [c["args"] for c in ai.tool_calls] == [{"city": "Oslo"}] and RAN == [{"city": "Oslo", "days": 1}]
