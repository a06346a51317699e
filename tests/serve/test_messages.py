"""``POST /v1/messages`` through ``toolmend serve`` with the real ``anthropic`` SDK (sync and
async, ``create`` and ``stream``) against a scripted Messages upstream on 127.0.0.1: clean bytes
untouched, repair, re-ask to the same endpoint, streams bracketed strictly, ``tool_choice``
enforced, faults and bad requests in Anthropic's error shape, metrics and traces."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from messages_upstream import MessagesUpstream, events, message, text, tool_use
from scripted_upstream import AppThread, Scene

from toolmend.serve import ServeConfig, create_app

anthropic = pytest.importorskip("anthropic")


WEATHER = {"name": "get_weather", "description": "Weather for a city.", "input_schema": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}  # fmt: skip
TIME = {"name": "get_time", "description": "Time in a city.", "input_schema": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}  # fmt: skip
ASK: dict[str, Any] = {"model": "claude-x", "max_tokens": 256, "tools": [WEATHER, TIME],
                       "messages": [{"role": "user", "content": "Weather in Oslo for 3 days?"}]}  # fmt: skip
BAD = tool_use("get_weather", {"city": "Oslo", "days": "3"}, "toolu_bad")  # "3" for an integer: repaired
MISSING = tool_use("get_weather", {"days": 3}, "toolu_missing")  # no city: only the model can say
GOOD = tool_use("get_weather", {"city": "Oslo", "days": 3}, "toolu_good")


class Served:
    """A scripted Messages upstream and ``toolmend serve`` in front of it."""

    def __init__(self, *scenes: Scene, **config: Any) -> None:
        self.upstream = MessagesUpstream(*scenes).start()
        self.app = create_app(ServeConfig(upstream=self.upstream.base_url, **config))
        self.thread = AppThread(self.app).start()
        self.url = self.thread.url  # an Anthropic client's base_url has no /v1

    @property
    def metrics(self) -> Any:
        from toolmend.serve._app import PROXY

        return self.app[PROXY].metrics

    def client(self, **kw: Any) -> Any:
        return anthropic.Anthropic(
            base_url=self.url, api_key=kw.pop("api_key", "sk-client"), max_retries=0, **kw
        )

    def stop(self) -> None:
        self.thread.stop()
        self.upstream.stop()


@pytest.fixture
def serve_messages() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def make(*scenes: Scene, **config: Any) -> Served:
        started.append(Served(*scenes, **config))
        return started[-1]

    yield make
    for s in started:
        s.stop()


def _sse(raw: bytes) -> list[tuple[str | None, bytes]]:
    """(event name, data bytes) of each event of an SSE body; comments are skipped."""
    out = []
    for block in raw.split(b"\n\n"):
        name, data = None, None
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:].decode()
            elif line.startswith(b"data: "):
                data = line[6:]
        if data is not None:
            out.append((name, data))
    return out


def _post(
    url: str, body: Any, headers: dict[str, str] | None = None, path: str = "/v1/messages"
) -> tuple[int, dict[str, str], bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method="POST",
                                 headers={"Content-Type": "application/json", "anthropic-version": "2023-06-01",
                                          **(headers or {})})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _check_brackets(evs: list[dict[str, Any]]) -> None:
    """Blocks bracketed strictly (start, deltas of that block, stop; indexes 0, 1, ... in order),
    one message_delta right before message_stop, message_start first."""
    assert evs[0]["type"] == "message_start"
    kinds = [e["type"] for e in evs if e["type"] != "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"] and kinds.count("message_delta") == 1
    open_index, next_index = None, 0
    for e in evs:
        if e["type"] == "content_block_start":
            assert open_index is None and e["index"] == next_index
            open_index, next_index = e["index"], next_index + 1
        elif e["type"] == "content_block_delta":
            assert e["index"] == open_index
        elif e["type"] == "content_block_stop":
            assert e["index"] == open_index
            open_index = None
        elif e["type"] in ("message_delta", "message_stop"):
            assert open_index is None


def _tool_inputs(evs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(id, name, joined partial_json) of each tool_use block in a stream."""
    out: dict[int, list[str]] = {}
    heads: dict[int, tuple[str, str]] = {}
    for e in evs:
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use":
            heads[e["index"]] = (e["content_block"]["id"], e["content_block"]["name"])
            out[e["index"]] = []
        elif e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
            out[e["index"]].append(e["delta"]["partial_json"])
    return [(*heads[i], "".join(parts)) for i, parts in sorted(out.items())]


