"""Retry-After parsing and the backoff schedule."""

from __future__ import annotations

import email.utils
import time

import pytest

from toolmend._errors import ModelError
from toolmend._http import is_retryable, parse_retry_after, retry_wait
from toolmend._schema import Message
from toolmend.models import Completion, GenerateRequest, HTTPStatusError, Model, RetryPolicy


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (parse_retry_after({"Retry-After": date}) or 0) <= 30


def test_status_classification() -> None:
    assert HTTPStatusError("x", status=429).retryable and HTTPStatusError("x", status=503).retryable
    assert not HTTPStatusError("x", status=400).retryable and not HTTPStatusError("x", status=404).retryable


def test_wait_uses_retry_after_capped_else_exponential_backoff() -> None:
    policy = RetryPolicy(initial_wait=0.5, max_wait=4, jitter=0.0)
    assert retry_wait(policy, 1, HTTPStatusError("x", status=429, retry_after=2.0)) == 2.0
    assert retry_wait(policy, 1, HTTPStatusError("x", status=429, retry_after=100.0)) == 4.0
    assert [retry_wait(policy, n, ModelError("t", retryable=True)) for n in (1, 2, 3, 4, 5)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        4.0,
    ]
    jittered = RetryPolicy(initial_wait=0.5, max_wait=60, jitter=1.0)
    assert all(0.5 <= retry_wait(jittered, 1, ModelError("t", retryable=True)) <= 1.5 for _ in range(20))


def test_retry_wait_and_retryable_classification() -> None:
    policy = RetryPolicy(initial_wait=0.25, max_wait=1.0, jitter=0.0)
    assert [retry_wait(policy, n) for n in (1, 2, 3, 4)] == [0.25, 0.5, 1.0, 1.0]
    assert retry_wait(policy, 3, HTTPStatusError("x", status=429, retry_after=0.0)) == 0.0
    assert is_retryable(ModelError("t", retryable=True)) and not is_retryable(ModelError("t"))
    assert not is_retryable(ValueError("a bug, not a transport failure"))


class _Flaky(Model):
    """Fails with ``errors`` (in order), then answers; records when each attempt started."""

    cacheable = False

    def __init__(self, errors: list[Exception], policy: RetryPolicy) -> None:
        super().__init__("flaky", retry=policy)
        self.errors = list(errors)
        self.starts: list[float] = []

    async def _generate(self, request: GenerateRequest) -> Completion:
        self.starts.append(time.perf_counter())
        if self.errors:
            raise self.errors.pop(0)
        return Completion(text="done")


async def test_model_retries_on_the_policy_schedule_and_counts_failures() -> None:
    policy = RetryPolicy(max_retries=3, initial_wait=0.02, max_wait=1.0, jitter=0.0)
    errors: list[Exception] = [
        ModelError("reset", retryable=True),
        HTTPStatusError("busy", status=429, retry_after=0.1),
    ]
    model = _Flaky(errors, policy)
    out = await model.generate([Message(role="user", content="hi")])
    assert out.text == "done" and out.retries == 2 and out.model == "flaky"
    gaps = [b - a for a, b in zip(model.starts, model.starts[1:], strict=False)]
    assert gaps[0] >= 0.02 and gaps[1] >= 0.1  # backoff, then the server's Retry-After


async def test_model_gives_up_after_max_retries_and_never_retries_client_errors() -> None:
    policy = RetryPolicy(max_retries=2, initial_wait=0.0, jitter=0.0)
    model = _Flaky([HTTPStatusError("down", status=503)] * 5, policy)
    with pytest.raises(HTTPStatusError) as info:
        await model.generate([Message(role="user", content="hi")])
    assert info.value.status == 503 and len(model.starts) == 3
    model = _Flaky([HTTPStatusError("bad", status=400), ModelError("unused", retryable=True)], policy)
    with pytest.raises(HTTPStatusError):
        await model.generate([Message(role="user", content="hi")])
    assert len(model.starts) == 1
    with pytest.raises(ValueError):  # a bug in a backend is not a transport failure: no retry
        await _Flaky([ValueError("bug")], policy).generate([Message(role="user", content="hi")])
