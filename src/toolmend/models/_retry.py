"""Transport retries: exponential backoff with jitter, and the server's ``Retry-After`` when it
sends one.

Only failures that may pass are retried — 408/409/429, 5xx, timeouts and dropped connections,
i.e. a :class:`~toolmend.ModelError` with ``retryable=True``. Semantic retries (re-asking a model
whose tool call was invalid) belong to the recovery strategies layer, not here.

>>> policy = RetryPolicy(max_retries=3, initial_wait=0.5, max_wait=8)
>>> policy.max_retries
3
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base

from toolmend._errors import ModelError

__all__ = [
    "RETRYABLE_STATUS",
    "HTTPStatusError",
    "ModelFailure",
    "RetryPolicy",
    "is_deterministic",
    "is_retryable",
    "parse_retry_after",
    "retry_wait",
    "retrying",
]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class HTTPStatusError(ModelError):
    """A server answered with an error status; ``retry_after`` is its requested wait in seconds."""

    def __init__(self, message: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(message, retryable=status in RETRYABLE_STATUS or status >= 500, status=status)
        self.retry_after = retry_after


class ModelFailure(ModelError):
    """The server failed the same request the same way on every attempt: an answer the model
    caused (e.g. ``transformers serve`` answering 500 "could not parse region as JSON" to a
    malformed ``<tool_call>``), to be scored as the model's failure rather than excluded."""


# Overload and gateway answers pass with time, however often they repeat; never the model's doing.
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 502, 503, 504, 520, 522, 524, 529})


def is_deterministic(failures: list[BaseException]) -> bool:
    """Whether ``failures`` (every attempt of one request, which is the same request, seed
    included, each time) are one server error repeated: at least two attempts, all answered with
    the same non-transient 5xx status and the same message.

    >>> e = HTTPStatusError("HTTP 500: could not parse region as JSON", status=500)
    >>> is_deterministic([e, HTTPStatusError(str(e), status=500)])
    True
    >>> is_deterministic([e, HTTPStatusError("HTTP 500: out of memory", status=500)])
    False
    """
    if len(failures) < 2:
        return False
    first = failures[0]
    status = getattr(first, "status", None)
    if (
        not isinstance(first, HTTPStatusError)
        or status is None
        or status < 500
        or status in _TRANSIENT_STATUS
    ):
        return False
    return all(
        isinstance(f, HTTPStatusError) and f.status == status and str(f) == str(first) for f in failures
    )


class RetryPolicy(BaseModel):
    """How often and how long to retry a failed attempt.

    The wait before retry *n* is ``initial_wait * 2**(n-1)`` plus up to ``jitter`` seconds, capped
    at ``max_wait``; a ``Retry-After`` from the server replaces it (also capped at ``max_wait``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = 5
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_wait(policy: RetryPolicy, failures: int, exc: BaseException | None = None) -> float:
    """Seconds to wait after the ``failures``-th failed attempt (1-based), ``exc`` being that failure.

    >>> retry_wait(RetryPolicy(initial_wait=0.5, jitter=0.0), 3)
    2.0
    >>> retry_wait(RetryPolicy(max_wait=4), 1, HTTPStatusError("x", status=429, retry_after=9.0))
    4.0
    """
    after = getattr(exc, "retry_after", None)
    if isinstance(after, int | float):
        return float(min(after, policy.max_wait))
    backoff = policy.initial_wait * 2 ** (failures - 1)
    return min(backoff + random.uniform(0, policy.jitter), policy.max_wait)


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure that may pass (a :class:`~toolmend.ModelError` with ``retryable``)."""
    return isinstance(exc, ModelError) and exc.retryable


class _WaitRetryAfter(wait_base):
    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        return retry_wait(self.policy, retry_state.attempt_number, exc)


def retrying(policy: RetryPolicy) -> AsyncRetrying:
    """A tenacity ``AsyncRetrying`` for ``policy``; the last failure is re-raised as it was.

    For callers that retry arbitrary work under the same policy. :class:`~toolmend.models.Model`
    itself runs the same schedule in a plain loop (:func:`retry_wait`): setting up a tenacity
    iteration costs about 40 µs of CPU per request even when nothing fails, a measurable share
    of a request at hundreds of requests per second."""
    return AsyncRetrying(
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=_WaitRetryAfter(policy),
        retry=retry_if_exception(is_retryable),
        reraise=True,
    )