# -- non-streamed -------------------------------------------------------------------------------


def test_clean_answer_is_the_upstreams_bytes(serve_messages: Any) -> None:
    raw = json.dumps(message(text("Checking."), GOOD), indent=1).encode()  # odd layout survives
    s = serve_messages(Scene(body=raw))
    resp = s.client().messages.with_raw_response.create(**ASK)
    assert resp.http_response.content == raw
    assert resp.headers["x-toolmend-outcome"] == "accepted"
    got = resp.parse()
    assert got.stop_reason == "tool_use" and got.content[1].input == {"city": "Oslo", "days": 3}
    # Forwarded non-streamed, to {upstream}/messages, with anthropic-version and the client's key.
    assert "stream" not in s.upstream.bodies[0]
    assert s.upstream.headers[0]["anthropic-version"] == resp.http_request.headers["anthropic-version"]
    assert s.upstream.headers[0]["authorization"] == "Bearer sk-client"  # how this SDK sends its key


def test_repair_keeps_the_call_and_its_id(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(text("Sure."), BAD)))
    resp = s.client().messages.with_raw_response.create(**ASK)
    got = resp.parse()
    assert [b.type for b in got.content] == ["text", "tool_use"]
    assert got.content[0].text == "Sure."
    assert (got.content[1].id, got.content[1].input) == ("toolu_bad", {"city": "Oslo", "days": 3})
    assert got.stop_reason == "tool_use"
    assert (resp.headers["x-toolmend-outcome"], resp.headers["x-toolmend-repairs"]) == ("repaired", "1")
    assert len(s.upstream.bodies) == 1


def test_reask_goes_to_messages_with_an_error_tool_result(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(MISSING, usage=(10, 5))), Scene(body=message(GOOD, usage=(30, 7))))
    resp = s.client().messages.with_raw_response.create(**ASK)
    got = resp.parse()
    assert [(b.id, b.input) for b in got.content] == [("toolu_good", {"city": "Oslo", "days": 3})]
    assert resp.headers["x-toolmend-outcome"] == "recovered" and resp.headers["x-toolmend-reasks"] == "1"
    assert (got.usage.input_tokens, got.usage.output_tokens) == (40, 12)
    reask = s.upstream.bodies[1]
    assert reask["stream"] is False and reask["model"] == "claude-x" and reask["tools"] == ASK["tools"]
    assistant, user = reask["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_missing", "name": "get_weather", "input": {"days": 3}}],
    }
    result = user["content"][0]
    assert user["role"] == "user" and result["type"] == "tool_result" and result["is_error"] is True
    assert result["tool_use_id"] == "toolu_missing"
    assert "get_weather" in result["content"] and "city" in result["content"]
    assert s.upstream.headers[1]["anthropic-version"] == resp.http_request.headers["anthropic-version"]


def test_give_up_is_an_anthropic_error(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(MISSING)))
    with pytest.raises(anthropic.UnprocessableEntityError) as info:
        s.client().messages.create(**ASK)
    err = info.value.body
    assert err["type"] == "error" and err["error"]["code"] == "tool_call_guard_gave_up"
    assert "missing_required" in err["error"]["findings"]
    assert len(s.upstream.bodies) == 3  # the answer and two re-asks (the default budget)


# -- streams --------------------------------------------------------------------------------------


def test_clean_stream_events_are_the_upstreams(serve_messages: Any) -> None:
    s = serve_messages(Scene(chunks=events(text("Let me check."), GOOD, pieces=4)))
    client = s.client()
    with client.messages.with_streaming_response.create(**ASK, stream=True) as resp:
        raw = resp.read()
    up = _sse(s.upstream.sent[0])
    got = _sse(raw)
    assert got == up  # every event's data, byte for byte, in the same order
    evs = [json.loads(d) for _, d in got]
    _check_brackets(evs)
    assert _tool_inputs(evs) == [("toolu_good", "get_weather", '{"city": "Oslo", "days": 3}')]
    with client.messages.stream(**ASK) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[1].input == {"city": "Oslo", "days": 3}


