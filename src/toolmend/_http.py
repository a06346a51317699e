"""toolmend's one HTTP client stack: the aiohttp session factory, the retry policy, the
``Retry-After`` parser, the retry loop and the breaker that stops a run whose server died.

``models/`` (the OpenAI-compatible backend) and ``serve/`` (the proxy's upstream) both go through
here, so a header both read is read one way, and a retry both make is scheduled one way::

    session = client_session(limit=16, timeout=client_timeout(total=None, connect=30, read=120))
    policy = RetryPolicy(max_retries=3, initial_wait=0.5, max_wait=8)
    failures: list[ModelError] = []
    answer = await call_with_retries(lambda: send(session), policy, failures)

Only failures that may pass are retried: a :class:`~toolmend.ModelError` with ``retryable=True``
(408/409/425/429, 5xx, timeouts, dropped connections). Semantic retries (re-asking a model whose
tool call was invalid) belong to the strategies, not here.

>>> parse_retry_after({"Retry-After": "3"})
3.0
>>> parse_retry_after({"Retry-After": "NaN"}) is None  # unusable: the backoff schedule applies
True
>>> retry_wait(RetryPolicy(initial_wait=0.5, jitter=0.0), 3)
2.0
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import math
import random
import re
import ssl
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Collection, Mapping
from datetime import UTC
from functools import cache
from typing import TYPE_CHECKING, TypeVar

import certifi
from pydantic import BaseModel, ConfigDict

from toolmend._errors import ConfigError, EndpointError, ModelError

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "MAX_RETRY_AFTER_S",
    "RETRYABLE_STATUS",
    "Breaker",
    "ConnectError",
    "HTTPStatusError",
    "ModelFailure",
    "Replica",
    "Replicas",
    "RetryPolicy",
    "call_with_retries",
    "client_session",
    "client_timeout",
    "is_deterministic",
    "is_loopback",
    "is_replica_failure",
    "is_retryable",
    "parse_retry_after",
    "retry_wait",
    "retryable_status",
    "timeout_hint",
]

_T = TypeVar("_T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
"""Statuses worth another try; any other 5xx is retried as well (:func:`retryable_status`)."""

MAX_RETRY_AFTER_S = 3600.0
"""The longest wait a ``Retry-After`` can ask for; longer requests are cut to this (a policy's
``max_wait`` usually cuts them further)."""

# Overload and gateway answers pass with time, however often they repeat; never the model's doing.
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 502, 503, 504, 520, 522, 524, 529})

# RFC 9110 delta-seconds is digits only; a fraction is accepted because some servers send one.
# Anything else (signs, exponents, hex, "inf", "NaN") is not a number of seconds.
_SECONDS = re.compile(r"\s*([0-9]{1,20})(\.[0-9]{1,9})?\s*")


def retryable_status(status: int) -> bool:
    """Whether an HTTP ``status`` may pass when the same request is sent again.

    >>> retryable_status(429), retryable_status(507), retryable_status(404)
    (True, True, False)
    """
    return status in RETRYABLE_STATUS or status >= 500


class HTTPStatusError(ModelError):
    """A server answered with an error status; ``retry_after`` is its requested wait in seconds."""

    def __init__(self, message: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(message, retryable=retryable_status(status), status=status)
        self.retry_after = retry_after


class ConnectError(ModelError):
    """No connection could be opened (refused, unreachable): retryable, and counted by a
    :class:`Breaker`, since a server that refuses every connection is gone, not busy."""

    def __init__(self, message: str, *, url: str, reason: str) -> None:
        super().__init__(message, retryable=True)
        self.url = url
        self.reason = reason


class ModelFailure(ModelError):
    """The server failed the same request the same way on every attempt: an answer the model
    caused (e.g. ``transformers serve`` answering 500 "could not parse region as JSON" to a
    malformed ``<tool_call>``), to be scored as the model's failure rather than excluded."""


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
    at ``max_wait``; a usable ``Retry-After`` from the server replaces it (also capped at
    ``max_wait``).

    >>> RetryPolicy(max_retries=3).max_retries
    3
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = 5
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0


