"""The proxy reads an upstream's ``Retry-After`` / ``retry-after-ms`` through the one parser of
:mod:`toolmend._http`: a value it cannot use is ignored (plain backoff), never a bare 500 and
never a wait without end."""

from __future__ import annotations

from typing import Any

import pytest
from scripted_upstream import Scene, call, completion

openai = pytest.importorskip("openai")

ASK = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
OK = completion(None, [call("f", '{"a": 1}', "c1")])
BUSY = {"error": {"message": "slow down", "type": "rate_limit"}}


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "soon"},
        {"Retry-After": "0x10"},
        {"Retry-After": "NaN"},
        {"Retry-After": "-3"},
        {"Retry-After": "inf"},
        {"Retry-After": "1e999"},
        {"retry-after-ms": "nan"},
        {"retry-after-ms": "-1"},
        {"Retry-After": "Mon, 99 Foo 2026 99:99:99 GMT"},
        {"Retry-After": ""},
    ],
    ids=["word", "hex", "nan", "negative", "inf", "overflow", "ms-nan", "ms-negative", "bad-date", "empty"],
)
def test_an_unusable_retry_after_falls_back_to_backoff(serve: Any, headers: dict[str, str]) -> None:
    proxy = serve(Scene(status=429, body=BUSY, headers=headers), Scene(body=OK), max_retry_wait=0.05)
    # The client's own timeout bounds the test: a wait without end fails it instead of hanging.
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0, timeout=20)
    resp = client.chat.completions.create(**ASK)
    assert resp.choices[0].message.tool_calls[0].function.arguments == '{"a": 1}'
    assert len(proxy.upstream.bodies) == 2
    assert proxy.metrics.value("toolmend_upstream_retries_total") == 1


def test_a_huge_retry_after_is_capped_by_max_retry_wait(serve: Any) -> None:
    proxy = serve(
        Scene(status=503, body=BUSY, headers={"Retry-After": "99999999999"}),
        Scene(body=OK),
        max_retry_wait=0.05,
    )
    client = openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0, timeout=20)
    resp = client.chat.completions.create(**ASK, stream=True)
    assert [c for c in resp]  # the stream opens after the capped wait
    assert len(proxy.upstream.bodies) == 2
