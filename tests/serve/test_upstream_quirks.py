"""What a real local server (llama-cpp-python's OpenAI server in front of SmolLM2, issue 35) did
through ``toolmend serve``, replayed by a scripted upstream for the real openai SDK: the legacy
``function_call`` field beside ``tool_calls`` must never carry a rejected call, and
``tool_choice: "required"``, which that server answers with a 500, is the proxy's to enforce."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_upstream import Scene, completion, stream_of

openai = pytest.importorskip("openai")

PLAN = {"type": "function", "function": {"name": "plan_trip", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
    "required": ["city", "days"]}}}  # fmt: skip
ASK = {"model": "m", "messages": [{"role": "user", "content": "Plan 450 days in Oslo."}], "tools": [PLAN]}
BAD = '{"city": "Oslo", "days": 450}'
GOOD = '{"city": "Oslo", "days": 14}'


def _client(proxy: Any) -> Any:
    return openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0)


def _llama_cpp_answer(arguments: str, cid: str) -> dict[str, Any]:
    """A completion as llama-cpp-python's chatml-function-calling writes it: the call twice, in
    ``tool_calls`` and in the legacy ``function_call``."""
    body = completion(
        None, [{"id": cid, "type": "function", "function": {"name": "plan_trip", "arguments": arguments}}]
    )
    body["choices"][0]["message"]["function_call"] = {"name": "plan_trip", "arguments": arguments}
    return body


def _llama_cpp_stream(arguments: str, cid: str) -> list[Any]:
    head = {"role": "assistant", "content": None, "function_call": None, "tool_calls": None}
    call = {
        "index": 0,
        "id": cid,
        "type": "function",
        "function": {"name": "plan_trip", "arguments": arguments},
    }
    chunks = stream_of([{"role": None, "content": None, "function_call": {"name": "plan_trip", "arguments": arguments},
                         "tool_calls": [call]}], "tool_calls")  # fmt: skip
    chunks[0]["choices"][0]["delta"] = head
    return chunks


def test_a_recovered_answer_carries_no_rejected_call_in_function_call(serve: Any) -> None:
    proxy = serve(Scene(body=_llama_cpp_answer(BAD, "c1")), Scene(body=_llama_cpp_answer(BAD, "c2")),
                  Scene(body=_llama_cpp_answer(GOOD, "c3")))  # fmt: skip
    resp = _client(proxy).chat.completions.with_raw_response.create(**ASK)
    message = resp.parse().choices[0].message
    assert resp.headers["x-toolmend-outcome"] == "recovered" and resp.headers["x-toolmend-reasks"] == "2"
    assert [json.loads(t.function.arguments) for t in message.tool_calls] == [{"city": "Oslo", "days": 14}]
    assert message.function_call is None or json.loads(message.function_call.arguments)["days"] == 14
    assert "450" not in resp.text  # in no field at all


def test_a_recovered_stream_carries_no_rejected_call_in_function_call(serve: Any) -> None:
    proxy = serve(Scene(chunks=_llama_cpp_stream(BAD, "c1")), Scene(body=_llama_cpp_answer(GOOD, "c2")))
    chunks = list(_client(proxy).chat.completions.create(**ASK, stream=True))
    calls = [t for c in chunks for ch in c.choices for t in ch.delta.tool_calls or []]
    assert [json.loads(t.function.arguments) for t in calls] == [{"city": "Oslo", "days": 14}]
    legacy = [
        ch.delta.function_call for c in chunks for ch in c.choices if ch.delta.function_call is not None
    ]
    assert all("450" not in (f.arguments or "") for f in legacy)
    assert "450" not in json.dumps([c.model_dump() for c in chunks])


def _refuses_required(answers: list[Scene]) -> Any:
    """An upstream that answers 500 to ``tool_choice: "required"``, as llama-cpp-python did, and
    otherwise gives ``answers`` in turn."""

    def handler(body: dict[str, Any]) -> Scene:
        if body.get("tool_choice") == "required":
            return Scene(status=500, body={"error": {"message": "tool_choice required is not supported",
                                                     "type": "internal_server_error"}})  # fmt: skip
        return answers.pop(0) if len(answers) > 1 else answers[0]

    return handler


@pytest.mark.parametrize("stream", [False, True])
def test_tool_choice_required_is_enforced_by_the_proxy_not_sent_upstream(serve: Any, stream: bool) -> None:
    first = (
        Scene(chunks=stream_of([{"content": "Oslo is lovely."}], "stop"))
        if stream
        else Scene(body=completion("Oslo is lovely."))
    )
    proxy = serve(handler=_refuses_required([first, Scene(body=_llama_cpp_answer(GOOD, "c1"))]))
    client = _client(proxy)
    if stream:
        chunks = list(client.chat.completions.create(**ASK, tool_choice="required", stream=True))
        calls = [t for c in chunks for ch in c.choices for t in ch.delta.tool_calls or []]
        assert [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason] == ["tool_calls"]
    else:
        calls = client.chat.completions.create(**ASK, tool_choice="required").choices[0].message.tool_calls
    assert [json.loads(t.function.arguments) for t in calls] == [{"city": "Oslo", "days": 14}]
    bodies = proxy.upstream.bodies
    assert len(bodies) == 2 and all(b["tool_choice"] == "auto" for b in bodies)
    assert "tool call is required" in bodies[1]["messages"][-1]["content"]


def test_tool_choice_required_without_a_call_fails_per_policy(serve: Any) -> None:
    from toolmend.guard import GuardPolicy

    proxy = serve(handler=_refuses_required([Scene(body=completion("Oslo is lovely."))]),
                  policy=GuardPolicy(max_reasks_per_turn=1))  # fmt: skip
    with pytest.raises(openai.UnprocessableEntityError) as info:
        _client(proxy).chat.completions.create(**ASK, tool_choice="required")
    assert info.value.body["code"] == "tool_call_guard_gave_up"
    assert len(proxy.upstream.bodies) == 2 and all(b["tool_choice"] == "auto" for b in proxy.upstream.bodies)


def test_shadow_mode_passes_tool_choice_on_unchanged(serve: Any) -> None:
    proxy = serve(Scene(body=_llama_cpp_answer(GOOD, "c1")), shadow=True)
    _client(proxy).chat.completions.create(**ASK, tool_choice="required")
    assert proxy.upstream.bodies[0]["tool_choice"] == "required"  # shadow mode changes nothing