def _seconds(raw: str) -> float | None:
    match = _SECONDS.fullmatch(raw)
    if match is None:
        return None
    return min(float(match.group(1) + (match.group(2) or "")), MAX_RETRY_AFTER_S)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    for key, value in headers.items():  # a plain dict spelled another way (aiohttp's is case-blind)
        if key.lower() == name:
            return value
    return None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait that the server asked for, from ``retry-after-ms`` (milliseconds, as
    OpenAI's servers send it) or ``Retry-After`` (delta-seconds or an HTTP date); ``None`` when it
    asked for nothing usable.

    Garbage (``soon``, ``0x10``), ``NaN``, infinities, exponents and negative numbers are ignored,
    so the caller's backoff schedule applies; a date in the past means 0; any wait is cut to
    :data:`MAX_RETRY_AFTER_S`. ``now`` (a Unix time) is for tests.

    >>> parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"})
    0.25
    >>> parse_retry_after({"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"})
    0.0
    >>> parse_retry_after({"Retry-After": "-5"}), parse_retry_after({"Retry-After": "1e9"})
    (None, None)
    """
    raw_ms = _header(headers, "retry-after-ms")
    if raw_ms is not None:
        ms = _seconds(raw_ms)
        if ms is not None:
            return min(ms / 1000, MAX_RETRY_AFTER_S)
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    seconds = _seconds(raw)
    if seconds is not None:
        return seconds
    if not any(c.isalpha() for c in raw):
        return None  # "-3", "1.5e3": numbers the grammar does not allow, not dates
    try:
        when = email.utils.parsedate_to_datetime(raw)
        stamp = when.timestamp() if when.tzinfo is not None else when.replace(tzinfo=UTC).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    wait = stamp - (time.time() if now is None else now)
    if not math.isfinite(wait):
        return None
    return min(max(0.0, wait), MAX_RETRY_AFTER_S)


def retry_wait(policy: RetryPolicy, failures: int, exc: BaseException | None = None) -> float:
    """Seconds to wait after the ``failures``-th failed attempt (1-based), ``exc`` being that failure.

    >>> retry_wait(RetryPolicy(max_wait=4), 1, HTTPStatusError("x", status=429, retry_after=9.0))
    4.0
    """
    after = getattr(exc, "retry_after", None)
    if isinstance(after, int | float) and math.isfinite(after) and after >= 0:
        return float(min(after, policy.max_wait))
    backoff = policy.initial_wait * 2 ** min(failures - 1, 62)
    return float(min(backoff + random.uniform(0, policy.jitter), policy.max_wait))


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure that may pass (a :class:`~toolmend.ModelError` with ``retryable``)."""
    return isinstance(exc, ModelError) and exc.retryable


class Breaker:
    """Stops every request to a server that refused ``threshold`` connections in a row.

    Shared by all requests of one client: a connection failure (:class:`ConnectError`) counts,
    any answer from the server (an error status included) resets the count. Once open it stays
    open: each request, including those waiting for their next try, fails at once with an
    :class:`~toolmend.EndpointError` naming the URL, so a run stops with one error instead of
    retrying every remaining sample against a dead server.

    >>> b = Breaker("http://127.0.0.1:9/v1", threshold=2)
    >>> b.check()  # closed: nothing happens
    """

    def __init__(self, url: str, *, threshold: int = 4) -> None:
        self.url = url
        self.threshold = max(1, threshold)
        self.failures = 0
        self.reason = ""

    @property
    def open(self) -> bool:
        """Whether requests are refused."""
        return self.failures >= self.threshold

    def check(self) -> None:
        """Raise the breaker's :class:`~toolmend.EndpointError` when it is open."""
        if self.failures >= self.threshold:
            raise EndpointError(
                self.url,
                f"the server stopped accepting connections ({self.failures} attempts in a row failed: "
                f"{self.reason}); is it still running? Requests already answered are kept",
            )

    def record(self, exc: BaseException | None) -> None:
        """Count the outcome of one attempt: ``None`` (an answer) or an :class:`HTTPStatusError`
        resets the count, a :class:`ConnectError` adds to it; anything else (a time-out, a
        dropped connection) says nothing about whether the server is still there."""
        if isinstance(exc, ConnectError):
            self.failures += 1
            self.reason = exc.reason
        elif (exc is None or isinstance(exc, HTTPStatusError)) and self.failures < self.threshold:
            self.failures = 0


async def call_with_retries(
    attempt: Callable[[], Awaitable[_T]],
    policy: RetryPolicy,
    failures: list[ModelError],
    *,
    breaker: Breaker | None = None,
) -> _T:
    """``await attempt()``, again after each retryable :class:`~toolmend.ModelError` on
    ``policy``'s schedule, at most ``policy.max_retries`` times; the last failure is raised as it
    was. ``failures`` collects every failed attempt (its length is the retry count).

    A plain loop: the happy path is one attempt and costs nothing else (a tenacity iteration cost
    about 40 µs of CPU per request, a measurable share at hundreds of requests per second).
    """
    while True:
        if breaker is not None:
            breaker.check()
        try:
            result = await attempt()
        except ModelError as exc:
            failures.append(exc)
            if breaker is not None:
                breaker.record(exc)
                breaker.check()
            if not exc.retryable or len(failures) > policy.max_retries:
                raise
            await asyncio.sleep(retry_wait(policy, len(failures), exc))
            continue
        if breaker is not None and breaker.failures:
            breaker.record(None)
        return result


# -- replicas ------------------------------------------------------------------------------------


def is_replica_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says a server is unwell rather than that the request was bad: a refused or
    dropped connection, a time-out, or a gateway/overload 5xx (``502``-``504``, ``520``-``529``).
    A plain ``500`` is not: it may be the model's own answer (a malformed call a server could not
    parse), which every replica would give alike.

    >>> is_replica_failure(ConnectError("x", url="u", reason="refused"))
    True
    >>> is_replica_failure(HTTPStatusError("x", status=503)), is_replica_failure(HTTPStatusError("x", status=500))
    (True, False)
    >>> is_replica_failure(ModelError("bad request", retryable=False, status=400))
    False
    """
    if isinstance(exc, ConnectError):
        return True
    if isinstance(exc, HTTPStatusError):
        return exc.status is not None and exc.status > 501
    return isinstance(exc, ModelError) and exc.retryable and exc.status is None


class Replica:
    """One server of a :class:`Replicas` pool: its URL, the requests it has in flight and its
    health (failures in a row, and until when it is out)."""

    def __init__(self, url: str, limit: int) -> None:
        self.url = url
        self.limit = max(1, limit)
        self.in_flight = 0
        self.answered = 0
        self.failures = 0
        self.out_until = 0.0
        self.reason = ""

    def usable(self, now: float) -> bool:
        """Whether it takes a request now: not taken out, and below its connection bound."""
        return now >= self.out_until and self.in_flight < self.limit

    def __repr__(self) -> str:
        return f"Replica({self.url!r}, in_flight={self.in_flight}, failures={self.failures})"


class Replicas:
    """Several servers of one model, each with its own bound on requests in flight; a request goes
    to the usable replica with the fewest outstanding requests (ties: the one listed first).

    A replica that fails (:func:`is_replica_failure`) is taken out for a backoff that doubles with
    each failure in a row (``backoff``'s schedule), and the caller sends the request to another
    replica; an answer puts it back. When every replica has failed ``threshold`` times in a row
    the pool gives up with an :class:`~toolmend.EndpointError` naming them all, as a
    :class:`Breaker` does for one server. A request that finds every replica out or full waits for
    the first one to come back or free a slot.

    >>> pool = Replicas(["http://a/v1", "http://b/v1"], limit=2)
    >>> first, second = asyncio.run(pool.acquire()), asyncio.run(pool.acquire())
    >>> first.url, second.url  # least outstanding: the second request goes to the idle replica
    ('http://a/v1', 'http://b/v1')
    >>> pool.release(first, ConnectError("refused", url="http://a/v1", reason="connection refused"))
    >>> asyncio.run(pool.acquire()).url  # a is out for its backoff; b takes everything meanwhile
    'http://b/v1'
    """

    def __init__(
        self,
        urls: list[str],
        *,
        limit: int,
        threshold: int = 4,
        backoff: RetryPolicy | None = None,
    ) -> None:
        if not urls:
            raise ConfigError("Replicas needs at least one URL")
        self.replicas = [Replica(u, limit) for u in urls]
        self.threshold = max(1, threshold)
        self.backoff = backoff or RetryPolicy(initial_wait=0.5, max_wait=30.0, jitter=0.25)
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def limit(self) -> int:
        """Requests in flight over all replicas."""
        return sum(r.limit for r in self.replicas)

    @property
    def dead(self) -> bool:
        """Whether every replica has failed ``threshold`` times in a row."""
        return all(r.failures >= self.threshold for r in self.replicas)

    def check(self) -> None:
        """Raise the pool's :class:`~toolmend.EndpointError` when every replica is gone."""
        if self.dead:
            listing = "; ".join(f"{r.url} ({r.reason})" for r in self.replicas)
            raise EndpointError(
                ", ".join(r.url for r in self.replicas),
                f"every replica stopped answering ({self.threshold} failures in a row each: {listing}); "
                "are they still running? Requests already answered are kept",
            )

    async def acquire(self, avoid: Collection[str] = ()) -> Replica | None:
        """The replica for the next request, waiting while every one is full or (with nothing to
        ``avoid``) out for its backoff. With ``avoid`` (URLs a request already failed on): ``None``
        when every other replica is out, so that the caller falls back on its own retry schedule."""
        while True:
            self.check()
            now = time.monotonic()
            usable = [r for r in self.replicas if r.usable(now) and r.url not in avoid]
            if usable:
                chosen = min(usable, key=lambda r: r.in_flight)
                chosen.in_flight += 1
                return chosen
            others = [r for r in self.replicas if r.url not in avoid]
            if avoid and all(r.out_until > now for r in others):
                return None
            resting = [r.out_until - now for r in others if r.out_until > now]
            woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(woken)
            try:
                await asyncio.wait_for(woken, timeout=min(resting) if resting else None)
            except TimeoutError:
                pass
            finally:
                if woken in self._waiters:
                    self._waiters.remove(woken)

    def release(self, replica: Replica, exc: BaseException | None, *, counted: bool = True) -> None:
        """Count the outcome of one request on ``replica``: an answer (``None``, or an error that
        is not the server's, such as a 400) puts it back in service; a replica failure takes it
        out for its backoff; ``counted=False`` (a request cancelled) says nothing either way.
        Requests waiting for a replica look again."""
        replica.in_flight = max(0, replica.in_flight - 1)
        if not counted:
            pass
        elif exc is not None and is_replica_failure(exc):
            replica.failures += 1
            replica.reason = getattr(exc, "reason", "") or str(exc).rpartition(": ")[2][:120]
            replica.out_until = time.monotonic() + retry_wait(self.backoff, replica.failures)
        else:
            replica.failures = 0
            replica.out_until = 0.0
            replica.answered += 1
        waiters, self._waiters = self._waiters, []
        for woken in waiters:
            if not woken.done():
                woken.set_result(None)


# -- sessions ------------------------------------------------------------------------------------


@cache
def _ssl_context() -> ssl.SSLContext:
    # Built once: loading certifi's bundle costs milliseconds, and every session shares it.
    return ssl.create_default_context(cafile=certifi.where())


def client_timeout(*, total: float | None, connect: float, read: float | None) -> aiohttp.ClientTimeout:
    """An aiohttp timeout: ``total`` for the whole request (``None``: no bound), ``connect`` for
    opening the socket, ``read`` for the longest silence between two reads.

    >>> client_timeout(total=None, connect=10, read=60).sock_read
    60
    """
    # Imported here, not above: a run that makes no HTTP request (a local model, the checklist
    # critic) should not pay for importing aiohttp (~0.4 s).
    import aiohttp

    return aiohttp.ClientTimeout(total=total, sock_connect=connect, sock_read=read)


def client_session(
    *,
    limit: int,
    timeout: aiohttp.ClientTimeout,
    headers: Mapping[str, str] | None = None,
) -> aiohttp.ClientSession:
    """toolmend's one kind of HTTP session: a pool of ``limit`` connections (0: no bound), TLS
    checked against certifi's bundle, DNS answers kept five minutes. Call it inside the running
    event loop; the caller closes it.

    aiohttp rather than httpx: its pool costs O(1) per request where httpcore scans every pooled
    connection, which showed at hundreds of requests per second.
    """
    import aiohttp

    connector = aiohttp.TCPConnector(limit=limit, ttl_dns_cache=300, ssl=_ssl_context())
    return aiohttp.ClientSession(connector=connector, headers=dict(headers or {}), timeout=timeout)


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (``localhost``, ``127.x.x.x``, ``::1``, ``0.0.0.0``).

    >>> is_loopback("http://127.0.0.1:8080/v1"), is_loopback("https://api.openai.com/v1")
    (True, False)
    """
    try:
        host = (urllib.parse.urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def timeout_hint(url: str, *, connections: int | None = None, fewer: str = "--max-connections 1") -> str:
    """What to add to a time-out's message: for a server on this machine, that it may serve one
    request at a time (llama.cpp-style servers queue the rest, and keep generating for a client
    that gave up), and ``fewer``, how to send fewer requests at once. With ``connections`` 1
    there was no queue, so the advice is a longer timeout instead.

    >>> timeout_hint("https://api.openai.com/v1")
    ''
    >>> timeout_hint("http://localhost:8080/v1", connections=1)
    '; the local server took longer than the timeout for one request: allow it more time or fewer tokens'
    """
    if not is_loopback(url):
        return ""
    if connections is not None and connections <= 1:
        return "; the local server took longer than the timeout for one request: allow it more time or fewer tokens"
    return (
        "; a local server may serve one request at a time and queue the rest past the timeout: "
        f"try {fewer} (or start the server with more parallel slots)"
    )
