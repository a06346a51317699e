"""The OpenAI-compatible backend against a real HTTP server on loopback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai_server import Reply, last_user_text

from toolmend._errors import ConfigError, EndpointError, ModelError
from toolmend._schema import Message, Tool, ToolCall
from toolmend.models import GenerateConfig, OpenAIModel, RetryPolicy, get_model

FAST = RetryPolicy(max_retries=3, initial_wait=0.01, max_wait=0.05, jitter=0.0)

TOOLS = [
    Tool(
        name="math.factorial",
        description="n!",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    ),
    Tool(name="math_factorial", description="a different tool that already has the safe name"),
    Tool(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
]


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


def model_for(server: Any, **kw: Any) -> OpenAIModel:
    kw.setdefault("retry", FAST)
    return OpenAIModel("test-model", base_url=server.base_url, cache=None, **kw)


async def test_text_answer_usage_and_latency(openai_server: Any) -> None:
    async with model_for(openai_server) as model:
        out = await model.generate(user("hello there"), config=GenerateConfig(temperature=0.0, max_tokens=5))
    assert out.text == "test-model: hello there"
    assert out.usage.input_tokens == 2 and out.usage.output_tokens == 3
    assert out.finish_reason == "stop" and out.retries == 0 and not out.cached
    assert out.latency_s > 0
    sent = openai_server.bodies[0]
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 5 and "tools" not in sent


async def test_native_tool_calls_are_parsed_and_dotted_names_round_trip(openai_server: Any) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        wire = {t["function"]["name"] for t in body["tools"]}
        assert wire == {"math_factorial_2", "math_factorial", "get_weather"}
        return Reply(
            text=None,
            tool_calls=[
                {"name": "math_factorial_2", "arguments": '{"n": 5}', "id": "c1"},
                {"name": "get_weather", "arguments": {"city": "Paris"}},
                {"name": "math_factorial", "arguments": "{}"},
            ],
            finish_reason="tool_calls",
        )

    openai_server.handler = handler
    async with model_for(openai_server) as model:
        out = await model.generate(user("5!"), tools=TOOLS, tool_choice="math.factorial")
    assert [(c.name, c.arguments) for c in out.tool_calls] == [
        ("math.factorial", {"n": 5}),
        ("get_weather", {"city": "Paris"}),
        ("math_factorial", {}),
    ]
    assert out.tool_calls[0].id == "c1" and out.finish_reason == "tool_calls"
    assert openai_server.bodies[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "math_factorial_2"},
    }


async def test_broken_tool_arguments_are_data_not_a_crash(openai_server: Any) -> None:
    openai_server.handler = lambda body: Reply(
        text="",
        tool_calls=[
            {"name": "get_weather", "arguments": '{"city": "Par'},
            {"name": "get_weather", "arguments": "[1, 2]"},
            {"name": "get_weather", "arguments": '{"city": "Rome"}'},
        ],
    )
    async with model_for(openai_server) as model:
        out = await model.generate(user("weather"), tools=TOOLS)
    assert [c.arguments for c in out.tool_calls] == [{"city": "Rome"}]
    assert [r.arguments for r in out.raw_tool_calls] == ['{"city": "Par', "[1, 2]", '{"city": "Rome"}']
    assert "not valid JSON" in (out.raw_tool_calls[0].error or "")
    assert "JSON object" in (out.raw_tool_calls[1].error or "")
    assert out.raw_tool_calls[2].error is None
    assert openai_server.requests == 1  # a model's broken JSON is not retried


async def test_history_tool_messages_get_ids_or_become_user_messages(openai_server: Any) -> None:
    messages = [
        Message(role="system", content="be brief"),
        Message(role="user", content="weather in Paris and 5!"),
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(name="get_weather", arguments={"city": "Paris"}),
                ToolCall(name="math.factorial", arguments={"n": 5}),
            ],
        ),
        Message(role="tool", name="get_weather", content='{"temp": 18}'),
        Message(role="tool", name="math.factorial", content="120"),
        Message(role="tool", name="math.factorial", content="stray answer"),
        Message(role="user", content="thanks"),
    ]
    async with model_for(openai_server) as model:
        await model.generate(messages, tools=TOOLS)
    wire = openai_server.bodies[0]["messages"]
    calls = wire[2]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_2_0", "call_2_1"]
    assert calls[1]["function"] == {"name": "math_factorial_2", "arguments": '{"n": 5}'}
    assert wire[3] == {"role": "tool", "tool_call_id": "call_2_0", "content": '{"temp": 18}'}
    assert wire[4] == {"role": "tool", "tool_call_id": "call_2_1", "content": "120"}
    assert wire[5] == {"role": "user", "content": "Tool response (math.factorial): stray answer"}


async def test_prompt_mode_renders_tools_into_the_system_prompt(openai_server: Any) -> None:
    messages = [
        Message(role="system", content="You are helpful."),
        Message(role="user", content="5!"),
        Message(role="assistant", tool_calls=[ToolCall(name="math.factorial", arguments={"n": 5})]),
        Message(role="tool", name="math.factorial", content="120"),
    ]
    async with model_for(openai_server, tool_mode="prompt") as model:
        await model.generate(messages, tools=TOOLS)
    body = openai_server.bodies[0]
    assert "tools" not in body and "tool_choice" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("You are helpful.") and "<tool_call>" in system
    assert json.dumps(TOOLS[0].name) in system  # original dotted name, no mapping needed in text
    assert body["messages"][2] == {
        "role": "assistant",
        "content": '<tool_call>{"name": "math.factorial", "arguments": {"n": 5}}</tool_call>',
    }
    assert body["messages"][3]["role"] == "user"


async def test_custom_prompt_template_must_have_placeholder(openai_server: Any) -> None:
    with pytest.raises(ConfigError, match="tools"):
        model_for(openai_server, tool_mode="prompt", tool_prompt="no placeholder")
    async with model_for(openai_server, tool_mode="prompt", tool_prompt="TOOLS:\n{tools}") as model:
        await model.generate(user("x"), tools=TOOLS[:1])
    assert openai_server.bodies[0]["messages"][0]["content"].startswith("TOOLS:\n{")


async def test_429_with_retry_after_then_success_counts_one_usage(openai_server: Any) -> None:
    openai_server.fail_next("hello", Reply(status=429, headers={"Retry-After": "0.05"}), Reply(status=503))
    async with model_for(openai_server) as model:
        out = await model.generate(user("hello"))
    assert out.text == "test-model: hello" and out.retries == 2
    assert openai_server.requests == 3
    assert out.usage.input_tokens == 1  # the final answer's usage only


async def test_retry_after_is_honoured(openai_server: Any) -> None:
    import time

    policy = RetryPolicy(max_retries=1, initial_wait=0.0, max_wait=5, jitter=0.0)
    openai_server.fail_next("slowly", Reply(status=429, headers={"retry-after-ms": "300"}))
    async with model_for(openai_server, retry=policy) as model:
        start = time.perf_counter()
        await model.generate(user("slowly"))
    assert time.perf_counter() - start >= 0.3


@pytest.mark.parametrize(
    "fault",
    [
        Reply(status=500),
        Reply(drop=True),
        Reply(delay=1.0),  # past the client's timeout
        Reply(body=b'{"choices": [{"message": '),  # broken JSON body
    ],
    ids=["500", "dropped", "timeout", "broken-body"],
)
async def test_transport_failures_are_retried_then_succeed(openai_server: Any, fault: Reply) -> None:
    openai_server.fail_next("x", fault, fault)
    async with model_for(openai_server, timeout=0.3) as model:
        out = await model.generate(user("x"))
    assert out.text == "test-model: x" and out.retries == 2


async def test_exhausted_retries_raise_a_retryable_model_error(openai_server: Any) -> None:
    openai_server.fail_next("x", *[Reply(status=502)] * 10)
    async with model_for(openai_server) as model:
        with pytest.raises(ModelError) as info:
            await model.generate(user("x"))
    assert info.value.retryable and info.value.status == 502
    assert openai_server.requests == 4  # 1 + max_retries


async def test_client_errors_are_not_retried(openai_server: Any) -> None:
    openai_server.fail_next("x", Reply(status=401))
    async with model_for(openai_server) as model:
        with pytest.raises(ModelError) as info:
            await model.generate(user("x"))
    assert not info.value.retryable and info.value.status == 401
    assert openai_server.requests == 1


async def test_max_connections_bounds_requests_in_flight(openai_server: Any) -> None:
    import asyncio

    openai_server.latency = 0.05
    async with model_for(openai_server, max_connections=3) as model:
        await asyncio.gather(*(model.generate(user(f"q{i}")) for i in range(12)))
    assert openai_server.requests == 12
    assert openai_server.peak_in_flight == 3


async def test_api_key_goes_in_the_header_and_hosted_openai_needs_one(
    openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4o-mini")
    monkeypatch.setenv("MY_KEY", "sk-test")
    model = get_model("openai/m", base_url=openai_server.base_url, api_key_env="MY_KEY", cache=False)
    assert model._headers["Authorization"] == "Bearer sk-test"  # type: ignore[attr-defined]
    await model.aclose()


def test_last_user_text_helper() -> None:
    assert last_user_text({"messages": [{"role": "user", "content": "a"}, {"role": "assistant"}]}) == "a"


def test_one_model_across_event_loops(openai_server: Any) -> None:
    import asyncio

    model = model_for(openai_server)
    first = asyncio.run(model.generate(user("first loop")))  # left open: its loop ends with it
    second = asyncio.run(model.generate(user("second loop")))
    asyncio.run(model.aclose())
    asyncio.run(model.aclose())  # twice is fine
    assert (first.text, second.text) == ("test-model: first loop", "test-model: second loop")


def test_an_invalid_url_is_a_configuration_error() -> None:
    for url in ("http:///v1", "http://[not a host/v1", "localhost:8000/v1", "http://h:99999/v1"):
        with pytest.raises(EndpointError, match="not a valid URL"):
            OpenAIModel("m", base_url=url, retry=FAST, cache=None)


async def test_a_refused_connection_is_configuration_first_then_an_outage() -> None:
    import socket

    from fake_openai_server import FakeOpenAIServer

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    policy = RetryPolicy(max_retries=1, initial_wait=0.0, jitter=0.0)
    async with OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", retry=policy, cache=None) as model:
        with pytest.raises(EndpointError, match="connection refused: nothing listens there"):
            await model.generate(user("x"))
    # Once the server has answered, a refused connection is a passing outage: retried, retryable.
    server = FakeOpenAIServer(lambda body: Reply(text="hi")).start()
    async with OpenAIModel("m", base_url=server.base_url, retry=policy, cache=None) as model:
        assert (await model.generate(user("x"))).text == "hi"
        server.stop()
        with pytest.raises(ModelError, match="connection failed") as info:
            await model.generate(user("y"))
    assert info.value.retryable


async def test_server_forgets_replies_the_client_gave_up_on(openai_server: Any) -> None:
    import asyncio

    openai_server.fail_next("slow", Reply(delay=0.5))
    policy = RetryPolicy(max_retries=0)
    async with model_for(openai_server, timeout=0.1, retry=policy) as model:
        with pytest.raises(ModelError, match="timed out"):
            await model.generate(user("slow"))
    for _ in range(50):
        if openai_server.in_flight == 0:
            break
        await asyncio.sleep(0.01)
    assert openai_server.in_flight == 0 and openai_server.peak_in_flight == 1


async def test_a_failing_test_handler_is_a_500_not_a_hang(openai_server: Any) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        raise KeyError("tools")

    openai_server.handler = handler
    async with model_for(openai_server, retry=RetryPolicy(max_retries=0)) as model:
        with pytest.raises(ModelError, match="handler raised KeyError") as info:
            await model.generate(user("x"))
    assert info.value.status == 500


async def test_proxy_from_the_environment(openai_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake server accepts absolute-form request targets, so it can stand in for the proxy.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{openai_server.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with OpenAIModel("m", base_url="http://llm.invalid/v1", retry=FAST, cache=None) as model:
        out = await model.generate(user("via proxy"))
    assert out.text == "m: via proxy"
    monkeypatch.setenv("NO_PROXY", "llm.invalid")
    policy = RetryPolicy(max_retries=0)
    async with OpenAIModel("m", base_url="http://llm.invalid/v1", retry=policy, cache=None) as model:
        with pytest.raises(EndpointError, match="host name not resolved"):
            await model.generate(user("direct"))
    assert openai_server.requests == 1


def _strict_server_handler(body: dict[str, Any]) -> Reply:
    """Like llama-cpp-python's server: a message whose content is not a string is a 500 naming
    pydantic's complaint; otherwise a tool call first, then text once a tool has answered."""
    for i, m in enumerate(body["messages"]):
        if not isinstance(m.get("content"), str):
            message = f"1 validation error for ChatCompletionRequest\nmessages.{i}.content\n  Input should be a valid string"
            payload = {
                "error": {"message": message, "type": "internal_server_error", "param": None, "code": None}
            }
            return Reply(status=500, body=json.dumps(payload).encode())
    if any(m["role"] == "tool" for m in body["messages"]):
        return Reply(text="done")
    return Reply(text=None, tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "c1"}])


