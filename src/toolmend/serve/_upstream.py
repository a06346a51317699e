"""The proxy's side of the upstream model server: one pooled session, retries on 429 and 5xx
(honouring a usable ``Retry-After``) with exponential backoff, and timeouts that always end a
request. Session, retry policy, header parsing and the retry loop are :mod:`toolmend._http`'s.

Every failure ends as an :class:`UpstreamError` carrying the status the client should see: the
upstream's own status for an HTTP error, 504 for a timeout, 502 for a dropped connection or a
body that is not JSON.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import aiohttp

from toolmend._errors import ModelError
from toolmend._http import (
    RetryPolicy,
    call_with_retries,
    client_session,
    client_timeout,
    parse_retry_after,
    retryable_status,
    timeout_hint,
)
from toolmend.serve import _json

_T = TypeVar("_T")

__all__ = [
    "Upstream",
    "UpstreamError",
    "UpstreamReply",
    "guard_transport",
    "iter_sse",
    "public_url",
    "read_capped",
    "redact",
]

# Hop-by-hop and body-framing headers are the proxy's own business on each side.
_DROP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
                   "host", "authorization", "accept-encoding", "proxy-authorization"})  # fmt: skip
# What a client sends to prove who it is upstream: none of it goes on once the proxy has its own
# upstream credentials (a key, or a user and password in the upstream URL).
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization", "x-api-key", "api-key"})
_REDACTED = "[redacted]"


def public_url(url: str) -> str:
    """``url`` without its ``user:password@``: how the upstream is shown in ``/healthz``, logs,
    errors and trace manifests.

    >>> public_url("http://user:secret@gpu:8000/v1"), public_url("http://gpu:8000/v1")
    ('http://gpu:8000/v1', 'http://gpu:8000/v1')
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def redact(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (text, or JSON data) with every secret in ``secrets`` replaced; secrets shorter
    than 4 characters are not looked for (they would mangle ordinary text and protect nothing).

    >>> redact({"error": {"message": "bad key sk-abc123"}}, ["sk-abc123"])
    {'error': {'message': 'bad key [redacted]'}}
    """
    keys = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
    if not keys:
        return value
    pattern = re.compile("|".join(re.escape(k) for k in keys))

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return pattern.sub(_REDACTED, v)
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


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
            return _json.loads(self.raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UpstreamError(
                f"the upstream sent a body that is not JSON ({exc})", status=502, kind="upstream_invalid_json"
            ) from None


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
        max_bytes: int = 64 * 2**20,
    ) -> None:
        parts = urlsplit(base_url)
        # Credentials in the URL are sent as Basic auth (when no key is configured) and are never
        # part of a URL that is shown or requested.
        self.basic = (
            "Basic "
            + base64.b64encode(
                f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
            ).decode()
            if parts.username is not None or parts.password is not None
            else None
        )
        self.secrets = tuple(s for s in (api_key, unquote(parts.password or "") or None, parts.password) if s)
        """What the proxy itself holds and must never show: its upstream key, the URL's password."""
        self.base_url = public_url(base_url).rstrip("/")
        self.api_key = api_key
        self.timeout = client_timeout(total=timeout, connect=connect_timeout, read=read_timeout or timeout)
        self.retries = retries
        self.policy = RetryPolicy(
            max_retries=retries, initial_wait=backoff, max_wait=max_wait, jitter=backoff
        )
        self._limit = limit
        self.max_bytes = max_bytes
        """What one answer may hold after decompression (an upstream gzip bomb is a 502, read no
        further than this)."""
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """Open the connection pool (inside the running loop)."""
        if self._session is None:
            self._session = client_session(limit=self._limit, timeout=self.timeout)

    async def close(self) -> None:
        """Close the pool."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "Upstream.start() was not awaited"
        return self._session

    def headers(
        self, incoming: Mapping[str, str] | None, key_header: str = "authorization"
    ) -> dict[str, str]:
        """Headers for the upstream: the client's own (minus hop-by-hop ones and toolmend's), and
        the upstream key: the configured one, else the URL's user and password, else the client's
        bearer token. With credentials of its own, the proxy forwards none of the client's.
        ``key_header="x-api-key"``: the configured key goes as Anthropic's ``x-api-key`` too (the
        Messages servers read one or the other: Anthropic's SDK sends a bearer token, older clients
        and some servers use ``x-api-key``)."""
        own = bool(self.api_key or self.basic)
        out = {
            k: v
            for k, v in (incoming or {}).items()
            if k.lower() not in _DROP
            and not k.lower().startswith("x-toolmend")
            and not (own and k.lower() in CREDENTIAL_HEADERS)
        }
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
            if key_header == "x-api-key":
                out["x-api-key"] = self.api_key
        elif self.basic:
            out["Authorization"] = self.basic
        elif incoming is not None and incoming.get("Authorization"):
            out["Authorization"] = incoming["Authorization"]
        out["Content-Type"] = "application/json"
        return out

    async def _retrying(self, once: Callable[[], Awaitable[_T]]) -> tuple[_T, int]:
        """``once()`` and how many tries it took, re-tried while the error is retryable."""
        failures: list[ModelError] = []
        return await call_with_retries(once, self.policy, failures), len(failures) + 1

    async def _error(self, resp: aiohttp.ClientResponse) -> UpstreamError:
        raw = await read_capped(resp, self.max_bytes)
        try:
            body = _json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        detail = body.get("error") if isinstance(body, dict) else None
        message = (detail.get("message") if isinstance(detail, dict) else None) or raw.decode(
            errors="replace"
        )[:500]
        return UpstreamError(
            f"upstream answered {resp.status}: {message}".rstrip(": "),
            status=resp.status,
            retryable=retryable_status(resp.status),
            body=body,
            retry_after=parse_retry_after(resp.headers),
        )

    async def post(
        self,
        path: str,
        body: Mapping[str, Any] | bytes,
        headers: Mapping[str, str] | None,
        key_header: str = "authorization",
    ) -> UpstreamReply:
        """POST a JSON body (an object, or its bytes as the client sent them) and read the whole
        answer (retrying what is worth retrying); ``key_header`` as in :meth:`headers`."""
        data = _json.dumps(body) if not isinstance(body, bytes) else body
        hdrs = self.headers(headers, key_header)

        async def once() -> tuple[aiohttp.ClientResponse, bytes]:
            async with (
                guard_transport(self.base_url),
                self.session.post(self.base_url + path, data=data, headers=hdrs) as resp,
            ):
                if resp.status >= 400:
                    raise await self._error(resp)
                return resp, await read_capped(resp, self.max_bytes)

        (resp, raw), attempts = await self._retrying(once)
        return UpstreamReply(resp.status, resp.headers, raw, attempts)

    async def get(self, path: str, headers: Mapping[str, str] | None) -> UpstreamReply:
        """GET ``path`` once (``/models``); errors are passed on as they are."""
        async with (
            guard_transport(self.base_url),
            self.session.get(self.base_url + path, headers=self.headers(headers)) as resp,
        ):
            return UpstreamReply(resp.status, resp.headers, await read_capped(resp, self.max_bytes))

    async def open_stream(
        self,
        path: str,
        body: Mapping[str, Any] | bytes,
        headers: Mapping[str, str] | None,
        key_header: str = "authorization",
    ) -> aiohttp.ClientResponse:
        """POST a streaming request and return the open response once it says 200 (errors before
        the first byte are retried like :meth:`post`). The caller closes it."""
        data = _json.dumps(body) if not isinstance(body, bytes) else body
        hdrs = self.headers(headers, key_header)

        async def once() -> aiohttp.ClientResponse:
            async with guard_transport(self.base_url):
                resp = await self.session.post(self.base_url + path, data=data, headers=hdrs)
                if resp.status >= 400:
                    try:
                        raise await self._error(resp)
                    finally:
                        resp.release()
                return resp

        return (await self._retrying(once))[0]


class guard_transport:  # noqa: N801 - used as a context manager
    """Transport failures as :class:`UpstreamError` (timeouts 504, the rest 502; both retryable).
    With the upstream's ``url``, a time-out of a server on this machine says it may serve one
    request at a time."""

    __slots__ = ("url",)

    def __init__(self, url: str = "") -> None:
        self.url = url

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        if exc is None or isinstance(exc, UpstreamError):
            return
        if isinstance(exc, asyncio.TimeoutError | aiohttp.ServerTimeoutError):
            hint = timeout_hint(self.url, fewer="sending fewer requests at once") if self.url else ""
            raise UpstreamError(f"the upstream did not answer in time{hint}", status=504, retryable=True,
                                kind="upstream_timeout") from exc  # fmt: skip
        if isinstance(exc, aiohttp.ClientError):
            raise UpstreamError(f"the upstream connection failed: {exc or type(exc).__name__}", status=502,
                                retryable=True, kind="upstream_connection") from exc  # fmt: skip


async def read_capped(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body of ``resp`` (decompressed), or a 502 :class:`UpstreamError` as soon as it
    passes ``limit`` bytes: aiohttp decompresses as it reads, so memory stays within the limit."""
    out = bytearray()
    async with guard_transport():
        async for piece in resp.content.iter_any():
            out += piece
            if len(out) > limit:
                resp.close()
                raise _too_big(limit)
    return bytes(out)