def test_streamed_repair_assembles_to_the_repaired_input(serve_messages: Any) -> None:
    s = serve_messages(Scene(chunks=events(text("Sure."), BAD, GOOD | {"id": "toolu_2", "name": "get_time",
                                                                      "input": {"city": "Oslo"}})))  # fmt: skip
    with s.client().messages.stream(**ASK) as stream:
        evs = [e.model_dump() for e in stream if e.type in _RAW]
        final = stream.get_final_message()
    _check_brackets(evs)
    inputs = _tool_inputs(evs)
    assert [(i, n, json.loads(a)) for i, n, a in inputs] == [
        ("toolu_bad", "get_weather", {"city": "Oslo", "days": 3}),
        ("toolu_2", "get_time", {"city": "Oslo"}),
    ]

    # The untouched call goes out in the fragments it came in (its block moved, not its bytes).
    def pieces(index: int, stream: list[dict[str, Any]]) -> list[str]:
        return [e["delta"]["partial_json"] for e in stream
                if e["type"] == "content_block_delta" and e["index"] == index and "partial_json" in e["delta"]]  # fmt: skip

    upstream = [json.loads(d) for _, d in _sse(s.upstream.sent[0])]
    assert pieces(2, evs) == pieces(2, upstream) and len(pieces(2, upstream)) == 3
    assert '"3"' not in json.dumps(evs)  # the rejected input appears in no event
    assert final.stop_reason == "tool_use" and final.content[0].text == "Sure."
    assert [b.input for b in final.content[1:]] == [{"city": "Oslo", "days": 3}, {"city": "Oslo"}]


def test_streamed_reask_shows_only_the_recovered_call(serve_messages: Any) -> None:
    s = serve_messages(
        Scene(chunks=events(text("On it."), MISSING)), Scene(body=message(GOOD, usage=(30, 7)))
    )
    with s.client().messages.stream(**ASK) as stream:
        evs = [e.model_dump() for e in stream if e.type in _RAW]
        final = stream.get_final_message()
    _check_brackets(evs)
    assert "toolu_missing" not in json.dumps(evs)
    assert [(i, json.loads(a)) for i, _, a in _tool_inputs(evs)] == [
        ("toolu_good", {"city": "Oslo", "days": 3})
    ]
    assert final.content[0].text == "On it." and final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (40, 12)
    assert evs[-2]["toolmend"]["outcome"] == "recovered"
    assert s.upstream.bodies[1]["stream"] is False


def test_streamed_give_up_is_an_error_event(serve_messages: Any) -> None:
    s = serve_messages(Scene(chunks=events(MISSING)), Scene(body=message(MISSING)))
    seen: list[Any] = []
    with pytest.raises(anthropic.APIStatusError) as info, s.client().messages.stream(**ASK) as stream:
        seen.extend(stream)
    assert "tool_call_guard_gave_up" in str(info.value.body)
    assert not any(getattr(e, "type", "") == "content_block_start" for e in seen)


def test_a_call_printed_as_text_becomes_a_tool_use(serve_messages: Any) -> None:
    printed = text('<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}</tool_call>')
    s = serve_messages(
        Scene(chunks=events(printed, stop="end_turn")), Scene(body=message(printed, stop="end_turn"))
    )
    with s.client().messages.stream(**ASK) as stream:
        evs = [e.model_dump() for e in stream if e.type in _RAW]
    _check_brackets(evs)
    assert "<tool_call>" not in json.dumps(evs)
    assert [(n, json.loads(a)) for _, n, a in _tool_inputs(evs)] == [
        ("get_weather", {"city": "Oslo", "days": 3})
    ]
    assert evs[-2]["delta"]["stop_reason"] == "tool_use"
    got = s.client().messages.create(**ASK)
    assert [b.type for b in got.content] == ["tool_use"] and got.stop_reason == "tool_use"


_RAW = {"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop"}  # fmt: skip


async def test_async_client_create_and_stream(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(MISSING)), Scene(body=message(GOOD)), Scene(chunks=events(BAD)))
    client = anthropic.AsyncAnthropic(base_url=s.url, api_key="k", max_retries=0)
    got = await client.messages.create(**ASK)
    assert got.content[0].input == {"city": "Oslo", "days": 3} and got.content[0].id == "toolu_good"
    async with client.messages.stream(**ASK) as stream:
        final = await stream.get_final_message()
    assert final.content[0].input == {"city": "Oslo", "days": 3} and final.content[0].id == "toolu_bad"
    await client.close()


# -- tool_choice ----------------------------------------------------------------------------------


def test_tool_choice_none_drops_calls(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(text("Oslo: sunny."), GOOD)))
    got = s.client().messages.create(**ASK, tool_choice={"type": "none"})
    assert [b.type for b in got.content] == ["text"] and got.stop_reason == "end_turn"
    assert s.upstream.bodies[0]["tool_choice"] == {"type": "none"}  # the client's request, as it was


