"""The HTTP owner module: the one ``Retry-After`` parser, the backoff schedule, the retry loop and
the breaker that stops requests to a server that stopped accepting connections."""

from __future__ import annotations

import email.utils
import math

import pytest

from toolmend._errors import EndpointError, ModelError
from toolmend._http import (
    MAX_RETRY_AFTER_S,
    Breaker,
    ConnectError,
    HTTPStatusError,
    RetryPolicy,
    call_with_retries,
    is_loopback,
    parse_retry_after,
    retry_wait,
    timeout_hint,
)

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": " 7 "}, 7.0),
        ({"Retry-After": "0"}, 0.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25),
        ({"Retry-After-Ms": "1500"}, 1.5),
        ({"retry-after-ms": "soon", "Retry-After": "2"}, 2.0),  # an unusable ms value falls back
        ({"Retry-After": email.utils.formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"Retry-After": email.utils.formatdate(NOW - 30, usegmt=True)}, 0.0),  # past: now
        ({"Retry-After": "Fri, 15 Jan 2027 08:00:30 -0000"}, 30.0),  # "-0000": UTC, not local time
        ({"Retry-After": "99999999999"}, MAX_RETRY_AFTER_S),
        ({"Retry-After": email.utils.formatdate(NOW + 10**9, usegmt=True)}, MAX_RETRY_AFTER_S),
        ({}, None),
    ],
)
def test_retry_after_values_that_mean_a_wait(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


@pytest.mark.parametrize(
    "value",
    ["soon", "0x10", "NaN", "nan", "-3", "-0.5", "inf", "-inf", "Infinity", "1e999", "1e3", "+5", "",
     "   ", "3 seconds", "Mon, 99 Foo 2026 99:99:99 GMT", "Tue, 31 Feb 2026 25:00:00 GMT", "\x00",
     "1" * 40],
)  # fmt: skip
def test_retry_after_garbage_is_ignored(value: str) -> None:
    assert parse_retry_after({"Retry-After": value}, now=NOW) is None
    assert parse_retry_after({"retry-after-ms": value}, now=NOW) is None


def test_every_parsed_wait_is_finite_and_bounded() -> None:
    for value in ["0", "5", "3600", "3601", "1" * 20, "12.25"]:
        got = parse_retry_after({"Retry-After": value}, now=NOW)
        assert got is not None and math.isfinite(got) and 0 <= got <= MAX_RETRY_AFTER_S


def test_retry_wait_never_uses_an_unusable_retry_after() -> None:
    policy = RetryPolicy(initial_wait=0.5, max_wait=4, jitter=0.0)
    for bad in (float("nan"), float("inf"), -1.0):
        assert retry_wait(policy, 2, HTTPStatusError("x", status=429, retry_after=bad)) == 1.0
    assert retry_wait(policy, 1, HTTPStatusError("x", status=429, retry_after=3.0)) == 3.0
    assert retry_wait(policy, 2000) == 4.0  # no overflow far into a schedule


async def test_the_loop_retries_what_may_pass_and_collects_every_failure() -> None:
    outcomes: list[Exception | str] = [
        ModelError("reset", retryable=True),
        HTTPStatusError("busy", status=503),
        "ok",
    ]

    async def attempt() -> str:
        item = outcomes.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    failures: list[ModelError] = []
    policy = RetryPolicy(max_retries=3, initial_wait=0.0, jitter=0.0)
    assert await call_with_retries(attempt, policy, failures) == "ok"
    assert [str(f) for f in failures] == ["reset", "busy"]
    outcomes[:] = [HTTPStatusError("bad request", status=400), "never"]
    with pytest.raises(HTTPStatusError):
        await call_with_retries(attempt, policy, [])
    assert outcomes == ["never"]


async def test_the_breaker_opens_after_connections_refused_in_a_row() -> None:
    breaker = Breaker("http://127.0.0.1:9/v1", threshold=3)
    refused = ConnectError("refused", url="http://127.0.0.1:9/v1", reason="connection refused")
    calls = [0]

    async def attempt() -> str:
        calls[0] += 1
        raise refused

    policy = RetryPolicy(max_retries=100, initial_wait=0.0, jitter=0.0)
    with pytest.raises(EndpointError, match=r"127\.0\.0\.1:9/v1.*stopped accepting connections"):
        await call_with_retries(attempt, policy, [], breaker=breaker)
    assert calls[0] == 3 and breaker.open
    with pytest.raises(EndpointError):  # every later request fails before it is sent
        await call_with_retries(attempt, policy, [], breaker=breaker)
    assert calls[0] == 3


async def test_any_answer_resets_the_breaker() -> None:
    breaker = Breaker("http://h/v1", threshold=2)
    breaker.record(ConnectError("refused", url="u", reason="r"))
    breaker.record(HTTPStatusError("500", status=500))  # the server is there, only failing
    breaker.record(ConnectError("refused", url="u", reason="r"))
    assert not breaker.open
    breaker.record(ConnectError("refused", url="u", reason="r"))
    assert breaker.open
    # A time-out or a dropped connection says nothing either way: the count goes on.
    other = Breaker("http://h/v1", threshold=2)
    other.record(ConnectError("refused", url="u", reason="r"))
    other.record(ModelError("timed out", retryable=True))
    other.record(ConnectError("refused", url="u", reason="r"))
    assert other.open


def test_loopback_and_the_timeout_hint() -> None:
    for url in ["http://localhost:8080/v1", "http://127.0.0.1/v1", "http://[::1]:8000/v1", "http://0.0.0.0:1/v1",
                "http://127.3.2.1/v1", "http://api.localhost/v1"]:  # fmt: skip
        assert is_loopback(url), url
        assert "--max-connections 1" in timeout_hint(url)
    for url in ["https://api.openai.com/v1", "http://10.0.0.2:8000/v1", "http://[::1", "not a url"]:
        assert not is_loopback(url), url
        assert timeout_hint(url) == ""
