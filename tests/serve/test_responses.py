"""``POST /v1/responses`` through ``toolmend serve``, with the real openai SDK's responses client
against a scripted upstream on 127.0.0.1: clean bytes untouched (streamed deltas too), repair,
re-ask as ``function_call_output`` items to the same endpoint, streams that begin with
``response.created`` and end with ``response.completed`` with ``sequence_number`` increasing and
every view of a call agreeing, enforcement of ``tool_choice`` / ``parallel_tool_calls`` /
``strict``, faults, bad requests, traces and metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from responses_upstream import fcall, message, response, stream_events
from scripted_upstream import Scene

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city.", "strict": False,
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                          "required": ["city"]}}  # fmt: skip
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {
    "zone": {"type": "string"}}, "required": ["zone"]}}  # fmt: skip
ASK: dict[str, Any] = {"model": "m", "input": "Weather in Oslo for 3 days?", "tools": [WEATHER]}

BAD = fcall("get_weather", '{"city": "Oslo", "days": "3"}', "c1")  # a string for an integer: safe repair
MISSING = fcall("get_weather", '{"days": 3}', "c1")  # no city: only the model can say
GOOD = fcall("get_weather", '{"city": "Oslo", "days": 3}', "c2")


def _client(proxy: Any, **kw: Any) -> Any:
    return openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0, **kw)


def _sse(raw: str) -> list[dict[str, Any]]:
    """The data of each event of a raw SSE body (comments left out)."""
    out = []
    for block in raw.split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out


def _agree(events: list[dict[str, Any]]) -> dict[int, str]:
    """Check a stream's shape (what the Interface promises) and return each call's arguments."""
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    seqs = [e["sequence_number"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    final = events[-1]["response"]["output"]
    deltas: dict[int, str] = {}
    done: dict[int, str] = {}
    items: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["type"] == "response.function_call_arguments.delta":
            deltas[e["output_index"]] = deltas.get(e["output_index"], "") + e["delta"]
        elif e["type"] == "response.function_call_arguments.done":
            done[e["output_index"]] = e["arguments"]
        elif e["type"] == "response.output_item.done":
            items[e["output_index"]] = e["item"]
    calls = {i: item["arguments"] for i, item in items.items() if item["type"] == "function_call"}
    assert (
        calls
        == deltas
        == done
        == {i: it["arguments"] for i, it in enumerate(final) if it["type"] == "function_call"}
    )
    assert [items[i] for i in sorted(items)] == final
    return calls


# -- clean answers: the upstream's bytes ------------------------------------------------------


def test_clean_answer_is_byte_identical(serve: Any) -> None:
    raw = '{"city":"Oslo",  "days":3}'  # odd spacing survives: nothing was re-encoded
    up = response(message("Checking."), fcall("get_weather", raw, "c1"))
    proxy = serve(Scene(body=up))
    resp = _client(proxy).responses.with_raw_response.create(**ASK)
    assert resp.text == json.dumps(up)
    assert resp.headers["x-toolmend-outcome"] == "accepted"
    parsed = resp.parse()
    assert parsed.output[1].arguments == raw and parsed.output_text == "Checking."
    assert proxy.upstream.paths == ["/v1/responses"]
    assert "stream" not in proxy.upstream.bodies[0]  # non-streamed stays non-streamed


def test_clean_stream_deltas_are_byte_identical(serve: Any) -> None:
    up = response(message("Checking."), fcall("get_weather", '{"city":"Oslo",  "days":3}', "c1"))
    events = stream_events(up)
    proxy = serve(Scene(chunks=events, done=False))
    with _client(proxy).responses.with_streaming_response.create(**ASK, stream=True) as resp:
        raw = resp.read().decode()
    sent = [json.dumps(e) for e in events]
    got = [block.split("data: ", 1)[1] for block in raw.split("\n\n") if "data: " in block]
    assert got == sent  # every event's bytes, the held call's deltas included
    assert proxy.upstream.bodies[0]["stream"] is True
    assert _agree(_sse(raw)) == {1: '{"city":"Oslo",  "days":3}'}
    assert ": x-toolmend-outcome=accepted" in raw


def test_without_function_tools_the_answer_passes_through(serve: Any) -> None:
    up = response(message("Hello."))
    proxy = serve(Scene(body=up))
    resp = _client(proxy).responses.with_raw_response.create(model="m", input="hi")
    assert resp.text == json.dumps(up) and resp.headers["x-toolmend-outcome"] == "passthrough"


# -- repair and re-ask ----------------------------------------------------------------------------


def test_safe_repair_non_streaming(serve: Any) -> None:
    proxy = serve(Scene(body=response(BAD)))
    resp = _client(proxy).responses.with_raw_response.create(**ASK)
    item = resp.parse().output[0]
    assert json.loads(item.arguments) == {"city": "Oslo", "days": 3}
    assert (item.call_id, item.id, item.name) == ("c1", "fc_c1", "get_weather")
    assert resp.headers["x-toolmend-outcome"] == "repaired"
    assert resp.headers["x-toolmend-findings"] == "invalid_type"
    assert len(proxy.upstream.bodies) == 1


def test_reask_goes_to_responses_with_a_function_call_output(serve: Any) -> None:
    proxy = serve(Scene(body=response(MISSING, usage=(10, 5))), Scene(body=response(GOOD, usage=(30, 7))))
    resp = _client(proxy).responses.with_raw_response.create(**ASK)
    out = resp.parse()
    assert [(i.name, json.loads(i.arguments), i.call_id) for i in out.output] == [
        ("get_weather", {"city": "Oslo", "days": 3}, "c2")
    ]
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.total_tokens) == (40, 12, 52)
    assert resp.headers["x-toolmend-outcome"] == "recovered" and resp.headers["x-toolmend-reasks"] == "1"
    assert proxy.upstream.paths == ["/v1/responses", "/v1/responses"]
    reask = proxy.upstream.bodies[1]
    assert reask["stream"] is False and reask["tools"] == [WEATHER]
    items = reask["input"]
    assert items[0] == {"role": "user", "content": ASK["input"]}
    assert {
        "type": "function_call",
        "call_id": "c1",
        "name": "get_weather",
        "arguments": '{"days": 3}',
    } in items
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and outputs[0]["call_id"] == "c1"
    assert "get_weather" in outputs[0]["output"] and "city" in outputs[0]["output"]


def test_streamed_reask_is_held_and_rendered(serve: Any) -> None:
    first = response(message("Let me check."), MISSING)
    proxy = serve(Scene(chunks=stream_events(first), done=False), Scene(body=response(GOOD)))
    client = _client(proxy)
    with client.responses.with_streaming_response.create(**ASK, stream=True) as resp:
        raw = resp.read().decode()
    events = _sse(raw)
    assert _agree(events) == {1: '{"city": "Oslo", "days": 3}'}
    assert '{\\"days\\": 3}' not in raw  # the rejected call is in no event
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "Let me check."
    assert ": x-toolmend-outcome=recovered" in raw
    # the openai SDK's stream helper assembles the same answer
    proxy2 = serve(Scene(chunks=stream_events(first), done=False), Scene(body=response(GOOD)))
    with _client(proxy2).responses.stream(**ASK) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [json.loads(i.arguments) for i in final.output if i.type == "function_call"] == [
        {"city": "Oslo", "days": 3}
    ]


def test_streamed_repair_keeps_the_item_and_sequence(serve: Any) -> None:
    proxy = serve(Scene(chunks=stream_events(response(BAD)), done=False))
    with _client(proxy).responses.with_streaming_response.create(**ASK, stream=True) as resp:
        raw = resp.read().decode()
    events = _sse(raw)
    assert json.loads(_agree(events)[0]) == {"city": "Oslo", "days": 3}
    done = [e for e in events if e["type"] == "response.output_item.done"]
    assert [(e["item"]["id"], e["item"]["call_id"]) for e in done] == [("fc_c1", "c1")]
    assert sum(e["type"] == "response.output_item.added" for e in events) == 1


async def test_async_client_repair_and_stream(serve: Any) -> None:
    proxy = serve(Scene(body=response(BAD)), Scene(chunks=stream_events(response(BAD)), done=False))
    client = openai.AsyncOpenAI(base_url=proxy.url, api_key="k", max_retries=0)
    out = await client.responses.create(**ASK)
    assert json.loads(out.output[0].arguments) == {"city": "Oslo", "days": 3}
    stream = await client.responses.create(**ASK, stream=True)
    events = [e async for e in stream]
    assert events[-1].type == "response.completed"
    assert json.loads(events[-1].response.output[0].arguments) == {"city": "Oslo", "days": 3}


# -- enforcement ----------------------------------------------------------------------------------


def test_parallel_tool_calls_false_keeps_the_first_call(serve: Any) -> None:
    two = response(fcall("get_weather", {"city": "Oslo"}, "c1"), fcall("get_time", {"zone": "CET"}, "c2"))
    proxy = serve(Scene(body=two))
    out = _client(proxy).responses.create(**{**ASK, "tools": [WEATHER, TIME]}, parallel_tool_calls=False)
    assert [i.call_id for i in out.output] == ["c1"]


def test_tool_choice_none_drops_calls(serve: Any) -> None:
    proxy = serve(Scene(body=response(message("Sunny."), GOOD)))
    out = _client(proxy).responses.create(**ASK, tool_choice="none")
    assert [i.type for i in out.output] == ["message"] and out.output_text == "Sunny."


def test_tool_choice_names_a_function(serve: Any) -> None:
    wrong = response(fcall("get_time", {"zone": "CET"}, "c1"))
    proxy = serve(Scene(body=wrong), Scene(body=response(GOOD)))
    out = _client(proxy).responses.create(
        **{**ASK, "tools": [WEATHER, TIME]}, tool_choice={"type": "function", "name": "get_weather"}
    )
    assert [i.name for i in out.output] == ["get_weather"]
    assert proxy.upstream.bodies[0]["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert len(proxy.upstream.bodies) == 2


def test_tool_choice_required_reasks_an_answer_without_a_call(serve: Any) -> None:
    proxy = serve(Scene(body=response(message("It is sunny."))), Scene(body=response(GOOD)))
    out = _client(proxy).responses.create(**ASK, tool_choice="required")
    assert [i.type for i in out.output] == ["message", "function_call"]
    assert proxy.upstream.paths == ["/v1/responses", "/v1/responses"]


def test_strict_tool_rejects_an_extra_key(serve: Any) -> None:
    strict = {**WEATHER, "strict": True}
    extra = response(fcall("get_weather", {"city": "Oslo", "days": 3, "units": "C"}, "c1"))
    proxy = serve(Scene(body=extra), Scene(body=response(GOOD)))
    out = _client(proxy).responses.create(**{**ASK, "tools": [strict]})
    assert all(set(json.loads(i.arguments)) == {"city", "days"} for i in out.output)


def test_strict_mode_answers_422(serve: Any) -> None:
    proxy = serve(Scene(body=response(BAD)), strict=True)
    with pytest.raises(openai.UnprocessableEntityError) as err:
        _client(proxy).responses.create(**ASK)
    assert err.value.status_code == 422 and "invalid_type" in str(err.value)


def test_give_up_in_a_stream_is_an_error_event(serve: Any) -> None:
    from toolmend.guard import GuardPolicy

    proxy = serve(Scene(chunks=stream_events(response(MISSING)), done=False), Scene(body=response(MISSING)),
                  policy=GuardPolicy(max_reasks_per_turn=1))  # fmt: skip
    with _client(proxy).responses.with_streaming_response.create(**ASK, stream=True) as resp:
        raw = resp.read().decode()
    events = _sse(raw)
    assert events[-1]["type"] == "error" and events[-1]["code"] == "tool_call_guard_gave_up"
    assert not any(e["type"].startswith("response.function_call") for e in events)
    with pytest.raises(openai.APIError):
        list(_client(proxy).responses.create(**ASK, stream=True))


# -- faults and bad requests -------------------------------------------------------------------


def test_missing_model_is_400_and_nothing_goes_upstream(serve: Any) -> None:
    proxy = serve(Scene(body=response(GOOD)))
    with pytest.raises(openai.BadRequestError) as err:
        _client(proxy).responses.create(input="hi", tools=[WEATHER], model=openai.omit)  # type: ignore[call-overload]
    assert err.value.status_code == 400 and "model" in err.value.message
    assert err.value.body["param"] == "model"
    assert proxy.upstream.bodies == []


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "input": 3}, "input"),
        ({"model": "m", "input": "x", "temperatur": 1}, "temperatur"),
        (
            {
                "model": "m",
                "input": "x",
                "tools": [WEATHER, {"type": "function", "name": "f", "parameters": {"type": "objekt"}}],
            },
            "tools[1].parameters",
        ),  # fmt: skip
        (
            {
                "model": "m",
                "input": "x",
                "tools": [WEATHER],
                "tool_choice": {"type": "function", "name": "nope"},
            },
            "tool_choice",
        ),  # fmt: skip
        ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
    ],
)
def test_bad_requests_name_the_field(serve: Any, body: dict[str, Any], param: str) -> None:
    import urllib.error
    import urllib.request

    proxy = serve(Scene(body=response(GOOD)))
    req = urllib.request.Request(proxy.url + "/responses", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 400
    error = json.loads(err.value.read())["error"]
    assert error["param"].startswith(param), error
    assert proxy.upstream.bodies == []


def test_upstream_5xx_reaches_the_client_as_5xx(serve: Any) -> None:
    proxy = serve(Scene(body={"error": {"message": "overloaded"}}, status=503), retries=0)
    with pytest.raises(openai.InternalServerError) as err:
        _client(proxy).responses.create(**ASK)
    assert err.value.status_code == 503 and "overloaded" in err.value.message
    with pytest.raises(openai.InternalServerError):
        _client(proxy).responses.create(**ASK, stream=True)


def test_malformed_upstream_answer_is_502_naming_the_field(serve: Any) -> None:
    proxy = serve(
        Scene(body={"id": "r", "output": [{"type": "function_call", "name": 3, "arguments": "{}"}]})
    )
    with pytest.raises(openai.APIStatusError) as err:
        _client(proxy).responses.create(**ASK)
    assert err.value.status_code == 502 and "output[0].name" in err.value.message


def test_stream_cut_before_completed_ends_with_an_error_event(serve: Any) -> None:
    events = stream_events(response(GOOD))[:-1]
    proxy = serve(Scene(chunks=events, done=False))
    with _client(proxy).responses.with_streaming_response.create(**ASK, stream=True) as resp:
        raw = resp.read().decode()
    got = _sse(raw)
    assert got[-1]["type"] == "error" and "ended before" in got[-1]["message"]
    assert got[-1]["sequence_number"] > max(e["sequence_number"] for e in got[:-1])


def test_upstream_ignoring_stream_is_rendered_as_a_stream(serve: Any) -> None:
    proxy = serve(Scene(body=response(message("Hi."), BAD)))
    with _client(proxy).responses.stream(**ASK) as stream:
        final = stream.get_final_response()
    assert json.loads(final.output[1].arguments) == {"city": "Oslo", "days": 3}


# -- traces and metrics -------------------------------------------------------------------------


def test_traces_and_metrics(serve: Any, tmp_path: Path) -> None:
    proxy = serve(Scene(body=response(BAD)), Scene(chunks=stream_events(response(MISSING)), done=False),
                  Scene(body=response(GOOD)), traces=tmp_path)  # fmt: skip
    client = _client(proxy)
    client.responses.create(**ASK)
    list(client.responses.create(**ASK, stream=True))
    assert proxy.counted(2) == 2
    m = proxy.metrics
    assert m.value("toolmend_repairs_total") >= 1 and m.value("toolmend_reasks_total") == 1
    assert m.value("toolmend_recoveries_total") == 1
    lines = [json.loads(x) for f in sorted(tmp_path.rglob("*.jsonl")) for x in f.read_text().splitlines()]
    assert [r["outcome"] for r in lines] == ["repaired", "recovered"]
    assert lines[0]["request"]["messages"] == [{"role": "user", "content": ASK["input"]}]


# -- policy features ---------------------------------------------------------------------------


def test_a_call_printed_as_text_becomes_a_function_call_item(serve: Any) -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    proxy = serve(Scene(body=response(message(text))))
    resp = _client(proxy).responses.with_raw_response.create(**ASK)
    out = resp.parse()
    assert [i.type for i in out.output] == ["function_call"]
    assert (out.output[0].name, json.loads(out.output[0].arguments)) == ("get_weather", {"city": "Oslo"})
    assert resp.headers["x-toolmend-outcome"] == "repaired"


def test_shadow_mode_changes_nothing_and_says_what_it_would_do(serve: Any) -> None:
    up = response(BAD)
    proxy = serve(Scene(body=up), Scene(chunks=stream_events(up), done=False), shadow=True)
    resp = _client(proxy).responses.with_raw_response.create(**ASK)
    assert resp.text == json.dumps(up)
    assert resp.headers["x-toolmend-findings"] == "invalid_type"
    assert resp.headers["x-toolmend-shadow"] not in ("", "accept")  # it would have acted
    with _client(proxy).responses.with_streaming_response.create(**ASK, stream=True) as r:
        raw = r.read().decode()
    assert [e for e in _sse(raw)] == stream_events(up) and "x-toolmend-findings=invalid_type" in raw


def test_the_proxy_key_guards_responses_too(serve: Any) -> None:
    proxy = serve(Scene(body=response(GOOD)), api_key="sekret-key")
    with pytest.raises(openai.AuthenticationError):
        _client(proxy).responses.create(**ASK)
    out = openai.OpenAI(base_url=proxy.url, api_key="sekret-key", max_retries=0).responses.create(**ASK)
    assert out.output[0].call_id == "c2"
    assert "sekret-key" not in (proxy.upstream.auth[0] or "")


def test_allowed_tools_choice_is_enforced(serve: Any) -> None:
    wrong = response(fcall("get_time", {"zone": "CET"}, "c1"))
    proxy = serve(Scene(body=wrong), Scene(body=response(GOOD)))
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "get_weather"}],
    }
    out = _client(proxy).responses.create(**{**ASK, "tools": [WEATHER, TIME]}, tool_choice=choice)
    assert [i.name for i in out.output] == ["get_weather"] and len(proxy.upstream.bodies) == 2


def test_a_call_cut_by_max_output_tokens_is_dropped_and_the_answer_incomplete(serve: Any) -> None:
    cut = response(message("Checking."), fcall("get_weather", '{"city": "Os', "c1"), status="incomplete")
    proxy = serve(Scene(body=cut), Scene(chunks=stream_events(cut), done=False))
    client = _client(proxy)
    resp = client.responses.with_raw_response.create(**ASK, max_output_tokens=5)
    out = resp.parse()
    assert [i.type for i in out.output] == ["message"] and out.status == "incomplete"
    assert (
        out.incomplete_details.reason == "max_output_tokens" and resp.headers["x-toolmend-outcome"] == "cut"
    )
    with client.responses.with_streaming_response.create(**ASK, max_output_tokens=5, stream=True) as r:
        events = _sse(r.read().decode())
    assert events[-1]["type"] == "response.incomplete"
    assert not any(e["type"].startswith("response.function_call") for e in events)
    assert [i["type"] for i in events[-1]["response"]["output"]] == ["message"]


def test_a_stream_whose_deltas_disagree_with_its_end_is_rendered_as_one_answer(serve: Any) -> None:
    events = stream_events(response(GOOD))
    for e in events:
        if e["type"] == "response.function_call_arguments.delta":
            e["delta"] = e["delta"].replace("Oslo", "Bergen")  # the deltas say one call, the rest another
    proxy = serve(Scene(chunks=events, done=False))
    with _client(proxy).responses.with_streaming_response.create(**ASK, stream=True) as r:
        got = _sse(r.read().decode())
    assert json.loads(_agree(got)[0]) == {"city": "Oslo", "days": 3}


def test_an_event_type_with_a_line_break_is_a_502_not_a_forged_event(serve: Any) -> None:
    events = stream_events(response(GOOD))
    events.insert(1, {"type": 'x\ndata: {"type": "response.completed"}', "sequence_number": 1})
    proxy = serve(Scene(chunks=events, done=False))
    with _client(proxy).responses.with_streaming_response.create(**ASK, stream=True) as r:
        raw = r.read().decode()
    got = _sse(raw)
    assert [e["type"] for e in got] == ["response.created", "error"] and "one line" in got[-1]["message"]
