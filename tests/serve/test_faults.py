"""Upstream faults: every request ends (never past the configured timeout), with an OpenAI-shaped
error and the right status, or an in-band error event once a stream has started."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import aiohttp
import pytest
from scripted_upstream import Scene, call, completion, stream_of

openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "a": {"type": "integer"}}, "required": ["a"]}}}]  # fmt: skip
ASK = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": TOOLS}
OK = completion(None, [call("f", '{"a": 1}', "c1")])
FAST = {"max_retry_wait": 0.05}


def _client(proxy: Any) -> Any:
    return openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0, timeout=20)


def test_429_is_retried_with_retry_after(serve: Any) -> None:
    proxy = serve(
        Scene(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0"}),
        Scene(body=OK),
    )
    resp = _client(proxy).chat.completions.create(**ASK)
    assert resp.choices[0].message.tool_calls[0].function.arguments == '{"a": 1}'
    assert len(proxy.upstream.bodies) == 2
    assert proxy.metrics.value("toolmend_upstream_retries_total") == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_persistent_error_is_passed_on_with_its_status(serve: Any, status: int) -> None:
    proxy = serve(
        Scene(status=status, body={"error": {"message": "boom", "type": "server_error"}}), retries=2, **FAST
    )
    with pytest.raises(openai.APIStatusError) as info:
        _client(proxy).chat.completions.create(**ASK)
    assert info.value.status_code == status
    assert "boom" in info.value.body["message"]
    assert len(proxy.upstream.bodies) == 3  # one try and two retries
    # A stream fails the same way before its first byte: a plain HTTP error.
    with pytest.raises(openai.APIStatusError) as info:
        _client(proxy).chat.completions.create(**ASK, stream=True)
    assert info.value.status_code == status


def test_400_from_upstream_is_not_retried(serve: Any) -> None:
    proxy = serve(Scene(status=400, body={"error": {"message": "bad model", "param": "model"}}))
    with pytest.raises(openai.BadRequestError) as info:
        _client(proxy).chat.completions.create(**ASK)
    assert info.value.body["param"] == "model"
    assert len(proxy.upstream.bodies) == 1


def test_slow_upstream_times_out_with_504(serve: Any) -> None:
    proxy = serve(Scene(body=OK, delay=30), timeout=0.3, retries=0)
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as info:
        _client(proxy).chat.completions.create(**ASK)
    assert info.value.status_code == 504
    assert time.monotonic() - started < 20  # ended by the proxy's timeout, not the client's


def test_dropped_connection_is_502(serve: Any) -> None:
    proxy = serve(Scene(drop=True), retries=1, **FAST)
    with pytest.raises(openai.APIStatusError) as info:
        _client(proxy).chat.completions.create(**ASK)
    assert info.value.status_code == 502
    assert info.value.body["type"] == "upstream_connection"
    assert len(proxy.upstream.bodies) == 2


def test_broken_json_is_502(serve: Any) -> None:
    proxy = serve(Scene(body=b'{"choices": [{"message": '))
    with pytest.raises(openai.APIStatusError) as info:
        _client(proxy).chat.completions.create(**ASK)
    assert info.value.status_code == 502
    assert info.value.body["type"] == "upstream_invalid_json"


def _deltas() -> list[dict[str, Any]]:
    return [{"content": "Working"}, {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                     "function": {"name": "f", "arguments": '{"a": '}}]}]  # fmt: skip


@pytest.mark.parametrize(
    ("scene", "kind"),
    [
        (
            Scene(chunks=stream_of(_deltas(), None, None), done=False),
            "upstream_incomplete",
        ),  # stops mid-stream
        (Scene(chunks=stream_of(_deltas(), None, None), drop=True), "upstream_connection"),
        (Scene(chunks=[*stream_of(_deltas(), None, None), b"{not json"]), "upstream_invalid_json"),
        (Scene(chunks=[*stream_of(_deltas(), None, None), None]), "upstream_timeout"),  # goes silent
    ],
    ids=["stop", "drop", "broken_json", "silent"],
)
def test_mid_stream_failures_end_with_an_in_band_error(serve: Any, scene: Scene, kind: str) -> None:
    proxy = serve(scene, read_timeout=0.5, timeout=30)
    stream = _client(proxy).chat.completions.create(**ASK, stream=True)
    seen: list[Any] = []
    with pytest.raises(openai.APIError) as info:
        seen.extend(stream)
    assert kind in str(info.value.body) or kind in str(info.value)
    # Content went out at once; the partial tool call never did.
    assert [c.choices[0].delta.content for c in seen if c.choices and c.choices[0].delta.content] == [
        "Working"
    ]
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in seen)


async def test_client_disconnect_cancels_the_upstream(serve: Any) -> None:
    slow = Scene(chunks=stream_of([{"content": "a"}] * 200, "stop"), chunk_delay=0.05)
    proxy = serve(slow)
    async with aiohttp.ClientSession() as session:
        resp = await session.post(proxy.url + "/chat/completions", json={**ASK, "stream": True})
        await resp.content.readline()
        resp.close()  # the client goes away mid-answer
    for _ in range(100):
        if proxy.upstream.cancelled:
            break
        await asyncio.sleep(0.05)
    assert proxy.upstream.cancelled == 1 and proxy.upstream.finished == 0
    for _ in range(100):
        if proxy.metrics.value("toolmend_client_disconnects_total"):
            break
        await asyncio.sleep(0.05)
    assert proxy.metrics.value("toolmend_client_disconnects_total") == 1


async def test_client_disconnect_cancels_a_non_streamed_upstream(serve: Any) -> None:
    proxy = serve(Scene(body=OK, delay=30))
    body = json.dumps(ASK).encode()
    with socket.create_connection(("127.0.0.1", proxy.thread.port)) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)  # fmt: skip
        for _ in range(100):
            if proxy.upstream.bodies:
                break
            await asyncio.sleep(0.05)
    # The socket is closed while the upstream is still thinking.
    for _ in range(100):
        if proxy.upstream.cancelled:
            break
        await asyncio.sleep(0.05)
    assert proxy.upstream.cancelled == 1


def test_every_request_is_counted(serve: Any) -> None:
    proxy = serve(Scene(status=500, body={"error": {"message": "x"}}), Scene(body=OK), retries=0)
    client = _client(proxy)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(**ASK)
    client.chat.completions.create(**ASK)
    assert proxy.counted(2) == 2
    m = proxy.metrics
    assert m.value("toolmend_requests_total", stream="false", outcome="accepted") == 1
    assert m.value("toolmend_upstream_errors_total", status="500") == 1


async def test_a_mix_of_faults_every_request_ends_and_is_counted(serve: Any) -> None:
    import random

    rng = random.Random(7)
    ok_stream = stream_of([{"tool_calls": [{"index": 0, **call("f", '{"a": 1}', "c1")}]}], "tool_calls")
    scenes = {
        "ok": Scene(body=OK),
        "ok_stream": Scene(chunks=ok_stream),
        "slow": Scene(body=OK, delay=5),
        "drop": Scene(drop=True),
        "429": Scene(status=429, body={"error": {"message": "later"}}, headers={"Retry-After": "0"}),
        "500": Scene(status=500, body={"error": {"message": "oops"}}),
        "503": Scene(status=503, body={"error": {"message": "busy"}}),
        "broken": Scene(body=b"{half"),
        "stop": Scene(chunks=stream_of(_deltas(), None, None), done=False),
        "silent": Scene(chunks=[*stream_of(_deltas(), None, None), None]),
    }
    picks: list[str] = []

    def handler(body: dict[str, Any]) -> Scene:
        name = rng.choice(list(scenes))
        picks.append(name)
        return scenes[name]

    proxy = serve(handler=handler, timeout=0.5, read_timeout=0.3, retries=1, max_retry_wait=0.01)
    ended: list[str] = []

    async def one(i: int) -> None:
        body = {**ASK, "stream": i % 2 == 0}
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
            session.post(proxy.url + "/chat/completions", json=body) as resp,
        ):
            text = await resp.text()
        if resp.status != 200:
            ended.append(f"http_{resp.status}")
        elif body["stream"]:
            ended.append("in_band_error" if '"error"' in text else "ok")
            assert text.rstrip().endswith("[DONE]") or '"error"' in text
        else:
            ended.append("ok")

    await asyncio.gather(*(one(i) for i in range(40)))
    assert len(ended) == 40  # every request ended (the client's own limit was never needed)
    assert proxy.counted(40) == 40
    assert set(ended) <= {"ok", "in_band_error", "http_429", "http_500", "http_502", "http_503", "http_504"}
    assert "ok" in ended and len(set(ended)) >= 4
