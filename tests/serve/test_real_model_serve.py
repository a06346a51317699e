"""``toolmend serve`` in front of a real model, with the openai SDK as the client.

The upstream is a small OpenAI-compatible server around SmolLM2-135M-Instruct run by the hf/
backend (the tests' FakeOpenAIServer with a handler that generates with the model), so every
hop is real: the SDK's HTTP request, the proxy's checks and re-asks, the upstream's HTTP answers
and the model's own greedy replies. Asserts structure, not the model's skill."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply
from real_model import gguf_root, require_smollm2, smollm2
from scripted_upstream import AppThread

from toolmend._schema import Message
from toolmend.formats import load_tools, parse_openai_tool_calls
from toolmend.guard import GuardPolicy
from toolmend.models import GenerateConfig, GenerateRequest
from toolmend.models._hf import HFModel
from toolmend.serve import ServeConfig, create_app

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather forecast for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name."},
    "days": {"type": "integer", "minimum": 1, "maximum": 14}}, "required": ["city"]}}}  # fmt: skip


def _messages(body: dict[str, Any]) -> list[Message]:
    out = []
    for m in body["messages"]:
        calls = parse_openai_tool_calls(m["tool_calls"]).calls if m.get("tool_calls") else []
        out.append(Message(role=m["role"], content=m.get("content") or "", tool_calls=calls))
    return out


def model_handler(model: HFModel) -> Any:
    """An upstream handler answering each chat request with the model (greedy, one at a time)."""

    def handle(body: dict[str, Any]) -> Reply:
        request = GenerateRequest(
            messages=_messages(body),
            tools=load_tools(body.get("tools") or []),
            config=GenerateConfig(max_tokens=body.get("max_tokens")),
        )
        out = model._run_batch([request])[0]
        calls = [{"name": c.name, "arguments": json.dumps(c.arguments), "id": f"call_{i}"}
                 for i, c in enumerate(out.tool_calls)]  # fmt: skip
        return Reply(
            text=out.text or None,
            tool_calls=calls or None,
            usage=(out.usage.input_tokens, out.usage.output_tokens),
            finish_reason="tool_calls" if calls else (out.finish_reason or "stop"),
        )

    return handle


def test_openai_sdk_through_serve_to_a_real_model(tmp_path_factory: pytest.TempPathFactory) -> None:
    require_smollm2()
    model = smollm2(gguf_root(tmp_path_factory))
    upstream = FakeOpenAIServer(handler=model_handler(model)).start()
    proxy = AppThread(
        create_app(ServeConfig(upstream=upstream.base_url, policy=GuardPolicy(max_reasks_per_turn=1)))
    ).start()
    try:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="local", max_retries=0, timeout=600)
        raw = client.chat.completions.with_raw_response.create(
            model="smollm2-135m",
            messages=[{"role": "user", "content": "What is the weather in Paris for the next 3 days?"}],
            tools=[WEATHER],
            max_tokens=48,
        )
        response = raw.parse()
    finally:
        proxy.stop()
        upstream.stop()
    assert upstream.requests >= 1 and all(b.get("tools") for b in upstream.bodies)
    outcomes = (
        "passthrough",
        "accepted",
        "repaired",
        "recovered",
        "failed_to_model",
        "aborted",
        "rejected",
        "cut",
    )
    assert raw.headers["x-toolmend-outcome"] in outcomes
    message = response.choices[0].message
    for call in message.tool_calls or []:
        assert call.function.name == "get_weather"  # the proxy never lets an unknown tool through
        assert isinstance(json.loads(call.function.arguments), dict)
    assert message.tool_calls or message.content is not None
    assert response.usage is not None and response.usage.completion_tokens > 0
