"""Retry-After parsing and the backoff schedule."""

from __future__ import annotations

import email.utils
import time

from tenacity import RetryCallState

from toolmend.errors import ModelError
from toolmend.models import HTTPStatusError, RetryPolicy
from toolmend.models.retry import _WaitRetryAfter, parse_retry_after


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


def _state(attempt: int, exc: BaseException) -> RetryCallState:
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    state.set_exception((type(exc), exc, None))
    return state


def test_wait_uses_retry_after_capped_else_exponential_backoff() -> None:
    wait = _WaitRetryAfter(RetryPolicy(initial_wait=0.5, max_wait=4, jitter=0.0))
    assert wait(_state(1, HTTPStatusError("x", status=429, retry_after=2.0))) == 2.0
    assert wait(_state(1, HTTPStatusError("x", status=429, retry_after=100.0))) == 4.0
    assert [wait(_state(n, ModelError("t", retryable=True))) for n in (1, 2, 3, 4, 5)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        4.0,
    ]
    jittered = _WaitRetryAfter(RetryPolicy(initial_wait=0.5, max_wait=60, jitter=1.0))
    assert all(0.5 <= jittered(_state(1, ModelError("t", retryable=True))) <= 1.5 for _ in range(20))