def test_tool_choice_any_reasks_a_text_answer(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(text("It is sunny."))), Scene(body=message(GOOD)))
    got = s.client().messages.create(**ASK, tool_choice={"type": "any"})
    assert [b.type for b in got.content] == ["text", "tool_use"] and got.stop_reason == "tool_use"
    assert len(s.upstream.bodies) == 2


def test_tool_choice_tool_and_disable_parallel(serve_messages: Any) -> None:
    other = tool_use("get_time", {"city": "Oslo"}, "toolu_t")
    s = serve_messages(Scene(body=message(other)), Scene(body=message(GOOD, other)))
    got = s.client().messages.create(
        **ASK, tool_choice={"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}
    )
    assert [(b.name, b.input) for b in got.content] == [("get_weather", {"city": "Oslo", "days": 3})]
    result = s.upstream.bodies[1]["messages"][-1]["content"][0]
    assert result["is_error"] is True and "get_time" in result["content"]


# -- faults and bad requests ------------------------------------------------------------------------


def test_overloaded_529_stays_529(serve_messages: Any) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    s = serve_messages(Scene(body=overloaded, status=529), max_retry_wait=0.05)
    with pytest.raises(anthropic.OverloadedError) as info:
        s.client().messages.create(**ASK)
    assert info.value.status_code == 529
    assert info.value.body["type"] == "error" and info.value.body["error"]["type"] == "overloaded_error"
    assert "Overloaded" in info.value.body["error"]["message"]
    with pytest.raises(anthropic.OverloadedError):
        s.client().messages.create(**ASK, stream=True)


def test_upstream_5xx_is_5xx_in_anthropic_shape(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=b"boom", status=503), retries=0)
    status, _, raw = _post(s.url, ASK)
    body = json.loads(raw)
    assert status == 503 and body["type"] == "error" and body["error"]["type"] == "api_error"
    with pytest.raises(anthropic.InternalServerError):
        s.client().messages.create(**ASK)


def test_mid_stream_error_and_cut_stream_end_with_an_error_event(serve_messages: Any) -> None:
    failing = [
        *events(GOOD)[:3],
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    s = serve_messages(Scene(chunks=failing), Scene(chunks=events(GOOD, end=False)))
    for _ in range(2):
        with pytest.raises(anthropic.APIStatusError), s.client().messages.stream(**ASK) as stream:
            list(stream)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({k: v for k, v in ASK.items() if k != "model"}, "model"),
        ({**ASK, "messages": []}, "messages"),
        (
            {
                **ASK,
                "tools": [
                    {"name": "f", "input_schema": {"type": "object", "properties": {"a": {"type": 5}}}}
                ],
            },
            "tools.0.input_schema",
        ),
        ({**ASK, "tool_choice": {"type": "tool", "name": "nope"}}, "tool_choice.name"),
        ({**ASK, "tool_choice": {"type": "required"}}, "tool_choice"),
    ],
)
def test_bad_request_is_400_and_nothing_goes_upstream(
    serve_messages: Any, body: dict[str, Any], param: str
) -> None:
    s = serve_messages(Scene(body=message(GOOD)))
    status, _, raw = _post(s.url, body)
    err = json.loads(raw)
    assert status == 400 and err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    assert param in err["error"]["message"]
    assert s.upstream.bodies == []
    assert s.metrics.value("toolmend_bad_requests_total", status="400") == 1


def test_not_json_is_400(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(GOOD)))
    status, _, raw = _post(s.url, b"{nope")
    assert status == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"


def test_odd_usage_is_data_not_a_failure(serve_messages: Any) -> None:
    odd = {**message(BAD), "usage": {"input_tokens": "lots", "output_tokens": None}}
    s = serve_messages(Scene(body=odd), Scene(body=odd))
    status, headers, raw = _post(s.url, ASK)
    assert status == 200 and headers["x-toolmend-outcome"] == "repaired"
    assert json.loads(raw)["content"][0]["input"] == {"city": "Oslo", "days": 3}
    status, _, raw = _post(s.url, {**ASK, "stream": True})  # a stream asked for, one JSON answer given
    evs = [json.loads(d) for _, d in _sse(raw)]
    _check_brackets(evs)
    assert [json.loads(a) for _, _, a in _tool_inputs(evs)] == [{"city": "Oslo", "days": 3}]


