"""What the proxy enforces and adds: tool_choice, parallel_tool_calls, per-tool strict, content
rescue, --shadow, --strict, /metrics and traces."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from scripted_upstream import Scene, call, completion, stream_of

from toolmend.benchmarks._predictions import read_predictions
from toolmend.formats import parse_calls

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}  # fmt: skip
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}
TOOLS = [WEATHER, TIME]
ASK = {"model": "m", "messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": TOOLS}
OSLO = call("get_weather", '{"city": "Oslo"}', "c1")


def _client(proxy: Any) -> Any:
    return openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)


def _streamed(proxy: Any, **kwargs: Any) -> tuple[str, list[tuple[str, str]], str | None]:
    content, calls, finish = "", {}, None
    for chunk in _client(proxy).chat.completions.create(**{**ASK, **kwargs}, stream=True):
        for ch in chunk.choices:
            content += ch.delta.content or ""
            for t in ch.delta.tool_calls or []:
                slot = calls.setdefault(t.index, ["", ""])
                slot[0] += t.function.name or ""
                slot[1] += t.function.arguments or ""
            finish = ch.finish_reason or finish
    return content, [tuple(calls[i]) for i in sorted(calls)], finish  # type: ignore[misc]


# -- tool_choice, parallel_tool_calls, strict ---------------------------------------------------


def test_tool_choice_none_strips_calls(serve: Any) -> None:
    proxy = serve(Scene(body=completion("Here you go.", [OSLO])))
    resp = _client(proxy).chat.completions.with_raw_response.create(**ASK, tool_choice="none")
    choice = resp.parse().choices[0]
    assert (choice.message.content, choice.message.tool_calls, choice.finish_reason) == (
        "Here you go.",
        None,
        "stop",
    )
    assert "tool_choice_none" in resp.headers["x-toolmend-findings"]


def test_tool_choice_required_reasks_for_a_call(serve: Any) -> None:
    proxy = serve(Scene(body=completion("It is sunny.")), Scene(body=completion(None, [OSLO])))
    resp = _client(proxy).chat.completions.create(**ASK, tool_choice="required")
    assert resp.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert resp.choices[0].finish_reason == "tool_calls"
    nudge = proxy.upstream.bodies[1]["messages"][-1]
    assert nudge["role"] == "user" and "tool call is required" in nudge["content"]


@pytest.mark.parametrize("policy", [{}, {"reask": False}], ids=["budget_spent", "reask_off"])
def test_tool_choice_required_never_ends_without_a_call(serve: Any, policy: dict[str, Any]) -> None:
    from toolmend.guard import GuardPolicy

    proxy = serve(Scene(body=completion("It is sunny.")), policy=GuardPolicy(**policy))
    with pytest.raises(openai.UnprocessableEntityError) as info:
        _client(proxy).chat.completions.create(**ASK, tool_choice="required")
    assert info.value.body["code"] == "tool_call_guard_gave_up"
    assert len(proxy.upstream.bodies) == (1 if policy else 3)  # the turn's budget: two re-asks


def test_named_tool_choice_reasks_another_tool(serve: Any) -> None:
    proxy = serve(
        Scene(body=completion(None, [call("get_time", "{}", "t")])), Scene(body=completion(None, [OSLO]))
    )
    choice = {"type": "function", "function": {"name": "get_weather"}}
    resp = _client(proxy).chat.completions.create(**ASK, tool_choice=choice)
    assert [t.function.name for t in resp.choices[0].message.tool_calls] == ["get_weather"]
    assert len(proxy.upstream.bodies) == 2


def test_parallel_tool_calls_false_keeps_the_first(serve: Any) -> None:
    two = [OSLO, call("get_weather", '{"city": "Rome"}', "c2")]
    proxy = serve(Scene(body=completion(None, two)), Scene(chunks=stream_of(
        [{"tool_calls": [{"index": i, **c}]} for i, c in enumerate(two)], "tool_calls")))  # fmt: skip
    resp = _client(proxy).chat.completions.create(**ASK, parallel_tool_calls=False)
    assert [t.id for t in resp.choices[0].message.tool_calls] == ["c1"]
    assert _streamed(proxy, parallel_tool_calls=False)[1] == [("get_weather", '{"city": "Oslo"}')]


def test_ground_reasks_a_value_the_request_never_mentions_once(serve: Any) -> None:
    from toolmend.guard import GuardPolicy

    rome = call("get_weather", '{"city": "Rome"}', "c1")
    proxy = serve(
        Scene(body=completion(None, [rome])),
        Scene(body=completion(None, [OSLO])),
        policy=GuardPolicy(ground=True),
    )
    resp = _client(proxy).chat.completions.create(**ASK)
    assert resp.choices[0].message.tool_calls[0].function.arguments == '{"city": "Oslo"}'
    feedback = json.dumps(proxy.upstream.bodies[1]["messages"][len(ASK["messages"]) :])
    assert "'Rome', which appears nowhere in the conversation" in feedback
    # A value the model sends again after the re-ask goes through: the check is a heuristic.
    proxy = serve(
        Scene(body=completion(None, [rome])),
        Scene(body=completion(None, [rome])),
        policy=GuardPolicy(ground=True),
    )
    resp = _client(proxy).chat.completions.create(**ASK)
    assert resp.choices[0].message.tool_calls[0].function.arguments == '{"city": "Rome"}'
    assert len(proxy.upstream.bodies) == 2
    # Odd messages are read as far as they can be, never a crash: content parts, a stray field.
    odd = [{"role": "user", "content": [{"type": "text", "text": "Weather in Rome?"}], "tool_calls": 5}]
    proxy = serve(Scene(body=completion(None, [rome])), policy=GuardPolicy(ground=True))
    resp = _client(proxy).chat.completions.create(**{**ASK, "messages": odd})
    assert resp.choices[0].message.tool_calls[0].function.arguments == '{"city": "Rome"}'


def test_per_tool_strict_requires_every_property(serve: Any) -> None:
    strict = {"type": "function", "function": {**WEATHER["function"], "strict": True}}
    proxy = serve(
        Scene(body=completion(None, [OSLO])),
        Scene(body=completion(None, [call("get_weather", '{"city": "Oslo", "days": 1}', "c9")])),
    )
    resp = _client(proxy).chat.completions.with_raw_response.create(**{**ASK, "tools": [strict]})
    assert json.loads(resp.parse().choices[0].message.tool_calls[0].function.arguments) == {
        "city": "Oslo",
        "days": 1,
    }
    assert resp.headers["x-toolmend-findings"] == "missing_required"
    # Without strict the same first answer is fine as it is.
    proxy = serve(Scene(body=completion(None, [OSLO])))
    assert _client(proxy).chat.completions.create(**ASK).choices[0].message.tool_calls[0].id == "c1"


# -- content rescue ---------------------------------------------------------------------------

RESCUE = {
    "hermes": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
    "mistral": '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}]',
    "llama_json": '{"name": "get_weather", "parameters": {"city": "Oslo"}}',
    "pythonic": '[get_weather(city="Oslo")]',
}


@pytest.mark.parametrize("text", list(RESCUE.values()), ids=list(RESCUE))
def test_tool_calls_printed_as_text_are_rescued(serve: Any, text: str) -> None:
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    proxy = serve(
        Scene(body=completion(text)), Scene(chunks=stream_of([{"content": p} for p in pieces], "stop"))
    )
    msg = _client(proxy).chat.completions.create(**ASK).choices[0]
    assert msg.finish_reason == "tool_calls" and not msg.message.content
    assert [(t.function.name, json.loads(t.function.arguments)) for t in msg.message.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    content, calls, finish = _streamed(proxy)
    assert content == "" and finish == "tool_calls"
    assert [(n, json.loads(a)) for n, a in calls] == [("get_weather", {"city": "Oslo"})]


def test_prose_and_unknown_names_are_not_rescued(serve: Any) -> None:
    text = '[not_a_tool(city="Oslo")]'
    proxy = serve(Scene(body=completion(text)), Scene(chunks=stream_of([{"content": text}], "stop")))
    assert _client(proxy).chat.completions.create(**ASK).choices[0].message.content == text
    assert _streamed(proxy) == (text, [], "stop")


# -- shadow and strict ---------------------------------------------------------------------------

BAD = call("get_weather", '{"city": "Oslo", "days": "2"}', "c1")


def test_shadow_only_annotates(serve: Any) -> None:
    up = completion(None, [BAD])
    chunks = stream_of([{"tool_calls": [{"index": 0, **BAD}]}], "tool_calls")
    proxy = serve(Scene(body=up), Scene(chunks=chunks), shadow=True)
    resp = _client(proxy).chat.completions.with_raw_response.create(**ASK)
    assert resp.text == json.dumps(up)
    assert (
        resp.headers["x-toolmend-shadow"] == "repaired"
        and resp.headers["x-toolmend-findings"] == "invalid_type"
    )
    req = urllib.request.Request(proxy.url + "/chat/completions", data=json.dumps({**ASK, "stream": True}).encode(),
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    for chunk in chunks:
        assert "data: " + json.dumps(chunk) + "\n\n" in text  # every upstream event, as it was
    assert re.search(r"^: .*x-toolmend-shadow=repaired", text, re.M)
    assert len(proxy.upstream.bodies) == 2  # never a re-ask


def test_strict_mode_returns_an_error_instead_of_a_repair(serve: Any) -> None:
    proxy = serve(Scene(body=completion(None, [BAD])), Scene(body=completion(None, [OSLO])), strict=True)
    with pytest.raises(openai.UnprocessableEntityError) as info:
        _client(proxy).chat.completions.create(**ASK)
    assert info.value.body["code"] == "invalid_tool_call" and info.value.body["findings"] == ["invalid_type"]
    assert _client(proxy).chat.completions.create(**ASK).choices[0].message.tool_calls[0].id == "c1"


# -- metrics and traces ----------------------------------------------------------------------------


def test_metrics_in_prometheus_text_format(serve: Any) -> None:
    proxy = serve(Scene(body=completion(None, [BAD])), Scene(body=completion(None, [call("get_weather", "{}", "x")])),
                  Scene(body=completion(None, [OSLO])))  # fmt: skip
    client = _client(proxy)
    client.chat.completions.create(**ASK)
    client.chat.completions.create(**ASK)
    proxy.counted(2)
    with urllib.request.urlopen(proxy.thread.url + "/metrics", timeout=5) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    line = re.compile(r'^[a-z_]+(\{([a-z_]+="[^"]*",?)*\})? [0-9.e+-]+$')
    for row in text.splitlines():
        assert row.startswith(("# HELP ", "# TYPE ")) or line.match(row), row
    assert 'toolmend_requests_total{outcome="repaired",stream="false"} 1' in text
    assert 'toolmend_requests_total{outcome="recovered",stream="false"} 1' in text
    assert 'toolmend_findings_total{code="missing_required"} 1' in text
    assert "toolmend_reasks_total 1" in text and "toolmend_recoveries_total 1" in text
    assert "toolmend_repairs_total 1" in text
    assert 'toolmend_request_seconds_count{stream="false"} 2' in text
    assert 'toolmend_request_seconds_bucket{stream="false",le="+Inf"} 2' in text


def test_traces_feed_scoring_and_training_data(serve: Any, tmp_path: Path) -> None:
    proxy = serve(
        Scene(body=completion(None, [BAD])), Scene(body=completion(None, [OSLO])), traces=tmp_path / "run"
    )
    client = _client(proxy)
    client.chat.completions.create(**ASK, extra_headers={"x-toolmend-sample-id": "s1"})
    client.chat.completions.create(
        **ASK, extra_headers={"x-toolmend-sample-id": "s2", "Authorization": "Bearer sk-secret"}
    )
    path = tmp_path / "run" / "traces.jsonl"
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["kind"] == "serve"
    text = path.read_text()
    assert "sk-secret" not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert [(r["id"], r["outcome"]) for r in records] == [("s1", "repaired"), ("s2", "accepted")]
    first = records[0]
    assert [e["label"] for e in first["examples"]] == ["desirable", "undesirable"]
    assert first["original"]["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo", "days": "2"}'
    assert json.loads(first["sft_target"]["tool_calls"][0]["function"]["arguments"]) == {
        "city": "Oslo",
        "days": 2,
    }
    assert first["verdict"]["fixes"][0]["action"] == "coerce"
    assert first["upstream"][0]["choices"][0]["message"]["tool_calls"][0]["id"] == "c1"
    # `toolmend score` reads traces as predictions: every line usable, outputs parse to the calls.
    preds = read_predictions(path)
    assert preds.problems == [] and set(preds.outputs) == {"s1", "s2"}
    parsed = parse_calls(preds.outputs["s1"])  # type: ignore[arg-type]
    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_weather", {"city": "Oslo", "days": 2})]