def _too_big(limit: int) -> UpstreamError:
    return UpstreamError(f"the upstream's answer is larger than the proxy's limit of {limit:,} bytes "
                         "(toolmend serve --max-upstream-bytes)", status=502, kind="upstream_too_large")  # fmt: skip


async def iter_sse(resp: aiohttp.ClientResponse, limit: int | None = None) -> AsyncIterator[bytes]:
    """The ``data`` payloads of a server-sent-event stream, as raw bytes (``[DONE]`` included).

    The body is read as it arrives (one await per network read, not one per line) and split
    into events by :func:`sse_events`. A timeout or a dropped connection mid-stream raises
    :class:`UpstreamError`, and so does a stream past ``limit`` bytes in all (decompressed).
    """
    async with guard_transport():
        async for event in sse_events(resp, limit):
            data = _event_data(event)
            if data is not None:
                yield data


async def sse_events(resp: aiohttp.ClientResponse, limit: int | None = None) -> AsyncIterator[bytes]:
    """The events of a server-sent-event body as they arrive, each as its lines joined by ``\\n``:
    ``\\r\\n`` and ``\\r`` line ends count as ``\\n``, as the SSE format says. Past ``limit``
    bytes in all (decompressed), an :class:`UpstreamError`."""
    buf = b""
    total = 0
    cr = False  # a piece ended in "\r": it may be the first half of "\r\n"
    async for piece in resp.content.iter_any():
        total += len(piece)
        if limit is not None and total > limit:
            raise _too_big(limit)
        if cr:
            piece = b"\r" + piece
        cr = piece.endswith(b"\r")
        if cr:
            piece = piece[:-1]
        if b"\r" in piece:
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf += piece
        if b"\n\n" not in buf:
            continue
        *events, buf = buf.split(b"\n\n")
        for event in events:
            if event:
                yield event
    if buf.strip():
        yield buf