def test_malformed_upstream_answer_is_502(serve_messages: Any) -> None:
    s = serve_messages(Scene(body={"type": "message", "content": [{"type": "tool_use", "name": 5}]}))
    status, _, raw = _post(s.url, ASK)
    err = json.loads(raw)["error"]
    assert status == 502 and err["type"] == "api_error" and "content[0].name" in err["message"]


# -- keys, metrics, traces ------------------------------------------------------------------------------


def test_proxy_key_as_x_api_key_and_upstream_key(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(GOOD)), api_key="proxy-key", upstream_api_key="upstream-key")
    got = s.client(api_key="proxy-key").messages.create(**ASK)
    assert got.content[0].id == "toolu_good"
    sent = {k.lower(): v for k, v in s.upstream.headers[0].items()}
    assert (sent["x-api-key"], sent["authorization"]) == ("upstream-key", "Bearer upstream-key")
    with pytest.raises(anthropic.AuthenticationError) as info:
        s.client(api_key="wrong").messages.create(**ASK)
    assert info.value.body["error"]["type"] == "authentication_error"
    assert len(s.upstream.bodies) == 1
    # Clients that send the key as x-api-key (Claude Code, older SDKs) are let in too.
    status, _, _ = _post(s.url, ASK, {"x-api-key": "proxy-key"})
    assert status == 200 and "proxy-key" not in json.dumps(s.upstream.headers[1])
    assert _post(s.url, ASK, {"x-api-key": "wrong"})[0] == 401


def test_metrics_and_traces(serve_messages: Any, tmp_path: Path) -> None:
    s = serve_messages(Scene(body=message(BAD)), Scene(chunks=events(GOOD)), traces=tmp_path)
    client = s.client()
    client.messages.create(**ASK)
    with client.messages.stream(**ASK) as stream:
        stream.get_final_message()
    lines = []
    for _ in range(500):
        lines = (
            (tmp_path / "traces.jsonl").read_text().splitlines()
            if (tmp_path / "traces.jsonl").exists()
            else []
        )
        if len(lines) == 2:
            break
        import time

        time.sleep(0.01)
    first, second = (json.loads(x) for x in lines)
    assert (first["outcome"], second["outcome"]) == ("repaired", "accepted")
    assert first["request"]["protocol"] == "messages" and first["request"]["messages"][0]["role"] == "user"
    assert json.loads(first["final"]["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo", "days": 3}
    assert first["examples"][1] == {"label": "undesirable", "message": first["original"]}
    assert s.metrics.value("toolmend_requests_total", stream="false", outcome="repaired") == 1
    assert s.metrics.value("toolmend_requests_total", stream="true", outcome="accepted") == 1
    assert s.metrics.value("toolmend_repairs_total") == 1


# -- thinking, held text, modes ---------------------------------------------------------------------


THINK = {"type": "thinking", "thinking": "The user wants Oslo.", "signature": "sig-1"}


def _thinking_events(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    """events() of ``blocks`` with a thinking block (thinking and signature deltas) first."""
    out = events(*blocks)
    start = out[:2]
    rest = [{**e, "index": e["index"] + 1} if "index" in e else e for e in out[2:]]
    think = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": THINK["thinking"]},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig-1"},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    return [*start, *think, *rest]


def test_thinking_passes_and_goes_back_with_the_reask(serve_messages: Any) -> None:
    s = serve_messages(Scene(chunks=_thinking_events(MISSING)), Scene(body=message(GOOD)))
    with s.client().messages.stream(**ASK) as stream:
        evs = [e.model_dump() for e in stream if e.type in _RAW]
        final = stream.get_final_message()
    _check_brackets(evs)
    assert [b.type for b in final.content] == ["thinking", "tool_use"]
    assert final.content[0].signature == "sig-1" and final.content[1].id == "toolu_good"
    # The API asks for the thinking blocks at the head of the assistant turn that holds the calls.
    assistant = s.upstream.bodies[1]["messages"][-2]
    assert assistant["content"][0] == THINK and assistant["content"][1]["id"] == "toolu_missing"


def test_text_held_as_a_possible_call_is_sent_whole(serve_messages: Any) -> None:
    answer = text('{"answer": "Oslo is sunny"} is what I found.')
    s = serve_messages(Scene(chunks=events(answer, stop="end_turn")))
    with s.client().messages.stream(**ASK) as stream:
        evs = [e.model_dump() for e in stream if e.type in _RAW]
        final = stream.get_final_message()
    _check_brackets(evs)
    assert final.content[0].text == answer["text"] and final.stop_reason == "end_turn"


def test_upstream_that_ignores_stream_is_read_as_a_stream(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(text("Sure."), BAD)))
    with s.client().messages.stream(**ASK) as stream:
        evs = [e.model_dump() for e in stream if e.type in _RAW]
        final = stream.get_final_message()
    _check_brackets(evs)
    assert final.content[0].text == "Sure." and final.content[1].input == {"city": "Oslo", "days": 3}


