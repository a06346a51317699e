"""The proxy server (aiohttp.web): ``/v1/chat/completions`` (streaming and not), ``/v1/responses``
(:mod:`toolmend.serve._responses`), ``/v1/messages`` (Anthropic Messages,
:mod:`toolmend.serve._anthropic`), ``/v1/models``, ``/healthz`` and ``/metrics``. See
:mod:`toolmend.serve` for what it does with each answer.

>>> app = create_app(ServeConfig(upstream="http://127.0.0.1:8000/v1"))
>>> sorted({r.resource.canonical for r in app.router.routes()})  # doctest: +NORMALIZE_WHITESPACE
['/healthz', '/metrics', '/v1/chat/completions', '/v1/messages', '/v1/messages/count_tokens', '/v1/models',
 '/v1/responses']
"""

from __future__ import annotations

import functools
import hmac
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolmend.guard import Conversations, GuardPolicy
from toolmend.serve import _json as fastjson
from toolmend.serve._anthropic import MessagesExchange, anthropic_error, count_tokens_handler
from toolmend.serve._assembler import ContentGate, StreamAssembler
from toolmend.serve._budget import Budget, Limits
from toolmend.serve._exchange import (
    Exchange,
    comment_line,
    event_json,
    incomplete,
    internal_error,
    json_response,
    mime,
)
from toolmend.serve._listen import listen
from toolmend.serve._listen import loopback as _loopback  # noqa: F401 - its old home, where tests import it
from toolmend.serve._listen import server_options as _server_options
from toolmend.serve._metrics import Metrics
from toolmend.serve._protocol import openai_error, validate_request
from toolmend.serve._responses import ResponsesExchange
from toolmend.serve._traces import TraceWriter
from toolmend.serve._upstream import (
    CREDENTIAL_HEADERS,
    Upstream,
    UpstreamError,
    check_chunk,
    check_completion,
    public_url,
    redact,
)
from toolmend.serve._verdict import Answer, Verdict, answer_of

__all__ = ["ServeConfig", "create_app", "run", "server_options"]

_CHAT = "/chat/completions"
_MESSAGES = "/v1/messages"
PROXY: web.AppKey[_Proxy] = web.AppKey("toolmend.proxy")
_CHUNK_KEYS = ("id", "object", "created", "model", "system_fingerprint", "service_tier")
_DONE = b"data: [DONE]\n\n"
_log = logging.getLogger("toolmend.serve")


class ServeConfig(BaseModel):
    """How ``toolmend serve`` runs (the CLI flags, as data)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    upstream: str
    """The upstream's base URL, as an OpenAI client takes it (``http://host:8000/v1``)."""
    host: str = "127.0.0.1"
    port: int = 8700
    policy: GuardPolicy = Field(default_factory=GuardPolicy)
    api_key: str | None = None
    """When set, every ``/v1`` request must carry ``Authorization: Bearer <api_key>``."""
    metrics_auth: bool = False
    """``/metrics`` asks for the same key as ``/v1`` (``--metrics-auth``; it needs ``api_key``).
    Off by default: Prometheus scrapers configured without a key keep working; ``/healthz``
    stays open either way (it tells only that the proxy is up and the upstream's public URL)."""
    upstream_api_key: str | None = None
    """The key sent upstream; without it the client's own bearer token is passed on."""
    traces: Path | None = None
    shadow: bool = False
    strict: bool = False
    timeout: float = 600.0
    """Seconds an upstream request may take in all."""
    read_timeout: float | None = None
    """Seconds the upstream may stay silent (between stream chunks); default: ``timeout``."""
    connect_timeout: float = 10.0
    retries: int = 2
    """Re-sends of a request after 429/5xx or a transport failure (before any byte reached the client)."""
    max_retry_wait: float = 20.0
    extra_fields: frozenset[str] = frozenset()
    limits: Limits = Field(default_factory=Limits)
    """What one request may cost: sizes, nesting, CPU time and how long a client may take to send
    it (:class:`~toolmend.serve._budget.Limits`; docs/serve.md lists them with their flags)."""

    @model_validator(mode="after")
    def _metrics_key(self) -> ServeConfig:
        if self.metrics_auth and not self.api_key:
            raise ValueError("metrics_auth needs api_key (the key /metrics asks for)")
        return self