async def test_assistant_tool_call_turns_carry_a_string_content() -> None:
    from fake_openai_server import FakeOpenAIServer

    server = FakeOpenAIServer(_strict_server_handler).start()
    try:
        async with model_for(server) as model:
            first = await model.generate(user("weather?"), tools=TOOLS)
            history = [*user("weather?"), Message(role="assistant", content=first.text, tool_calls=first.tool_calls),
                       Message(role="tool", content='{"temp": 3}', tool_call_id="c1")]  # fmt: skip
            second = await model.generate(history, tools=TOOLS)
    finally:
        server.stop()
    assert second.text == "done"
    assert server.bodies[1]["messages"][1]["content"] == ""


async def test_a_request_the_server_refuses_is_an_infrastructure_error_at_once(openai_server: Any) -> None:
    from toolmend._http import ModelFailure

    message = (
        "1 validation error for ChatCompletionRequest\nmessages.1.content\n  Input should be a valid string"
    )
    body = json.dumps({"error": {"message": message, "type": "internal_server_error"}}).encode()
    openai_server.fail_next("x", *[Reply(status=500, body=body)] * 5)
    async with model_for(openai_server) as model:
        with pytest.raises(ModelError) as info:
            await model.generate(user("x"))
    assert not isinstance(info.value, ModelFailure) and not info.value.retryable
    assert info.value.status == 500 and openai_server.requests == 1  # sending it again cannot help
    assert "HTTP 500" in str(info.value) and "Input should be a valid string" in str(info.value)
    assert "refused toolmend's request" in str(info.value)


async def test_a_context_overflow_answer_is_reported_as_such(openai_server: Any) -> None:
    body = json.dumps({"error": {"message": "This model's maximum context length is 8192 tokens. However, you "
                                 "requested 9500 tokens (8476 in the messages, 1024 in the completion).",
                                 "type": "invalid_request_error", "code": "context_length_exceeded"}}).encode()  # fmt: skip
    openai_server.fail_next("x", Reply(status=400, body=body))
    async with model_for(openai_server) as model:
        with pytest.raises(
            ModelError, match=r"HTTP 400: the prompt does not fit the model's context \(This model's"
        ):
            await model.generate(user("x"))
    assert openai_server.requests == 1