def test_shadow_changes_nothing_and_strict_refuses(serve_messages: Any) -> None:
    raw = json.dumps(message(BAD)).encode()
    s = serve_messages(Scene(body=raw), shadow=True)
    resp = s.client().messages.with_raw_response.create(**ASK)
    assert resp.http_response.content == raw
    assert (resp.headers["x-toolmend-outcome"], resp.headers["x-toolmend-shadow"]) == (
        "passthrough",
        "repaired",
    )
    s = serve_messages(Scene(body=raw), strict=True)
    with pytest.raises(anthropic.UnprocessableEntityError) as info:
        s.client().messages.create(**ASK)
    assert (
        info.value.body["error"]["code"] == "invalid_tool_call"
        and "invalid_type" in info.value.body["error"]["findings"]
    )


def test_no_tools_is_a_pass_through(serve_messages: Any) -> None:
    up = message(text("Hello."))
    s = serve_messages(Scene(body=up), Scene(chunks=events(text("Hello."))))
    ask = {k: v for k, v in ASK.items() if k != "tools"}
    resp = s.client().messages.with_raw_response.create(**ask)
    assert (
        json.loads(resp.http_response.content) == up and resp.headers["x-toolmend-outcome"] == "passthrough"
    )
    with s.client().messages.with_streaming_response.create(**ask, stream=True) as r:
        assert _sse(r.read()) == _sse(s.upstream.sent[1])


def test_count_tokens_passes_through(serve_messages: Any) -> None:
    s = serve_messages(Scene(body=message(GOOD)), api_key="proxy-key", upstream_api_key="upstream-key")
    body = {k: v for k, v in ASK.items() if k != "max_tokens"}
    got = s.client(api_key="proxy-key").messages.count_tokens(**body)
    assert got.input_tokens > 100 and s.upstream.headers[0]["x-api-key"] == "upstream-key"
    status, _, raw = _post(s.url, {"messages": []}, {"x-api-key": "proxy-key"}, "/v1/messages/count_tokens")
    assert status == 400 and "model" in json.loads(raw)["error"]["message"]
    assert _post(s.url, body, {"x-api-key": "wrong"}, "/v1/messages/count_tokens")[0] == 401
    assert len(s.upstream.headers) == 1


async def test_client_disconnect_cancels_the_upstream_stream(serve_messages: Any) -> None:
    import asyncio

    import aiohttp

    slow = Scene(chunks=events(text("a" * 400), GOOD, pieces=200), chunk_delay=0.05)
    s = serve_messages(slow)
    async with aiohttp.ClientSession() as session:
        resp = await session.post(s.url + "/v1/messages", json={**ASK, "stream": True})
        await resp.content.readline()
        resp.close()  # the client goes away mid-answer
    for _ in range(100):
        if s.upstream.cancelled and s.metrics.value("toolmend_client_disconnects_total"):
            break
        await asyncio.sleep(0.05)
    assert s.upstream.cancelled == 1 and s.upstream.sent == []
    assert s.metrics.value("toolmend_client_disconnects_total") == 1


def test_a_call_that_keeps_failing_is_re_asked_with_a_loop_message(serve_messages: Any) -> None:
    """/v1/messages counts a conversation's failures like chat: the same call failing three times
    in a row is not sent a fourth time; the model is told to stop."""
    history: list[dict[str, Any]] = [ASK["messages"][0]]
    for i in range(3):
        history.append(
            {"role": "assistant", "content": [tool_use("get_weather", {"city": "Oslo", "days": 3}, f"h{i}")]}
        )
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"h{i}", "is_error": True, "content": "Error: service timed out"}]})  # fmt: skip
    s = serve_messages(Scene(body=message(GOOD)), Scene(body=message(text("The weather service is down."))))
    got = s.client().messages.create(**{**ASK, "messages": history})
    assert [b.type for b in got.content] == ["text"]
    told = s.upstream.bodies[1]["messages"][-1]["content"]
    assert any(b.get("is_error") and "failed 3 times in a row" in str(b.get("content")) for b in told)
