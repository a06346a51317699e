"""``wrap(OpenAI()).responses.create / .stream`` with the real openai client (sync and async)
against a local Responses server on 127.0.0.1: repair in place, re-ask with
``function_call_output`` items, usage summed, streams replayed as the decided response,
``tool_choice`` / ``parallel_tool_calls`` enforced, and GuardAborted when the budget is spent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from responses_upstream import fcall, message, response, stream_events

openai = pytest.importorskip("openai")

from toolmend.guard import GuardPolicy, wrap  # noqa: E402
from toolmend.guard.openai_client import GuardAborted  # noqa: E402

WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}  # fmt: skip
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {
    "zone": {"type": "string"}}, "required": ["zone"]}}  # fmt: skip
ASK: dict[str, Any] = {"model": "m", "input": "Weather in Oslo for 3 days?", "tools": [WEATHER]}


class Server:
    """Answers ``/v1/responses`` from a script of response bodies (the last repeats); streams them
    as OpenAI's events when asked."""

    def __init__(self, *script: dict[str, Any]) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                outer.paths.append(self.path)
                answer = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                if body.get("stream"):
                    data = b"".join(
                        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
                        for e in stream_events(answer)
                    )
                    ctype = "text/event-stream"
                else:
                    data, ctype = json.dumps(answer).encode(), "application/json"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def server() -> Iterator[Any]:
    started: list[Server] = []

    def make(*script: dict[str, Any]) -> Server:
        started.append(Server(*script))
        return started[-1]

    yield make
    for s in started:
        s.close()


BAD = fcall("get_weather", '{"city": "Oslo", "days": "3"}', "c1")
MISSING = fcall("get_weather", '{"days": 3}', "c1")
GOOD = fcall("get_weather", '{"city":"Oslo","days":3}', "c2")


def test_clean_response_is_the_sdks_own(server: Any) -> None:
    s = server(response(message("Checking."), GOOD))
    out = wrap(openai.OpenAI(base_url=s.url, api_key="k")).responses.create(**ASK)
    assert out.output[1].arguments == '{"city":"Oslo","days":3}' and out.output_text == "Checking."
    assert len(s.bodies) == 1


def test_repair_in_place(server: Any) -> None:
    s = server(response(BAD))
    client = wrap(openai.OpenAI(base_url=s.url, api_key="k"))
    out = client.responses.create(**ASK)
    item = out.output[0]
    assert (item.id, item.call_id, json.loads(item.arguments)) == ("fc_c1", "c1", {"city": "Oslo", "days": 3})
    assert len(s.bodies) == 1 and client.events


def test_reask_with_function_call_output_and_usage_summed(server: Any) -> None:
    s = server(response(MISSING, usage=(10, 5)), response(GOOD, usage=(30, 7)))
    out = wrap(openai.OpenAI(base_url=s.url, api_key="k")).responses.create(**ASK)
    assert [(i.call_id, i.arguments) for i in out.output] == [("c2", '{"city":"Oslo","days":3}')]
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.total_tokens) == (40, 12, 52)
    assert s.paths == ["/v1/responses", "/v1/responses"]
    said = [i for i in s.bodies[1]["input"] if i.get("type") == "function_call_output"]
    assert said[0]["call_id"] == "c1" and "get_weather" in said[0]["output"] and "city" in said[0]["output"]
    assert {
        "type": "function_call",
        "call_id": "c1",
        "name": "get_weather",
        "arguments": '{"days": 3}',
    } in s.bodies[1]["input"]


def test_stream_is_read_then_replayed(server: Any) -> None:
    s = server(response(message("Let me see."), MISSING), response(GOOD))
    client = wrap(openai.OpenAI(base_url=s.url, api_key="k"))
    events = list(client.responses.create(**ASK, stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert deltas == '{"city":"Oslo","days":3}' == events[-1].response.output[1].arguments
    assert s.bodies[0]["stream"] is True and "stream" not in s.bodies[1]  # the re-ask is not streamed
    with client.responses.stream(**ASK) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert kinds[-1] == "response.completed" and final.output[-1].call_id == "c2"


def test_parallel_and_named_choice_enforced(server: Any) -> None:
    two = response(fcall("get_weather", {"city": "Oslo"}, "c1"), fcall("get_time", {"zone": "CET"}, "c2"))
    s = server(two)
    client = wrap(openai.OpenAI(base_url=s.url, api_key="k"))
    out = client.responses.create(**{**ASK, "tools": [WEATHER, TIME]}, parallel_tool_calls=False)
    assert [i.call_id for i in out.output] == ["c1"]
    out = client.responses.create(**ASK, tool_choice="none")
    assert out.output == []


def test_budget_spent_raises_guard_aborted(server: Any) -> None:
    s = server(response(MISSING))
    client = wrap(openai.OpenAI(base_url=s.url, api_key="k"), policy=GuardPolicy(max_reasks_per_turn=1))
    with pytest.raises(GuardAborted) as err:
        client.responses.create(**ASK)
    assert err.value.last_response.output[0].arguments == '{"days": 3}'


async def test_async_create_and_stream(server: Any) -> None:
    s = server(response(BAD), response(MISSING), response(GOOD))
    client = wrap(openai.AsyncOpenAI(base_url=s.url, api_key="k"))
    out = await client.responses.create(**ASK)
    assert json.loads(out.output[0].arguments) == {"city": "Oslo", "days": 3}
    async with client.responses.stream(**ASK) as stream:
        kinds = [e.type async for e in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and final.output[0].arguments == '{"city":"Oslo","days":3}'
