"""toolmend.guard.wrap with the real openai client against a local server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from toolmend.guard import GuardPolicy, wrap  # noqa: E402
from toolmend.guard.openai_client import GuardAborted  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


class Server:
    """Answers chat completions from a script of tool-call lists; streams when asked."""

    def __init__(self, *script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                calls = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                tool_calls = [
                    {"id": f"call_{len(outer.bodies)}_{i}", "type": "function",
                     "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str) else json.dumps(c["arguments"])}}
                    for i, c in enumerate(calls)
                ]  # fmt: skip
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    base = {
                        "id": "c",
                        "object": "chat.completion.chunk",
                        "created": 1,
                        "model": body["model"],
                    }
                    events = [
                        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
                    ]
                    for i, tc in enumerate(tool_calls):
                        args = tc["function"]["arguments"]
                        half = len(args) // 2
                        events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [
                            {"index": i, "id": tc["id"], "type": "function", "function": {"name": tc["function"]["name"], "arguments": args[:half]}}]}}]})  # fmt: skip
                        events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [
                            {"index": i, "function": {"arguments": args[half:]}}]}}]})  # fmt: skip
                    events.append(
                        {
                            **base,
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                            "usage": usage,
                        }
                    )
                    for e in events:
                        self.wfile.write(f"data: {json.dumps(e)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                payload = json.dumps({
                    "id": "c", "object": "chat.completion", "created": 1, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "tool_calls",
                                 "message": {"role": "assistant", "content": None, "tool_calls": tool_calls}}],
                    "usage": usage,
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


BAD = [
    {"name": "get_weather", "arguments": {"city": "Oslo"}},
    {"name": "get_weather", "arguments": {"days": 2}},
]
FIXED = [{"name": "get_weather", "arguments": {"city": "Bergen", "days": 2}}]


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server(BAD, FIXED)
    yield s
    s.close()


def ask(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "weather"}], "tools": TOOLS, **extra}


def check_result(server: Server, calls: list[dict[str, Any]]) -> None:
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"city": "Oslo"},
        {"city": "Bergen", "days": 2},
    ]
    assert len(server.bodies) == 2  # the re-ask was a real second request
    history = server.bodies[1]["messages"]
    assistant = history[1]
    assert [m["tool_call_id"] for m in history[2:]] == [c["id"] for c in assistant["tool_calls"]]
    assert "Call 1 (get_weather)" in history[3]["content"] and "'city'" in history[3]["content"]


def test_sync_create_reasks_only_the_bad_call(server: Server) -> None:
    client = wrap(openai.OpenAI(base_url=server.url, api_key="x"))
    response = client.chat.completions.create(**ask())
    calls = [c.model_dump() for c in response.choices[0].message.tool_calls]
    check_result(server, calls)
    assert response.usage.total_tokens == 30  # both requests
    assert [e["action"] for e in client.events] == ["reask", "accept"]


async def test_async_create(server: Server) -> None:
    client = wrap(openai.AsyncOpenAI(base_url=server.url, api_key="x"), tools=TOOLS)
    response = await client.chat.completions.create(**ask())
    check_result(server, [c.model_dump() for c in response.choices[0].message.tool_calls])


def test_sync_streaming(server: Server) -> None:
    client = wrap(openai.OpenAI(base_url=server.url, api_key="x"))
    chunks = list(client.chat.completions.create(**ask(stream=True)))
    calls = [tc for ch in chunks for tc in (ch.choices[0].delta.tool_calls or [])]
    check_result(server, [c.model_dump() for c in calls])
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_async_streaming(server: Server) -> None:
    client = wrap(openai.AsyncOpenAI(base_url=server.url, api_key="x"))
    stream = await client.chat.completions.create(**ask(stream=True))
    chunks = [c async for c in stream]
    calls = [tc for ch in chunks for tc in (ch.choices[0].delta.tool_calls or [])]
    check_result(server, [c.model_dump() for c in calls])


def test_repair_costs_no_request() -> None:
    server = Server([{"name": "get_wether", "arguments": '{"city": "Oslo", "days": "3"}'}])
    try:
        client = wrap(openai.OpenAI(base_url=server.url, api_key="x"))
        msg = client.chat.completions.create(**ask()).choices[0].message
        assert msg.tool_calls[0].function.name == "get_weather"
        assert json.loads(msg.tool_calls[0].function.arguments) == {"city": "Oslo", "days": 3}
        assert len(server.bodies) == 1
    finally:
        server.close()


def test_budget_spent_raises_with_the_last_response() -> None:
    server = Server([{"name": "get_weather", "arguments": "{}"}])
    try:
        client = wrap(
            openai.OpenAI(base_url=server.url, api_key="x"),
            policy=GuardPolicy(max_reasks_per_turn=1, escalate_after=5),
        )
        with pytest.raises(GuardAborted, match="budget") as info:
            client.chat.completions.create(**ask())
        assert info.value.last_response.choices[0].message.tool_calls[0].function.arguments == "{}"
        assert len(server.bodies) == 2
    finally:
        server.close()


def test_other_attributes_pass_through(server: Server) -> None:
    inner = openai.OpenAI(base_url=server.url, api_key="x")
    assert wrap(inner).models is inner.models


def test_tool_choice_and_parallel_tool_calls_are_enforced() -> None:
    # A server that ignores both: two calls, whatever was asked.
    server = Server([{"name": "get_weather", "arguments": {"city": "Oslo"}},
                     {"name": "get_weather", "arguments": {"city": "Rome"}}])  # fmt: skip
    try:
        client = wrap(openai.OpenAI(base_url=server.url, api_key="x"))
        msg = client.chat.completions.create(**ask(parallel_tool_calls=False)).choices[0]
        assert [json.loads(c.function.arguments) for c in msg.message.tool_calls] == [{"city": "Oslo"}]
        none = client.chat.completions.create(**ask(tool_choice="none")).choices[0]
        assert (none.message.tool_calls, none.finish_reason) == (None, "stop")
        assert len(server.bodies) == 2  # dropping calls is a repair: no re-ask
        assert [e["codes"] for e in client.events] == [["parallel_tool_calls"], ["tool_choice_none"]]
    finally:
        server.close()


def test_ground_reads_the_request_and_reasks_an_unmentioned_value_once() -> None:
    server = Server([{"name": "get_weather", "arguments": {"city": "Paris"}}],
                    [{"name": "get_weather", "arguments": {"city": "Oslo"}}])  # fmt: skip
    try:
        client = wrap(openai.OpenAI(base_url=server.url, api_key="x"), policy=GuardPolicy(ground=True))
        oslo = {"role": "user", "content": "What is the weather in Oslo?"}
        msg = client.chat.completions.create(**ask(messages=[oslo])).choices[0].message
        assert json.loads(msg.tool_calls[0].function.arguments) == {"city": "Oslo"}
        assert "'Paris', which appears nowhere" in json.dumps(server.bodies[1]["messages"])
        # The request names the value: no re-ask (the check reads the caller's messages).
        client.chat.completions.create(**ask(messages=[oslo]))
        assert len(server.bodies) == 3 and [e["action"] for e in client.events] == [
            "reask",
            "accept",
            "accept",
        ]
    finally:
        server.close()
