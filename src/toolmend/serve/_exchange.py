"""One request on its way through the proxy, whatever its protocol: :class:`Exchange` holds what
the chat-completions (:mod:`toolmend.serve._app`), Responses (:mod:`toolmend.serve._responses`)
and Messages (:mod:`toolmend.serve._anthropic`) exchanges share, and each of them says only what
its protocol does differently.

Shared: reading and admitting the request within the limits (:meth:`Exchange.handle`), the
upstream call and its metrics, the guard's verdict on a chat-shaped view of the request
(:attr:`Exchange.view`), the passthrough of an answer without tools, the answer the client gets
when the upstream fails or the guard gives up, a stream's start, its shaped end after a fault of
the proxy's own and the connection's return to the pool, and the request's metrics, conversation
and trace record once it is over. A protocol gives its upstream path, how it reads an answer
(:meth:`Exchange.check`, :meth:`Exchange.original_of`, :meth:`Exchange.answer_of`), how a changed
answer is written (:meth:`Exchange.decided`), how a stream is relayed (``_relay``) and how an
error is shaped.

>>> verdict_dict(None)
{}
>>> comment_line(Verdict(outcome="clean", content="hi", tool_calls=[], finish_reason="stop"))[:30]
b': x-toolmend-outcome=clean x-t'
>>> mime({"Content-Type": "application/json; charset=utf-8"})
'application/json'
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

from aiohttp import web

from toolmend.guard import SESSION_HEADER, Conversation
from toolmend.serve import _json as fastjson
from toolmend.serve._budget import check_depth, check_tools, judge_within, read_body
from toolmend.serve._protocol import RequestError, openai_error, parse_body, tool_names
from toolmend.serve._traces import trace_record
from toolmend.serve._upstream import UpstreamError, UpstreamReply, iter_sse, read_capped
from toolmend.serve._verdict import Answer, Verdict

if TYPE_CHECKING:
    from toolmend.serve._app import ServeConfig, _Proxy

__all__ = ["Exchange", "comment_line", "internal_error", "json_response", "mime", "verdict_dict"]

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
log = logging.getLogger("toolmend.serve")


def json_response(status: int, obj: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    """``obj`` as a JSON answer with ``status``."""
    return web.Response(status=status, body=fastjson.dumps(obj), content_type="application/json",
                        headers=dict(headers or {}))  # fmt: skip


def mime(headers: Mapping[str, str]) -> str:
    """The media type of a ``Content-Type`` header (JSON when there is none)."""
    return (headers.get("Content-Type") or "application/json").split(";")[0].strip()


def comment_line(verdict: Verdict) -> bytes:
    """The ``x-toolmend-*`` values as an SSE comment: a stream's headers left before the answer
    was known, and clients skip comment lines."""
    return (": " + " ".join(f"{k}={v}" for k, v in verdict.headers().items()) + "\n\n").encode()


def internal_error(exc: BaseException) -> dict[str, Any]:
    """The OpenAI-shaped 500 for a fault of the proxy's own (its log has the traceback)."""
    return openai_error(f"toolmend serve failed on this request ({type(exc).__name__}); the proxy's log "
                        "has the details", type="internal_error", code=500)  # fmt: skip


def verdict_dict(v: Verdict | None) -> dict[str, Any]:
    """A verdict as a trace records it (the upstream answers it holds are recorded apart)."""
    if v is None:
        return {}
    out = asdict(v)
    out.pop("upstream", None)
    return out


def event_json(data: bytes) -> Any:
    """A stream event's JSON; a 502 :class:`UpstreamError` when it is not JSON."""
    try:
        return fastjson.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UpstreamError("the upstream sent a stream event that is not JSON", status=502,
                            kind="upstream_invalid_json") from None  # fmt: skip


def incomplete() -> UpstreamError:
    """The error for a stream that ended before its answer did."""
    return UpstreamError("the upstream stream ended before the answer was complete", status=502,
                         kind="upstream_incomplete")  # fmt: skip


