"""The OpenAI Agents SDK through ``toolmend serve``'s ``/v1/responses``: an ``Agent`` with a
function tool, its model an ``OpenAIResponsesModel`` whose client points at the proxy, against a
scripted upstream on 127.0.0.1. The tool runs only with arguments that fit its schema: a string
for an integer is repaired in the proxy, a missing argument is re-asked there, and the agent never
sees the bad call (streamed or not)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from responses_upstream import fcall, message, response, stream_events
from scripted_upstream import Scene

pytest.importorskip("openai")
agents = pytest.importorskip("agents")


def _agent(proxy: Any, ran: list[dict[str, Any]]) -> Any:
    import openai
    from agents import Agent, OpenAIResponsesModel, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # the trace exporter would post to api.openai.com

    @function_tool
    def get_weather(city: str, days: int) -> str:
        """Weather for a city.

        Args:
            city: The city.
            days: How many days ahead.
        """
        ran.append({"city": city, "days": days})
        return f"{city}: sunny for {days} days"

    client = openai.AsyncOpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    return Agent(name="weather", instructions="Answer with the tool.", tools=[get_weather],
                 model=OpenAIResponsesModel(model="scripted", openai_client=client))  # fmt: skip


def _script(first: dict[str, Any], stream: bool) -> Any:
    """The upstream: ``first`` for the agent's first request (streamed when the agent streams),
    a valid call for the proxy's hidden re-ask, and a text answer once the tool's output is in."""

    def handler(body: dict[str, Any]) -> Scene:
        items = body["input"] if isinstance(body["input"], list) else []
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        if any(o["output"].startswith("Oslo: sunny") for o in outputs):
            final = response(message("Oslo will be sunny for 3 days."), rid="resp_2")
            return Scene(chunks=stream_events(final), done=False) if body.get("stream") else Scene(body=final)
        if outputs:  # the proxy's re-ask, never streamed
            return Scene(body=response(fcall("get_weather", {"city": "Oslo", "days": 3}, "call_b")))
        return Scene(chunks=stream_events(first), done=False) if stream else Scene(body=first)

    return handler


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("bad", "reasks"),
    [('{"city": "Oslo", "days": "3"}', 0), ('{"days": 3}', 1)],
    ids=["repaired", "reasked"],
)
async def test_agent_with_a_function_tool_through_the_proxy(
    serve: Any, stream: bool, bad: str, reasks: int
) -> None:
    from agents import Runner

    proxy = serve(handler=_script(response(fcall("get_weather", bad, "call_a")), stream))
    ran: list[dict[str, Any]] = []
    agent = _agent(proxy, ran)
    if stream:
        result = Runner.run_streamed(agent, "Weather in Oslo for 3 days?")
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "Weather in Oslo for 3 days?")
    assert result.final_output == "Oslo will be sunny for 3 days."
    assert ran == [{"city": "Oslo", "days": 3}]  # the tool ran once, with valid arguments
    bodies = proxy.upstream.bodies
    assert proxy.upstream.paths == ["/v1/responses"] * (2 + reasks)
    assert proxy.metrics.value("toolmend_reasks_total") == reasks
    if reasks:
        reask = bodies[1]["input"]
        said = [i for i in reask if i.get("type") == "function_call_output"]
        assert said and said[0]["call_id"] == "call_a" and "get_weather" in said[0]["output"]
        assert "city" in said[0]["output"]
    # The agent's next request carries the call it was given, never the rejected one.
    calls = [i for i in bodies[-1]["input"] if i.get("type") == "function_call"]
    assert [json.loads(c["arguments"]) for c in calls] == [{"city": "Oslo", "days": 3}]
