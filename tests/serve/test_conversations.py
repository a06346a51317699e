"""Conversations, not requests: ``toolmend serve`` counts re-asks per conversation (named by an
``x-toolmend-session`` header, or recognised by its earlier turns) and breaks the loop of a call
that keeps failing, with a re-ask that tells the model so. Real openai client, scripted upstream."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_upstream import Scene, call, completion

from toolmend.guard import GuardPolicy

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}  # fmt: skip
USER = {"role": "user", "content": "Weather in Oslo?"}
GOOD = completion(None, [call("get_weather", {"city": "Oslo"}, "c9")])
BAD = completion(None, [call("get_weather", {"days": 2}, "c8")])  # 'city' missing


def _client(proxy: Any) -> Any:
    return openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)


def _failing_history(times: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [USER]
    for i in range(times):
        out.append({"role": "assistant", "content": None,
                    "tool_calls": [call("get_weather", {"city": "Oslo"}, f"h{i}")]})  # fmt: skip
        out.append(
            {"role": "tool", "tool_call_id": f"h{i}", "content": "Error: the weather service timed out"}
        )
    return out


def test_a_call_that_keeps_failing_is_re_asked_with_a_loop_message(serve: Any) -> None:
    proxy = serve(Scene(body=GOOD), Scene(body=completion("The weather service is down; try later.")))
    reply = _client(proxy).chat.completions.create(model="m", messages=_failing_history(3), tools=[WEATHER])
    message = reply.choices[0].message
    assert message.tool_calls is None and message.content == "The weather service is down; try later."
    assert len(proxy.upstream.bodies) == 2
    told = proxy.upstream.bodies[1]["messages"][-1]
    assert told["role"] == "tool" and told["tool_call_id"] == "c9"
    assert "failed 3 times in a row" in told["content"] and "Do not repeat this call" in told["content"]


def test_fewer_failures_than_the_limit_pass(serve: Any) -> None:
    proxy = serve(Scene(body=GOOD))
    reply = _client(proxy).chat.completions.create(model="m", messages=_failing_history(2), tools=[WEATHER])
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert len(proxy.upstream.bodies) == 1


def test_the_loop_breaker_can_be_turned_off(serve: Any) -> None:
    proxy = serve(Scene(body=GOOD), policy=GuardPolicy(max_repeated_failures=0))
    reply = _client(proxy).chat.completions.create(model="m", messages=_failing_history(5), tools=[WEATHER])
    assert json.loads(reply.choices[0].message.tool_calls[0].function.arguments) == {"city": "Oslo"}


def test_the_re_ask_budget_is_the_conversations(serve: Any) -> None:
    """One re-ask per conversation: the session that spent it gets 422 on its next bad answer,
    another session still gets its re-ask."""
    proxy = serve(
        Scene(body=BAD), Scene(body=GOOD),  # session a: re-asked, recovered
        Scene(body=BAD),  # session a again: the budget is spent
        Scene(body=BAD), Scene(body=GOOD),  # session b: its own budget
        policy=GuardPolicy(max_reasks_per_run=1),
    )  # fmt: skip
    client = _client(proxy)

    def ask(session: str) -> Any:
        return client.chat.completions.with_raw_response.create(
            model="m", messages=[USER], tools=[WEATHER], extra_headers={"x-toolmend-session": session}
        )

    first = ask("a")
    assert first.headers["x-toolmend-outcome"] == "recovered"
    with pytest.raises(openai.UnprocessableEntityError, match="budget of 1 re-ask"):
        ask("a")
    assert ask("b").headers["x-toolmend-outcome"] == "recovered"
    assert len(proxy.upstream.bodies) == 5
    assert all("x-toolmend-session" not in {k.lower() for k in h} for h in proxy.upstream.headers)


def test_a_conversation_is_recognised_by_its_earlier_turns(serve: Any) -> None:
    """Without a header, the next request of a conversation carries the proxy's first answer (its
    tool-call ids), and that is the conversation the budget belongs to."""
    proxy = serve(
        Scene(body=BAD), Scene(body=GOOD), Scene(body=BAD), policy=GuardPolicy(max_reasks_per_run=1)
    )
    client = _client(proxy)
    first = client.chat.completions.create(model="m", messages=[USER], tools=[WEATHER])
    answer = first.choices[0].message.model_dump(exclude_none=True)
    history = [USER, answer, {"role": "tool", "tool_call_id": "c9", "content": "sunny"},
               {"role": "user", "content": "And in two days?"}]  # fmt: skip
    with pytest.raises(openai.UnprocessableEntityError, match="budget of 1 re-ask"):
        client.chat.completions.create(model="m", messages=history, tools=[WEATHER])


def test_responses_breaks_the_loop_too(serve: Any) -> None:
    """/v1/responses decides through the same exchange: its history's failures count alike."""
    import responses_upstream as ru

    weather = {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}
    items: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo?"}]
    for i in range(3):
        items.append({"type": "function_call", "call_id": f"h{i}", "name": "get_weather",
                      "arguments": '{"city": "Oslo"}'})  # fmt: skip
        items.append(
            {"type": "function_call_output", "call_id": f"h{i}", "output": "Error: service timed out"}
        )
    proxy = serve(
        Scene(body=ru.response(ru.fcall("get_weather", {"city": "Oslo"}, "c9"))),
        Scene(body=ru.response(ru.message("The weather service is down."))),
    )
    out = _client(proxy).responses.create(model="m", input=items, tools=[weather])
    assert out.output_text == "The weather service is down."
    told = [i for i in proxy.upstream.bodies[1]["input"] if i.get("type") == "function_call_output"][-1]
    assert told["call_id"] == "c9" and "failed 3 times in a row" in told["output"]
