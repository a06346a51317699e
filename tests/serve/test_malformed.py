"""Every malformed shape gets a shaped answer: an upstream answer of the wrong shape is a 502 with
an OpenAI-shaped error (a stream: an error event, then ``data: [DONE]``); input nested too deep
is a 400; a non-ASCII ``Authorization`` is a 401; nothing is a bare 500."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from scripted_upstream import Scene, call, completion, stream_of

openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "a": {"type": "integer"}}, "required": ["a"]}}}]  # fmt: skip
ASK = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": TOOLS}
PLAIN = {"model": "m", "messages": [{"role": "user", "content": "go"}]}


def _with(choices: Any = None, **extra: Any) -> dict[str, Any]:
    body = completion("x")
    if choices is not None:
        body["choices"] = choices
    body.update(extra)
    return body


def _choice(**message: Any) -> list[Any]:
    return [{"index": 0, "message": message, "finish_reason": "stop"}]


BAD_BODIES = {
    "tool_calls_of_strings": _with(_choice(role="assistant", content=None, tool_calls=["abc"])),
    "tool_calls_not_a_list": _with(_choice(role="assistant", content=None, tool_calls="abc")),
    "function_not_an_object": _with(_choice(role="assistant", tool_calls=[{"id": "1", "function": "f"}])),
    "message_a_string": _with([{"index": 0, "message": "hi", "finish_reason": "stop"}]),
    "choices_of_numbers": _with([1]),
    "choices_empty": _with([]),
    "choices_an_object": _with({"0": {}}),
    "body_a_list": [1, 2],
    "content_an_object": _with(_choice(role="assistant", content={"text": "hi"})),
    "not_json": b"{not json",
}


def _error_shape(body: Any) -> dict[str, Any]:
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert {"message", "type", "code"} <= set(error)
    assert "Traceback" not in error["message"]
    return dict(error)


async def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    async with aiohttp.ClientSession() as s, s.post(url, data=body, headers={
            "Content-Type": "application/json", **(headers or {})}) as r:  # fmt: skip
        return r.status, r.headers.get("Content-Type", ""), await r.read()


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
@pytest.mark.parametrize("request_body", [ASK, PLAIN], ids=["guarded", "passthrough"])
def test_malformed_upstream_answer_is_a_shaped_502(serve: Any, name: str, request_body: Any) -> None:
    proxy = serve(Scene(body=BAD_BODIES[name]))
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(**request_body)
    assert info.value.status_code == 502
    error = _error_shape({"error": info.value.body})
    assert error["type"].startswith("upstream_invalid")


def _stream_text(url: str, body: dict[str, Any]) -> str:
    status, mime, raw = asyncio.run(
        _post(url + "/chat/completions", json.dumps({**body, "stream": True}).encode())
    )
    assert status == 200 and mime == "text/event-stream"
    return raw.decode()


def _events(text: str) -> list[str]:
    return [e[len("data: ") :] for e in text.split("\n\n") if e.startswith("data: ")]


BAD_STREAMS = {
    "delta_a_string": [{"id": "c", "choices": [{"index": 0, "delta": "hi", "finish_reason": None}]}],
    "tool_calls_of_strings": [{"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": ["abc"]}}]}],
    "tool_calls_not_a_list": [{"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": 7}}]}],
    "function_not_an_object": [
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}
    ],
    "choices_of_numbers": [{"id": "c", "choices": [1]}],
    "choices_an_object": [{"id": "c", "choices": {"a": 1}}],
    "event_a_list": [[1, 2]],
    "event_not_json": [b"{not json"],
    "content_an_object": [{"id": "c", "choices": [{"index": 0, "delta": {"content": {"a": 1}}}]}],
    "error_event": [{"error": {"message": "model fell over", "type": "server_error"}}],
    "error_a_string": [{"error": "boom"}],
}


@pytest.mark.parametrize("name", sorted(BAD_STREAMS))
@pytest.mark.parametrize("request_body", [ASK, PLAIN], ids=["guarded", "passthrough"])
def test_malformed_stream_ends_with_an_error_event_and_done(serve: Any, name: str, request_body: Any) -> None:
    good = stream_of([{"content": "a"}], finish=None, usage=None)
    proxy = serve(Scene(chunks=[*good, *BAD_STREAMS[name]]))
    events = _events(_stream_text(proxy.url, request_body))
    assert events[-1] == "[DONE]", events
    _error_shape(json.loads(events[-2]))


@pytest.mark.parametrize("request_body", [ASK, PLAIN], ids=["guarded", "passthrough"])
def test_cut_stream_ends_with_an_error_event_and_done(serve: Any, request_body: Any) -> None:
    proxy = serve(Scene(chunks=stream_of([{"content": "a"}], finish=None, usage=None), done=False))
    events = _events(_stream_text(proxy.url, request_body))
    assert events[-1] == "[DONE]"
    assert _error_shape(json.loads(events[-2]))["type"] == "upstream_incomplete"


def test_malformed_stream_through_the_openai_sdk(serve: Any) -> None:
    proxy = serve(
        Scene(
            chunks=[*stream_of([{"content": "a"}], finish=None, usage=None), BAD_STREAMS["delta_a_string"][0]]
        )
    )
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    with pytest.raises(openai.APIError) as info:
        for _ in client.chat.completions.create(**ASK, stream=True):
            pass
    assert "upstream" in str(info.value)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [1025, 5000, 100_000])
def test_deep_request_body_is_400(serve: Any, depth: int) -> None:
    proxy = serve(Scene(body=completion("x")))
    raw = (
        '{"model": "m", "messages": [{"role": "user", "content": "go"}], "metadata": ' + _nested(depth) + "}"
    ).encode()
    status, _, body = asyncio.run(_post(proxy.url + "/chat/completions", raw))
    assert status == 400
    assert _error_shape(json.loads(body))["code"] == "invalid_json"
    assert proxy.upstream.bodies == []


@pytest.mark.parametrize("depth", [5000, 100_000])
def test_deep_arguments_in_the_conversation_are_forwarded(serve: Any, depth: int) -> None:
    # An earlier call's arguments are a string the proxy does not parse: the request (itself only
    # a few levels deep) goes upstream as it came.
    proxy = serve(Scene(body=completion("x")))
    body = {**ASK, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("f", _nested(depth), "c0")]},
        {"role": "tool", "tool_call_id": "c0", "content": "ok"},
    ]}  # fmt: skip
    status, _, raw = asyncio.run(_post(proxy.url + "/chat/completions", json.dumps(body).encode()))
    assert status == 200, raw[:300]
    assert proxy.upstream.bodies[-1]["messages"] == body["messages"]


@pytest.mark.parametrize("depth", [5000, 100_000])
@pytest.mark.parametrize("stream", [False, True])
def test_deep_arguments_from_the_upstream_are_malformed_calls(serve: Any, depth: int, stream: bool) -> None:
    # Model output nested too deep is a malformed call like any other: re-asked, then (the scripted
    # model repeats itself) the guard's shaped 422, never a crash.
    args = _nested(depth)
    streamed = Scene(
        chunks=stream_of([{"tool_calls": [{"index": 0, **call("f", args, "c1")}]}], finish="tool_calls")
    )
    whole = Scene(body=completion(None, [call("f", args, "c1")]))
    proxy = serve(handler=lambda body: streamed if body.get("stream") else whole)  # re-asks are not streamed
    raw_body = json.dumps({**ASK, "stream": stream}).encode()
    status, _, raw = asyncio.run(_post(proxy.url + "/chat/completions", raw_body))
    if stream:
        assert status == 200
        events = _events(raw.decode())
        assert events[-1] == "[DONE]"
        error = _error_shape(json.loads(events[-2]))
    else:
        assert status == 422, raw[:300]
        error = _error_shape(json.loads(raw))
    assert error["code"] == "tool_call_guard_gave_up"
    assert len(proxy.upstream.bodies) > 1  # re-asked first


def test_unknown_route_and_method_are_shaped(serve: Any) -> None:
    proxy = serve(Scene(body=completion("x")))

    async def go() -> list[tuple[int, bytes]]:
        async with aiohttp.ClientSession() as s:
            out = []
            for method, path in (("GET", "/v1/nothing"), ("GET", "/v1/chat/completions")):
                async with s.request(method, proxy.thread.url + path) as r:
                    out.append((r.status, await r.read()))
            return out

    (s1, b1), (s2, b2) = asyncio.run(go())
    assert s1 == 404 and _error_shape(json.loads(b1))["code"] == 404
    assert s2 == 405 and _error_shape(json.loads(b2))["code"] == 405


def test_too_large_body_is_a_shaped_413(serve: Any) -> None:
    from toolmend.serve._app import PROXY  # noqa: F401 - the limit is the app's

    proxy = serve(Scene(body=completion("x")))
    big = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * (65 * 1024 * 1024) + b'"}]}'
    status, _, raw = asyncio.run(_post(proxy.url + "/chat/completions", big))
    assert status == 413
    _error_shape(json.loads(raw))


@pytest.mark.parametrize("value", [b"Bearer \xc3\xa9t\xc3\xa9", b"Bearer \xff\xfe", "Bearer ключ".encode()])
def test_non_ascii_authorization_is_401(serve: Any, value: bytes) -> None:
    proxy = serve(Scene(body=completion("x")), api_key="proxy-key-1")
    port = proxy.thread.port
    body = json.dumps(PLAIN).encode()

    async def send() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Authorization: " + value + b"\r\nConnection: close\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)  # fmt: skip
        await writer.drain()
        out = await reader.read()
        writer.close()
        return out

    reply = asyncio.run(send())
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401"), head
    assert _error_shape(json.loads(payload))["code"] == "invalid_api_key"
    assert proxy.upstream.bodies == []