class _Proxy:
    """The state of one server: upstream pool, metrics, traces."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.conversations = Conversations()
        self.upstream = Upstream(
            config.upstream,
            api_key=config.upstream_api_key,
            timeout=config.timeout,
            read_timeout=config.read_timeout,
            connect_timeout=config.connect_timeout,
            retries=config.retries,
            max_wait=config.max_retry_wait,
            max_bytes=config.limits.max_upstream_bytes,
        )
        self.budget = Budget(config.limits.check_seconds)
        """Every CPU-heavy step of a request runs through it, off the event loop."""
        self.traces = (
            TraceWriter(
                config.traces,
                upstream=public_url(config.upstream),
                shadow=config.shadow,
                strict=config.strict,
                policy=config.policy.model_dump(),
            )  # fmt: skip
            if config.traces is not None
            else None
        )

    # -- plumbing --------------------------------------------------------------------------

    async def start(self, _app: web.Application) -> None:
        await self.upstream.start()

    async def stop(self, _app: web.Application) -> None:
        await self.upstream.close()
        if self.traces is not None:
            self.traces.close()

    @web.middleware
    async def auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        key = self.config.api_key
        guarded = request.path.startswith("/v1/") or (self.config.metrics_auth and request.path == "/metrics")
        if key and guarded:
            given = request.headers.get("Authorization", "")
            if request.path.startswith(_MESSAGES) and not given and request.headers.get("x-api-key"):
                given = "Bearer " + request.headers["x-api-key"]  # how an Anthropic client sends a key
            # A header's bytes that are not UTF-8 arrive as surrogate escapes: they match no key.
            sent = given.encode("utf-8", "surrogateescape") if given.isascii() else b"\0"
            if not hmac.compare_digest(sent, f"Bearer {key}".encode("utf-8", "surrogateescape")):
                self.metrics.inc("toolmend_bad_requests_total", status="401")
                what = (
                    "Incorrect API key provided."
                    if given
                    else "Missing API key: send 'Authorization: Bearer <key>'."
                )
                if request.path.startswith(_MESSAGES):
                    return json_response(401, anthropic_error(what, type="authentication_error"))
                return json_response(401, openai_error(what, code="invalid_api_key"))
        return await handler(request)

    def _incoming(self, request: web.Request, key_header: str = "authorization") -> Mapping[str, str]:
        # With a proxy key, the client's key (a bearer, or the protocol's own header) is ours and
        # never goes upstream.
        if self.config.api_key:
            drop = {"authorization", key_header}
            return {k: v for k, v in request.headers.items() if k.lower() not in drop}
        return request.headers

    # -- endpoints ---------------------------------------------------------------------------

    def secrets(self, request: web.Request) -> list[str]:
        """What an answer to ``request`` must not echo: the proxy's own upstream credentials and
        the credentials the client sent (a bearer token also without its ``Bearer``)."""
        out = list(self.upstream.secrets)
        if self.config.api_key:
            out.append(self.config.api_key)
        for name, value in request.headers.items():
            if name.lower() in CREDENTIAL_HEADERS:
                out.append(value)
                scheme, _, token = value.partition(" ")
                if token and scheme.lower() in ("bearer", "basic"):
                    out.append(token.strip())
        return out

    async def healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "upstream": public_url(self.config.upstream)})

    async def metrics_page(self, _request: web.Request) -> web.Response:
        return web.Response(text=self.metrics.render(), content_type="text/plain", charset="utf-8",
                            headers={"X-Prometheus-Format": "0.0.4"})  # fmt: skip

    async def models(self, request: web.Request) -> web.Response:
        try:
            reply = await self.upstream.get("/models", self._incoming(request))
        except UpstreamError as exc:
            return self._upstream_error(exc, request)
        body = reply.raw
        if reply.status >= 400:
            text = body.decode("utf-8", "replace")
            body = redact(text, self.secrets(request)).encode()
        return web.Response(body=body, status=reply.status, content_type=mime(reply.headers))

    def _upstream_error(self, exc: UpstreamError, request: web.Request) -> web.Response:
        self.metrics.inc("toolmend_upstream_errors_total", status=str(exc.status))
        return json_response(exc.status, self.error_body(exc, request))

    def error_body(self, exc: UpstreamError, request: web.Request) -> dict[str, Any]:
        """The client's error for ``exc``, with no credential in it (an upstream may echo the key
        it was sent in its error message)."""
        return dict(redact(_upstream_error_body(exc), self.secrets(request)))


class _Exchange(Exchange):
    """One chat-completion request on its way through."""

    path = _CHAT

    def __init__(
        self, proxy: _Proxy, request: web.Request, body: dict[str, Any], started: float, raw: bytes
    ) -> None:
        super().__init__(proxy, request, body, started, raw)
        self.sent = body
        """The request as it goes upstream (the client's, unless the proxy takes a field over)."""
        if self.guarded and body.get("tool_choice") == "required" and not proxy.config.shadow:
            # The guard enforces "required" itself (a reply without a call is re-asked or fails per
            # policy); upstreams that cannot take it (llama-cpp-python answers 500) get "auto".
            self.sent = {**body, "tool_choice": "auto"}
            self.raw = fastjson.dumps(self.sent)

    @staticmethod
    def validate(body: dict[str, Any], config: ServeConfig) -> None:
        validate_request(body, config.extra_fields)

    def guards(self) -> bool:
        return super().guards() and (self.body.get("n") or 1) == 1

    async def reask(self, extra: list[dict[str, Any]]) -> dict[str, Any]:
        """A hidden, non-streamed re-ask: the request with ``extra`` messages appended."""
        body = {**self.sent, "messages": [*self.body["messages"], *extra], "stream": False}
        body.pop("stream_options", None)
        reply = await self.proxy.upstream.post(_CHAT, body, self.incoming)
        self.proxy.metrics.inc("toolmend_reasks_total")
        data = reply.json()
        check_completion(data)
        return dict(data)

    # -- non-streaming ------------------------------------------------------------------------

    def check(self, data: Any) -> None:
        check_completion(data)

    def original_of(self, data: Any) -> dict[str, Any]:
        return dict(data["choices"][0].get("message") or {})

    def answer_of(self, data: Any) -> Answer:
        return answer_of(data, self.rescue)

    def decided(self, data: Any, answer: Answer, verdict: Verdict) -> tuple[dict[str, Any], dict[str, Any]]:
        out = dict(data)
        choice = dict(data["choices"][0])
        new = dict(choice.get("message") or {})
        new.update(verdict.message())
        # The legacy field some servers fill beside tool_calls holds the upstream's call, which
        # may be the one the guard rejected: only tool_calls says what the guard handed on.
        new.pop("function_call", None)
        if not verdict.tool_calls:
            new.pop("tool_calls", None)
        choice["message"], choice["finish_reason"] = new, verdict.finish_reason
        out["choices"] = [choice, *data["choices"][1:]]
        _add_usage(out, verdict)
        return out, new

    # -- streaming ------------------------------------------------------------------------------

    def events_of(self, data: Any) -> list[bytes]:
        return [*(fastjson.dumps(chunk) for chunk in _as_chunks(data)), b"[DONE]"]

    async def _relay(self, upstream: Any, response: web.StreamResponse, t: float) -> None:
        proxy = self.proxy
        hold = self.guarded and not self.config.shadow
        gate = ContentGate() if self.rescue else None
        asm = StreamAssembler()
        sent: list[str] = []
        finish: str | None = None
        usage_chunk: dict[str, Any] | None = None
        base: dict[str, Any] = {}
        done = first = False
        try:
            async for data in self._events(upstream):
                if data == b"[DONE]":
                    done = True
                    break
                chunk = event_json(data)
                if not isinstance(chunk, dict):
                    raise UpstreamError(f"the upstream sent a stream event that is a {type(chunk).__name__}, "
                                        "not an object", status=502, kind="upstream_invalid")  # fmt: skip
                if "error" in chunk:
                    detail = chunk.get("error")
                    message = detail.get("message") if isinstance(detail, dict) else str(detail or chunk)
                    raise UpstreamError(f"the upstream stream failed: {message}", status=502, body=chunk)
                check_chunk(chunk)
                if not first:
                    first = True
                    proxy.metrics.observe("toolmend_upstream_seconds", time.perf_counter() - t, stream="true")
                choices = chunk.get("choices") or []
                if not choices:
                    if hold and chunk.get("usage") is not None:
                        usage_chunk = chunk
                        continue
                    await response.write(b"data: " + data + b"\n\n")
                    continue
                base = {k: chunk[k] for k in _CHUNK_KEYS if k in chunk}
                choice = choices[0] if isinstance(choices[0], dict) else {}
                delta = choice.get("delta") or {}
                calls = delta.get("tool_calls")
                fr = choice.get("finish_reason")
                if fr:
                    finish = fr
                if chunk.get("usage") is not None:
                    usage_chunk = {**base, "choices": [], "usage": chunk["usage"]}
                content = delta.get("content")
                if not hold:
                    if calls:
                        asm.add(calls)
                    if isinstance(content, str):
                        sent.append(content)
                    await response.write(b"data: " + data + b"\n\n")
                    continue
                if calls:
                    asm.add(calls)
                out = gate.feed(content) if gate is not None and isinstance(content, str) else content
                if isinstance(out, str):
                    sent.append(out)
                legacy = "function_call" in delta
                if not calls and not fr and not legacy and out == content and chunk.get("usage") is None:
                    await response.write(b"data: " + data + b"\n\n")  # untouched: the same bytes
                    continue
                # A held answer's calls go out once the guard has decided, in tool_calls only: the
                # legacy function_call beside them would show the upstream's call as it came.
                rest = {k: v for k, v in delta.items() if k not in ("tool_calls", "content", "function_call")}
                if out or rest or (content == "" and "role" in delta):
                    new_delta = {**rest, "content": out} if isinstance(out, str) else rest
                    await self._emit(
                        response, {**base, "choices": [{**choice, "delta": new_delta, "finish_reason": None}]}
                    )
        except UpstreamError as exc:
            await self._stream_failed(response, exc)
            return
        if not done and finish is None:
            await self._stream_failed(response, incomplete())
            return
        if gate is not None:
            tail = gate.flush()
            if tail:
                sent.append(tail)
                await self._emit(
                    response,
                    {**base, "choices": [{"index": 0, "delta": {"content": tail}, "finish_reason": None}]},
                )
        answer = Answer(sent="".join(sent), held=gate.held if gate is not None else "",
                        tool_calls=[c.wire() for c in asm.calls()], finish_reason=finish,
                        usage=(usage_chunk or {}).get("usage"))  # fmt: skip
        self.original = {"role": "assistant", "content": answer.content or None,
                         **({"tool_calls": answer.tool_calls} if answer.tool_calls else {})}  # fmt: skip
        self.raw_upstream = {"streamed": self.original, "finish_reason": finish, "usage": answer.usage}
        verdict = await self._judged(response, answer, _DONE)
        if verdict is None:
            return
        already = answer.sent
        # The rest of the answer goes out in one write: one syscall, not one per event.
        events: list[dict[str, Any]] = []
        if verdict.content and verdict.content != already and verdict.content.startswith(already):
            rest = {"content": verdict.content[len(already) :]}
            events.append({**base, "choices": [{"index": 0, "delta": rest, "finish_reason": None}]})
        for i, call in enumerate(verdict.tool_calls):
            delta = {"tool_calls": [{"index": i, **call}]}
            if i == 0 and not already and not verdict.content:
                delta = {"role": "assistant", "content": None, **delta}
            events.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        events.append(
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": verdict.finish_reason}]}
        )
        if usage_chunk is not None:
            _add_usage(usage_chunk, verdict)
            events.append(usage_chunk)
        out = b"".join(b"data: " + fastjson.dumps(c) + b"\n\n" for c in events)
        await response.write(out + comment_line(verdict) + _DONE)
        await response.write_eof()
        self.final = verdict.message()

    async def _end_with_error(self, response: web.StreamResponse, error: Mapping[str, Any]) -> None:
        """End a started stream: the error as an event, then ``[DONE]``, so that every client's
        reader stops (SDKs raise on the error event; others wait for ``[DONE]``)."""
        await response.write(b"data: " + fastjson.dumps(error) + b"\n\n" + _DONE)
        await response.write_eof()

    async def _emit(self, response: web.StreamResponse, obj: Mapping[str, Any]) -> None:
        await response.write(b"data: " + fastjson.dumps(obj) + b"\n\n")


@web.middleware
async def _shaped(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every error answer OpenAI-shaped: aiohttp's own (404, 405, 413, ...) and, as a last resort,
    a fault of the proxy's own (a 500 that says so, logged with its traceback, never sent one)."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        if request.path.startswith(_MESSAGES):
            return json_response(exc.status, anthropic_error(exc.text or exc.reason, type="invalid_request_error"),
                         {k: v for k, v in exc.headers.items() if k.lower() in ("allow", "retry-after")})  # fmt: skip
        return json_response(exc.status, openai_error(exc.text or exc.reason, type="invalid_request_error", code=exc.status),
                     {k: v for k, v in exc.headers.items() if k.lower() in ("allow", "retry-after")})  # fmt: skip
    except Exception as exc:
        _log.exception("toolmend serve: internal error")
        return json_response(500, internal_error(exc))


def _add_usage(obj: dict[str, Any], verdict: Verdict) -> None:
    """Add the hidden re-asks' tokens to ``usage`` and report them apart under ``toolmend``."""
    extra = verdict.reask_usage
    usage = obj.get("usage")
    if verdict.reasks and isinstance(usage, dict):
        usage = dict(usage)
        usage["prompt_tokens"] = int(usage.get("prompt_tokens") or 0) + extra["prompt_tokens"]
        usage["completion_tokens"] = int(usage.get("completion_tokens") or 0) + extra["completion_tokens"]
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        obj["usage"] = usage
    obj["toolmend"] = verdict.summary()


def _upstream_error_body(exc: UpstreamError) -> dict[str, Any]:
    detail = exc.body.get("error") if isinstance(exc.body, dict) else None
    if isinstance(detail, dict) and detail.get("message"):
        # The upstream's own fields win; the ones every OpenAI error has are filled in when missing.
        shaped = {"type": exc.kind, "param": None, "code": exc.status, **detail}
        return {"error": {**shaped, "message": f"upstream error ({exc.status}): {detail['message']}"}}
    return openai_error(str(exc), type=exc.kind, code=exc.status)


def _as_chunks(body: Any) -> list[dict[str, Any]]:
    """A non-streamed completion as the chunks of the same answer."""
    check_completion(body)
    base = {k: body[k] for k in _CHUNK_KEYS if k in body}
    base["object"] = "chat.completion.chunk"
    choice = body["choices"][0]
    message = choice.get("message") or {}
    delta = {"role": "assistant", "content": message.get("content")}
    calls = [{"index": i, **c} for i, c in enumerate(message.get("tool_calls") or [])]
    out = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}]
    if calls:
        out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]})
    out.append(
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason") or "stop"}],
        }
    )
    if body.get("usage") is not None:
        out.append({**base, "choices": [], "usage": body["usage"]})
    return out


