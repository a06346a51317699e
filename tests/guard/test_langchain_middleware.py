"""GuardMiddleware in a real LangChain v1 agent, driven by LangChain's own fake chat model."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from toolmend.guard import GuardPolicy  # noqa: E402
from toolmend.guard.langchain import GuardMiddleware  # noqa: E402

RAN: list[dict[str, Any]] = []


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Weather for a city."""
    RAN.append({"city": city, "days": days})
    return f"sunny in {city}"


class FakeModel(GenericFakeChatModel):
    """The fake chat model, able to take tools as agents bind them; it records what it was sent."""

    seen: list[Any] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def model(*replies: AIMessage) -> FakeModel:
    m = FakeModel(messages=iter(replies))
    m.seen = []
    return m


def bad_then_good() -> list[AIMessage]:
    return [
        AIMessage(
            content="",
            invalid_tool_calls=[
                {
                    "name": "get_weather",
                    "args": '{"city": "Os',
                    "id": "c1",
                    "error": "bad json",
                    "type": "invalid_tool_call",
                }
            ],
        ),
        AIMessage(
            content="",
            tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "c2", "type": "tool_call"}],
        ),
        AIMessage(content="It is sunny."),
    ]


def test_invalid_tool_call_is_reasked_not_ended() -> None:
    RAN.clear()
    fake = model(*bad_then_good())
    guard = GuardMiddleware()
    agent = create_agent(fake, tools=[get_weather], middleware=[guard])
    result = agent.invoke({"messages": [HumanMessage(content="weather in Oslo?")]})
    assert RAN == [{"city": "Oslo", "days": 1}]
    assert result["messages"][-1].content == "It is sunny."
    reask = fake.seen[1]
    assert isinstance(reask[-1], ToolMessage) and reask[-1].tool_call_id == "c1"
    assert "could not be read" in reask[-1].content
    assert [e["action"] for e in guard.events][:2] == ["reask", "accept"]


def test_repair_reaches_the_tool_without_a_second_call() -> None:
    RAN.clear()
    fake = model(
        AIMessage(
            content="",
            tool_calls=[
                {"name": "get_wether", "args": {"City": "Oslo", "days": "2"}, "id": "c1", "type": "tool_call"}
            ],
        ),
        AIMessage(content="done"),
    )
    create_agent(fake, tools=[get_weather], middleware=[GuardMiddleware()]).invoke(
        {"messages": [HumanMessage(content="go")]}
    )
    assert RAN == [{"city": "Oslo", "days": 2}] and len(fake.seen) == 2


def test_spent_budget_ends_with_an_explicit_message() -> None:
    RAN.clear()
    bad = AIMessage(
        content="", tool_calls=[{"name": "get_weather", "args": {"days": 2}, "id": "c1", "type": "tool_call"}]
    )
    fake = model(bad, bad.model_copy(), bad.model_copy())
    agent = create_agent(
        fake,
        tools=[get_weather],
        middleware=[GuardMiddleware(GuardPolicy(max_reasks_per_turn=1, escalate_after=3))],
    )
    last = agent.invoke({"messages": [HumanMessage(content="go")]})["messages"][-1]
    assert RAN == [] and not last.tool_calls
    assert (
        last.response_metadata["toolmend_guard"]["status"] == "aborted"
        and "could not be made valid" in last.content
    )


async def test_async_agent() -> None:
    RAN.clear()
    agent = create_agent(model(*bad_then_good()), tools=[get_weather], middleware=[GuardMiddleware()])
    result = await agent.ainvoke({"messages": [HumanMessage(content="weather in Oslo?")]})
    assert RAN == [{"city": "Oslo", "days": 1}] and result["messages"][-1].content == "It is sunny."


def test_tool_choice_in_langchain_words_is_enforced() -> None:
    from langchain.agents.middleware import ModelRequest, ModelResponse

    two = AIMessage(content="", tool_calls=[
        {"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"},
        {"name": "get_weather", "args": {"city": "Rome"}, "id": "c2", "type": "tool_call"}])  # fmt: skip
    sent: list[Any] = []

    def handler(request: ModelRequest) -> ModelResponse:
        sent.append(request)
        return ModelResponse(result=[two if len(sent) > 1 else AIMessage(content="It is sunny.")])

    # "any" is LangChain's "required": the text answer is re-asked; then one call of the two.
    request = ModelRequest(model=model(), messages=[HumanMessage(content="weather?")], tool_choice="any",
                           tools=[get_weather], model_settings={"parallel_tool_calls": False})  # fmt: skip
    middleware = GuardMiddleware()
    out = middleware.wrap_model_call(request, handler)
    assert [c["args"] for c in out.result[0].tool_calls] == [{"city": "Oslo"}]
    assert len(sent) == 2 and [e["action"] for e in middleware.events] == ["reask", "repaired"]


def test_ground_reads_the_agent_messages() -> None:
    RAN.clear()
    paris = {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"}
    oslo = {"name": "get_weather", "args": {"city": "Oslo"}, "id": "c2", "type": "tool_call"}
    fake = model(AIMessage(content="", tool_calls=[paris]), AIMessage(content="", tool_calls=[oslo]),
                 AIMessage(content="done"))  # fmt: skip
    guard = GuardMiddleware(policy=GuardPolicy(ground=True))
    create_agent(fake, tools=[get_weather], middleware=[guard]).invoke(
        {"messages": [HumanMessage(content="weather in Oslo?")]}
    )
    assert RAN == [{"city": "Oslo", "days": 1}]
    assert "'Paris', which appears nowhere" in fake.seen[1][-1].content
    assert [e["action"] for e in guard.events][:2] == ["reask", "accept"]
