"""The proxy's side of the upstream model server: one pooled aiohttp session, retries on 429 and
5xx (honouring ``Retry-After``) with exponential backoff, and timeouts that always end a request.

Every failure ends as an :class:`UpstreamError` carrying the status the client should see: the
upstream's own status for an HTTP error, 504 for a timeout, 502 for a dropped connection or a
body that is not JSON.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from toolmend._errors import ModelError

__all__ = ["RETRY_STATUS", "Upstream", "UpstreamError", "UpstreamReply", "guard_transport", "iter_sse"]

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
"""Statuses worth another try (the set LiteLLM and Portkey retry by default)."""

# Hop-by-hop and body-framing headers are the proxy's own business on each side.
_DROP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
                   "host", "authorization", "accept-encoding"})  # fmt: skip


class UpstreamError(ModelError):
    """The upstream did not give a usable answer; ``status`` is what the client gets, ``body`` the
    upstream's own error object when it sent one."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retryable: bool = False,
        body: Any = None,
        retry_after: float | None = None,
        kind: str = "upstream_error",
    ) -> None:
        super().__init__(message, retryable=retryable, status=status)
        self.status: int = status
        self.body = body
        self.retry_after = retry_after
        self.kind = kind


@dataclass(slots=True)
class UpstreamReply:
    """A complete non-streamed answer: status, headers and the raw bytes (kept for pass-through)."""

    status: int
    headers: Mapping[str, str]
    raw: bytes
    attempts: int = 1

    def json(self) -> Any:
        """The body as JSON, or a 502 :class:`UpstreamError`."""
        try:
            return json.loads(self.raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UpstreamError(
                f"the upstream sent a body that is not JSON ({exc})", status=502, kind="upstream_invalid_json"
            ) from None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, when.timestamp() - time.time()) if when is not None else None


class Upstream:
    """One upstream server (``base_url`` ending in ``/v1`` or the like)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        read_timeout: float | None = None,
        retries: int = 2,
        backoff: float = 0.5,
        max_wait: float = 20.0,
        limit: int = 0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = aiohttp.ClientTimeout(
            total=timeout, sock_connect=connect_timeout, sock_read=read_timeout or timeout
        )
        self.retries = retries
        self.backoff = backoff
        self.max_wait = max_wait
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """Open the connection pool (inside the running loop)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit, ttl_dns_cache=300),
                timeout=self.timeout,
                auto_decompress=True,
            )

    async def close(self) -> None:
        """Close the pool."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "Upstream.start() was not awaited"
        return self._session

    def headers(self, incoming: Mapping[str, str] | None) -> dict[str, str]:
        """Headers for the upstream: the client's own (minus hop-by-hop ones and toolmend's), and
        the upstream key: the configured one, else the client's bearer token."""
        out = {
            k: v
            for k, v in (incoming or {}).items()
            if k.lower() not in _DROP and not k.lower().startswith("x-toolmend")
        }
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        elif incoming is not None and incoming.get("Authorization"):
            out["Authorization"] = incoming["Authorization"]
        out["Content-Type"] = "application/json"
        return out

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        hinted = getattr(exc, "retry_after", None)
        if hinted is not None:
            return float(min(hinted, self.max_wait))
        base = self.backoff * 2 ** (state.attempt_number - 1)
        return float(min(self.max_wait, base * (0.5 + random.random())))

    def _retrying(self) -> AsyncRetrying:
        return AsyncRetrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, UpstreamError) and e.retryable),
            reraise=True,
        )

    async def _error(self, resp: aiohttp.ClientResponse) -> UpstreamError:
        raw = await resp.read()
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        detail = body.get("error") if isinstance(body, dict) else None
        message = (detail.get("message") if isinstance(detail, dict) else None) or raw.decode(
            errors="replace"
        )[:500]
        return UpstreamError(
            f"upstream answered {resp.status}: {message}".rstrip(": "),
            status=resp.status,
            retryable=resp.status in RETRY_STATUS,
            body=body,
            retry_after=_retry_after(resp.headers),
        )

    async def post(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str] | None
    ) -> UpstreamReply:
        """POST a JSON body and read the whole answer (retrying what is worth retrying)."""
        data = json.dumps(body).encode()
        hdrs = self.headers(headers)
        attempts = 0
        async for attempt in self._retrying():
            with attempt:
                attempts += 1
                async with (
                    guard_transport(),
                    self.session.post(self.base_url + path, data=data, headers=hdrs) as resp,
                ):
                    if resp.status >= 400:
                        raise await self._error(resp)
                    raw = await resp.read()
                    return UpstreamReply(resp.status, resp.headers, raw, attempts)
        raise UpstreamError("the upstream was not tried", status=502)  # pragma: no cover - tenacity re-raises

    async def get(self, path: str, headers: Mapping[str, str] | None) -> UpstreamReply:
        """GET ``path`` once (``/models``); errors are passed on as they are."""
        async with (
            guard_transport(),
            self.session.get(self.base_url + path, headers=self.headers(headers)) as resp,
        ):
            return UpstreamReply(resp.status, resp.headers, await resp.read())

    async def open_stream(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str] | None
    ) -> aiohttp.ClientResponse:
        """POST a streaming request and return the open response once it says 200 (errors before
        the first byte are retried like :meth:`post`). The caller closes it."""
        data = json.dumps(body).encode()
        hdrs = self.headers(headers)
        async for attempt in self._retrying():
            with attempt:
                async with guard_transport():
                    resp = await self.session.post(self.base_url + path, data=data, headers=hdrs)
                    if resp.status >= 400:
                        try:
                            raise await self._error(resp)
                        finally:
                            resp.release()
                    return resp
        raise UpstreamError("the upstream was not tried", status=502)  # pragma: no cover - tenacity re-raises


class guard_transport:  # noqa: N801 - used as a context manager
    """Transport failures as :class:`UpstreamError` (timeouts 504, the rest 502; both retryable)."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        if exc is None or isinstance(exc, UpstreamError):
            return
        if isinstance(exc, asyncio.TimeoutError | aiohttp.ServerTimeoutError):
            raise UpstreamError("the upstream did not answer in time", status=504, retryable=True,
                                kind="upstream_timeout") from exc  # fmt: skip
        if isinstance(exc, aiohttp.ClientError):
            raise UpstreamError(f"the upstream connection failed: {exc or type(exc).__name__}", status=502,
                                retryable=True, kind="upstream_connection") from exc  # fmt: skip


async def iter_sse(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The ``data`` payloads of a server-sent-event stream, as raw bytes (``[DONE]`` included).

    A timeout or a dropped connection mid-stream raises :class:`UpstreamError`.
    """
    data: list[bytes] = []
    async with guard_transport():
        async for line in resp.content:
            line = line.rstrip(b"\r\n")
            if not line:
                if data:
                    yield b"\n".join(data)
                    data = []
                continue
            if line.startswith(b"data:"):
                data.append(line[6:] if line[5:6] == b" " else line[5:])
        if data:
            yield b"\n".join(data)