def create_app(config: ServeConfig) -> web.Application:
    """The aiohttp application for ``config`` (run it with :func:`run` or any aiohttp runner)."""
    proxy = _Proxy(config)
    app = web.Application(middlewares=[_shaped, proxy.auth], client_max_size=config.limits.max_body_bytes)
    app[PROXY] = proxy
    app.on_startup.append(proxy.start)
    app.on_cleanup.append(proxy.stop)
    app.router.add_post("/v1/chat/completions", functools.partial(_Exchange.handle, proxy))
    app.router.add_post("/v1/responses", functools.partial(ResponsesExchange.handle, proxy))
    app.router.add_post(_MESSAGES, functools.partial(MessagesExchange.handle, proxy))
    app.router.add_post(_MESSAGES + "/count_tokens", count_tokens_handler(proxy))
    app.router.add_get("/v1/models", proxy.models)
    app.router.add_get("/healthz", proxy.healthz)
    app.router.add_get("/metrics", proxy.metrics_page)
    return app


def run(config: ServeConfig, *, print_line: Any = print) -> None:
    """Serve until interrupted. Client disconnects cancel their handler (and so the upstream call)."""
    banner = (f"toolmend serve: http://{config.host}:{config.port}/v1 -> {public_url(config.upstream)}"
              + (" (shadow)" if config.shadow else "") + (" (strict)" if config.strict else ""))  # fmt: skip
    exposed = (f"toolmend serve: warning: listening on {config.host} without a client key: anyone who "
               "can reach this port can use the upstream through it (set --api-key-env)")  # fmt: skip
    listen(create_app(config), host=config.host, port=config.port, limits=config.limits, banner=banner,
           exposed=None if config.api_key else exposed, print_line=print_line)  # fmt: skip


def server_options(config: ServeConfig) -> dict[str, Any]:
    """The aiohttp server settings ``config`` asks for (:func:`toolmend.serve._listen.server_options`)."""
    return _server_options(config.limits)
