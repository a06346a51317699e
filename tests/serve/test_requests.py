"""Bad input gets a 400 with an OpenAI-shaped error naming the problem, and the server keeps
serving; the proxy key is required when configured and never goes upstream."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from scripted_upstream import Scene, completion

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def post(url: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    req = urllib.request.Request(url + "/chat/completions", data=data,
                                 headers={"Content-Type": "application/json", **(headers or {})})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), dict(exc.headers)


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1, 2]", None, "must be a JSON object"),
        (json.dumps({**GOOD, "temprature": 1}).encode(), "temprature", "Unrecognized request argument"),
        (json.dumps({"model": "m"}).encode(), "messages", "Missing required parameter: 'messages'"),
        (json.dumps({"messages": GOOD["messages"]}).encode(), "model", "Missing required parameter: 'model'"),
        (
            json.dumps({**GOOD, "messages": [{"role": "robot"}]}).encode(),
            "messages[0].role",
            "must be one of",
        ),
        (
            json.dumps(
                {
                    **GOOD,
                    "tools": [
                        {
                            "type": "function",
                            "function": {
                                "name": "f",
                                "parameters": {"type": "object", "properties": {"a": {"type": "integr"}}},
                            },
                        }
                    ],
                }
            ).encode(),
            "tools[0].function.parameters",
            "not a valid JSON Schema",
        ),
        (
            json.dumps({**GOOD, "tools": [{"type": "function", "function": {"parameters": {}}}]}).encode(),
            "tools[0].function.name",
            "non-empty string",
        ),
        (
            json.dumps(
                {**GOOD, "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "g"}}}
            ).encode(),
            "tool_choice",
            "not in 'tools'",
        ),
    ],
    ids=[
        "json",
        "array",
        "unknown_field",
        "no_messages",
        "no_model",
        "role",
        "schema",
        "tool_name",
        "tool_choice",
    ],
)
def test_bad_input_is_a_400_naming_the_problem(
    serve: Any, body: bytes, param: str | None, words: str
) -> None:
    proxy = serve(Scene(body=completion("fine")))
    status, error, _ = post(proxy.url, body)
    assert status == 400
    assert set(error["error"]) >= {"message", "type", "param", "code"}
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["param"] == param
    assert words in error["error"]["message"]
    # The server keeps serving, and nothing bad reached the upstream.
    status, answer, _ = post(proxy.url, json.dumps(GOOD).encode())
    assert (status, answer["choices"][0]["message"]["content"]) == (200, "fine")
    assert len(proxy.upstream.bodies) == 1
    assert proxy.metrics.value("toolmend_bad_requests_total", status="400") == 1


def test_extra_fields_can_be_allowed(serve: Any) -> None:
    proxy = serve(Scene(body=completion("fine")), extra_fields=frozenset({"my_field"}))
    status, _, _ = post(proxy.url, json.dumps({**GOOD, "my_field": 1, "top_k": 5}).encode())
    assert status == 200
    assert proxy.upstream.bodies[0]["my_field"] == 1


def test_proxy_key_is_required_and_not_forwarded(serve: Any) -> None:
    proxy = serve(Scene(body=completion("fine")), api_key="proxy-secret", upstream_api_key="upstream-secret")
    status, error, _ = post(proxy.url, json.dumps(GOOD).encode())
    assert status == 401 and error["error"]["code"] == "invalid_api_key"
    status, error, _ = post(proxy.url, json.dumps(GOOD).encode(), {"Authorization": "Bearer wrong"})
    assert status == 401 and "proxy-secret" not in json.dumps(error)
    status, _, _ = post(proxy.url, json.dumps(GOOD).encode(), {"Authorization": "Bearer proxy-secret"})
    assert status == 200
    assert proxy.upstream.auth == ["Bearer upstream-secret"]
    # healthz and metrics need no key
    with urllib.request.urlopen(proxy.thread.url + "/healthz", timeout=5) as resp:
        assert json.loads(resp.read())["status"] == "ok"


def test_client_key_passes_through_without_a_configured_one(serve: Any) -> None:
    proxy = serve(Scene(body=completion("fine")))
    status, _, _ = post(proxy.url, json.dumps(GOOD).encode(), {"Authorization": "Bearer client-key"})
    assert status == 200
    assert proxy.upstream.auth == ["Bearer client-key"]


def test_models_is_passed_through(serve: Any) -> None:
    proxy = serve(Scene(body=completion("fine")))
    with urllib.request.urlopen(proxy.url + "/models", timeout=5) as resp:
        assert json.loads(resp.read())["data"][0]["id"] == "scripted"


def test_the_request_goes_upstream_as_the_client_sent_it(serve: Any) -> None:
    proxy = serve(Scene(body=completion("hi")))
    sent = '{"model":"m",  "messages":[{"role":"user","content":"Zürich \\u00e9"}], "tools": []}'.encode()
    assert post(proxy.url, sent)[0] == 200
    assert proxy.upstream.raw == [sent]  # not parsed and written again