def _event_data(event: bytes) -> bytes | None:
    """The joined ``data:`` lines of one event (None when it has none: a comment, a keep-alive)."""
    if event.startswith(b"data: ") and b"\n" not in event:
        return event[6:]  # the common case: one data line
    data = [
        line[6:] if line[5:6] == b" " else line[5:]
        for line in event.split(b"\n")
        if line.startswith(b"data:")
    ]
    return b"\n".join(data) if data else None


# -- answer shapes ---------------------------------------------------------------------------------
# What the proxy and every OpenAI client read of an answer: a value of another type there is the
# upstream's fault, a 502 naming the field, not a crash in the proxy or in the client's SDK.


def check_completion(data: Any) -> None:
    """Raise a 502 :class:`UpstreamError` when ``data`` is not a chat completion's shape.

    >>> check_completion({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})
    >>> check_completion({"choices": [{"message": "hi"}]})
    Traceback (most recent call last):
    ...
    toolmend.serve._upstream.UpstreamError: the upstream's answer is malformed: choices[0].message must be an object, got str
    """
    if not isinstance(data, dict):
        _bad("the answer", "an object", data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        _bad("choices", "a non-empty array", choices)
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            _bad(f"choices[{i}]", "an object", choice)
        _check_message(choice.get("message"), f"choices[{i}].message")


def check_chunk(chunk: dict[str, Any]) -> None:
    """Raise a 502 :class:`UpstreamError` when a stream event (an object) is not a chunk's shape."""
    choices = chunk.get("choices")
    if choices is None:
        return
    if not isinstance(choices, list):
        _bad("choices", "an array", choices, chunk=True)
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            _bad(f"choices[{i}]", "an object", choice, chunk=True)
        _check_message(choice.get("delta"), f"choices[{i}].delta", chunk=True)


def _check_message(message: Any, where: str, *, chunk: bool = False) -> None:
    if message is None:
        return
    if not isinstance(message, dict):
        _bad(where, "an object", message, chunk=chunk)
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        _bad(f"{where}.content", "a string or null", content, chunk=chunk)
    calls = message.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        _bad(f"{where}.tool_calls", "an array", calls, chunk=chunk)
    for j, c in enumerate(calls):
        if not isinstance(c, dict):
            _bad(f"{where}.tool_calls[{j}]", "an object", c, chunk=chunk)
        fn = c.get("function")
        if fn is not None and not isinstance(fn, dict):
            _bad(f"{where}.tool_calls[{j}].function", "an object", fn, chunk=chunk)
        name = fn.get("name") if isinstance(fn, dict) else None
        if name is not None and not isinstance(name, str):
            _bad(f"{where}.tool_calls[{j}].function.name", "a string", name, chunk=chunk)


def _bad(where: str, expected: str, got: Any, *, chunk: bool = False) -> Any:
    what = "the upstream sent a malformed stream event" if chunk else "the upstream's answer is malformed"
    raise UpstreamError(f"{what}: {where} must be {expected}, got {type(got).__name__}", status=502,
                        kind="upstream_invalid")  # fmt: skip