class Exchange:
    """One request on its way through (see the module docstring); a subclass per protocol."""

    path: ClassVar[str]
    """The upstream endpoint, below the upstream's base URL."""
    key_header: ClassVar[str] = "authorization"
    """The header the protocol's clients send their key in (never forwarded when the proxy has a
    key of its own)."""
    stream_kind: ClassVar[str] = "a stream"
    """How the proxy's log names this protocol's streams."""
    untyped_is_json: ClassVar[bool] = True
    """Whether a stream's answer without a ``Content-Type`` is read as one JSON body."""

    def __init__(
        self, proxy: _Proxy, request: web.Request, body: dict[str, Any], started: float, raw: bytes
    ) -> None:
        self.proxy = proxy
        self.request = request
        self.body = body
        """The request as the client sent it, parsed."""
        self.raw = raw
        """The request as the client sent it: forwarded as it is (it is valid, and parsing it
        again costs CPU in proportion to the conversation's length)."""
        self.started = started
        self.view = self.chat_view(body)
        """The request in the chat shape the guard reads (and traces and conversations keep)."""
        self.is_stream = bool(body.get("stream"))
        self.outcome = "error"
        self.status = 200
        self.verdict: Verdict | None = None
        self.raw_upstream: Any = None
        self.original: dict[str, Any] | None = None
        self.final: dict[str, Any] | None = None
        self.conversation: Conversation | None = None
        """The request's conversation, once :meth:`decide` has found it."""
        self.incoming = proxy._incoming(request, self.key_header)
        """The client's headers, as the upstream may see them."""
        self.guarded = self.guards()
        self.rescue = self.guarded and self.tool_choice() != "none" and not proxy.config.shadow

    @property
    def config(self) -> ServeConfig:
        return self.proxy.config

    # -- what a protocol says ----------------------------------------------------------------

    @classmethod
    def admit(cls, raw: bytes, config: ServeConfig) -> dict[str, Any]:
        """The request in ``raw``, parsed and validated within the limits (a budget step)."""
        body = parse_body(raw)
        check_depth(body, config.limits)
        check_tools(body.get("tools"), config.limits)
        cls.validate(body, config)
        return body

    @staticmethod
    def validate(body: dict[str, Any], config: ServeConfig) -> None:
        """Raise :class:`RequestError` for a request of this protocol the proxy cannot forward or
        guard, naming the field."""
        raise NotImplementedError

    @staticmethod
    def refusal(exc: RequestError) -> dict[str, Any]:
        """The client's error for a request the proxy refuses."""
        return exc.body()

    def chat_view(self, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def guards(self) -> bool:
        """Whether the guard judges the answer (the request offers tools)."""
        return bool(tool_names(self.view))

    def tool_choice(self) -> Any:
        return self.view.get("tool_choice")

    def check(self, data: Any) -> None:
        """Raise a 502 :class:`UpstreamError` when ``data`` is not this protocol's answer."""
        raise NotImplementedError

    def original_of(self, data: Any) -> dict[str, Any]:
        """The upstream's answer as the chat assistant message traces record."""
        raise NotImplementedError

    def answer_of(self, data: Any) -> Answer:
        """The upstream's (non-streamed) answer as the guard judges it."""
        raise NotImplementedError

    def decided(self, data: Any, answer: Answer, verdict: Verdict) -> tuple[dict[str, Any], dict[str, Any]]:
        """A changed verdict on ``data``: the client's answer, and the message traces record."""
        raise NotImplementedError

    async def reask(self, extra: list[dict[str, Any]]) -> dict[str, Any]:
        """A hidden, non-streamed re-ask with ``extra`` (chat messages); the answer as a chat
        completion."""
        raise NotImplementedError

    def error_body(self, exc: UpstreamError) -> dict[str, Any]:
        """The client's error for ``exc``, with no credential in it."""
        return self.proxy.error_body(exc, self.request)

    def internal_error_body(self, exc: BaseException) -> dict[str, Any]:
        return internal_error(exc)

    def gave_up_body(self, verdict: Verdict) -> Mapping[str, Any]:
        """The client's error when the guard gives up on the answer."""
        assert verdict.error is not None
        return verdict.error

    def trace_request(self) -> dict[str, Any]:
        return self.view

    async def _events(self, upstream: Any) -> AsyncIterator[bytes]:
        """The upstream's stream events; a server that ignored ``stream`` and sent one JSON body
        is read as the stream that body stands for (:meth:`events_of`)."""
        given = upstream.headers.get("Content-Type")
        if mime(upstream.headers) != "application/json" or (not given and not self.untyped_is_json):
            async for data in iter_sse(upstream, self.config.limits.max_upstream_bytes):
                yield data
            return
        raw = await read_capped(upstream, self.config.limits.max_upstream_bytes)
        for event in self.events_of(UpstreamReply(upstream.status, upstream.headers, raw).json()):
            yield event

    def events_of(self, data: Any) -> list[bytes]:
        """A whole (non-streamed) answer as the stream events it stands for."""
        raise NotImplementedError

    async def _relay(self, upstream: Any, response: web.StreamResponse, t: float) -> None:
        raise NotImplementedError

    async def _end_with_error(self, response: web.StreamResponse, error: Mapping[str, Any]) -> None:
        """End a started stream with ``error``, so that every client's reader stops."""
        raise NotImplementedError

    # -- the exchange ------------------------------------------------------------------------

    @classmethod
    async def handle(cls, proxy: _Proxy, request: web.Request) -> web.StreamResponse:
        """Answer ``request``: admitted within the limits, then streamed or not as it asks."""
        started = time.perf_counter()
        try:
            raw = await read_body(request, proxy.config.limits)
            body = await proxy.budget.run(cls.admit, raw, proxy.config, what="the request")
        except RequestError as exc:
            proxy.metrics.inc("toolmend_bad_requests_total", status=str(exc.status))
            return json_response(exc.status, cls.refusal(exc))
        ex = cls(proxy, request, body, started, raw)
        try:
            return await (ex.stream() if body.get("stream") else ex.complete())
        except asyncio.CancelledError:
            proxy.metrics.inc("toolmend_client_disconnects_total")
            ex.outcome = "client_disconnected"
            raise
        finally:
            ex.record()

    async def decide(self, answer: Answer) -> Verdict:
        t = time.perf_counter()
        config = self.config
        # The chat view's turns, so that a conversation is known by the same key on every route.
        self.conversation = self.proxy.conversations.for_request(
            self.view["messages"], session=self.request.headers.get(SESSION_HEADER)
        )
        verdict = await judge_within(self.proxy.budget, self.view, answer, self.reask, policy=config.policy,
                                     shadow=config.shadow, strict=config.strict,
                                     conversation=self.conversation)  # fmt: skip
        self.proxy.metrics.observe("toolmend_guard_seconds", time.perf_counter() - t)
        self.verdict, self.outcome = verdict, verdict.outcome
        return verdict

    def _failed(self, exc: UpstreamError) -> web.Response:
        self.outcome, self.status = exc.kind, exc.status
        self.proxy.metrics.inc("toolmend_upstream_errors_total", status=str(exc.status))
        return json_response(exc.status, self.error_body(exc))

    # -- non-streaming ------------------------------------------------------------------------

    async def complete(self) -> web.Response:
        proxy = self.proxy
        t = time.perf_counter()
        try:
            reply = await proxy.upstream.post(self.path, self.raw, self.incoming, self.key_header)
            data = reply.json()
            self.check(data)
        except UpstreamError as exc:
            return self._failed(exc)
        proxy.metrics.observe("toolmend_upstream_seconds", time.perf_counter() - t, stream="false")
        if reply.attempts > 1:
            proxy.metrics.inc("toolmend_upstream_retries_total", reply.attempts - 1)
        self.raw_upstream = data
        self.original = self.original_of(data)
        if not self.guarded:
            self.outcome, self.final = "passthrough", self.original
            return web.Response(body=reply.raw, content_type=mime(reply.headers),
                                headers={"x-toolmend-outcome": "passthrough"})  # fmt: skip
        answer = self.answer_of(data)
        try:
            verdict = await self.decide(answer)
        except UpstreamError as exc:
            return self._failed(exc)
        headers = verdict.headers()
        if verdict.error is not None:
            self.status = 422
            return json_response(422, self.gave_up_body(verdict), headers)
        if not verdict.changed:
            self.final = self.original
            return web.Response(body=reply.raw, content_type=mime(reply.headers), headers=headers)
        out, self.final = self.decided(data, answer, verdict)
        return json_response(200, out, headers)

    # -- streaming ------------------------------------------------------------------------------

    async def stream(self) -> web.StreamResponse:
        proxy = self.proxy
        t = time.perf_counter()
        try:
            upstream = await proxy.upstream.open_stream(self.path, self.raw, self.incoming, self.key_header)
        except UpstreamError as exc:
            return self._failed(exc)
        response = web.StreamResponse(status=200, headers=SSE_HEADERS)
        clean = False
        try:
            await response.prepare(self.request)
            await self._relay(upstream, response, t)
            clean = self.status == 200
        except (ConnectionResetError, ConnectionError):
            # The client went away: closing the upstream response cancels the upstream request.
            proxy.metrics.inc("toolmend_client_disconnects_total")
            self.outcome = "client_disconnected"
        except Exception as exc:  # a fault of the proxy's own: the client still gets a shaped end
            log.exception("toolmend serve: internal error in %s", self.stream_kind)
            self.outcome, self.status = "internal_error", 500
            with contextlib.suppress(Exception):
                await self._end_with_error(response, self.internal_error_body(exc))
        finally:
            if clean:
                # The client has its answer; read the body's end so the connection goes back to
                # the pool (a new connection per stream costs milliseconds).
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(1.0):  # no task per stream, as wait_for makes
                        await read_capped(upstream, self.config.limits.max_upstream_bytes)
                upstream.release()
            else:
                upstream.close()
        return response

    async def _stream_failed(self, response: web.StreamResponse, exc: UpstreamError) -> None:
        self.outcome, self.status = exc.kind, exc.status
        self.proxy.metrics.inc("toolmend_upstream_errors_total", status=str(exc.status))
        await self._end_with_error(response, self.error_body(exc))

    async def _judged(
        self, response: web.StreamResponse, answer: Answer, tail: bytes = b""
    ) -> Verdict | None:
        """The verdict on a streamed answer that the client is still owed; ``None`` when the
        stream has been ended here: an answer the proxy does not hold back (passed through, in
        shadow mode annotated; ``tail`` closes it), an upstream that failed a re-ask, or an
        answer the guard gave up on."""
        if not self.guarded or self.config.shadow:
            self.outcome, self.final = "passthrough", self.original
            if self.guarded:  # shadow: decide, annotate, change nothing
                await response.write(comment_line(await self.decide(answer)))
            if tail:
                await response.write(tail)
            await response.write_eof()
            return None
        try:
            verdict = await self.decide(answer)
        except UpstreamError as exc:
            await self._stream_failed(response, exc)
            return None
        if verdict.error is not None:
            self.status = 422
            await response.write(comment_line(verdict))
            await self._end_with_error(response, self.gave_up_body(verdict))
            return None
        return verdict

    # -- bookkeeping ----------------------------------------------------------------------------

    def record(self) -> None:
        proxy = self.proxy
        seconds = time.perf_counter() - self.started
        if self.conversation is not None and self.status == 200:
            proxy.conversations.remember(self.view["messages"], self.final, self.conversation)
        v = self.verdict
        proxy.metrics.count_request(stream=self.is_stream, outcome=self.outcome, seconds=seconds, verdict=v)
        if proxy.traces is None:
            return
        sample_id = self.request.headers.get("x-toolmend-sample-id") or "req-" + secrets.token_hex(8)
        proxy.traces.write(
            trace_record(
                sample_id=sample_id,
                request=self.trace_request(),
                upstream=[self.raw_upstream, *(v.upstream if v is not None else [])],
                original=self.original,
                final=self.final if self.status == 200 else None,
                outcome=self.outcome,
                status=self.status,
                verdict=verdict_dict(v),
                stream=self.is_stream,
                seconds=seconds,
            )
        )
