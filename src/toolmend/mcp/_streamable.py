"""The streamable-HTTP relay: ``toolmend mcp-guard --upstream http://HOST:PORT/mcp``.

The guard serves ``/mcp`` (POST, GET and DELETE, as MCP's streamable HTTP transport has them)
and forwards each request to the upstream URL with the client's headers (``Mcp-Session-Id``,
``MCP-Protocol-Version``, ``Authorization``, ``Last-Event-ID`` ...). An answer comes back as the
upstream gave it, a JSON body or an event stream relayed event by event; only the messages the
guard changes are rewritten (:class:`~toolmend.mcp.McpSession`). A request is sent upstream once
and never retried, so an accepted ``tools/call`` reaches the server exactly once.

Untrusted input on both sides: the proxy's :class:`~toolmend.serve.Limits` apply (a body past
``max_body_bytes`` or slower than ``body_timeout`` is refused before it is read in full, see
:class:`~toolmend.mcp.McpSession` for the rest), and each message's check (a ``tools/call``
checked, a ``tools/list`` answer's tools compiled) runs as a :class:`~toolmend.serve.Budget` step
off the event loop, so that one hostile client or server does not stall another session. The
messages of one session are checked one at a time, in the order they came.

Sessions: the ``Mcp-Session-Id`` the upstream handed out, else an ``x-toolmend-session``
header, else one shared session (a stateless server without either serves one agent per guard).

>>> app = create_mcp_app("http://127.0.0.1:8000/mcp")
>>> sorted({r.method for r in app.router.routes()} - {"HEAD"})
['DELETE', 'GET', 'POST']
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import urllib.parse
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp import web

from toolmend._http import client_session, client_timeout
from toolmend._jsontext import dumpb, loads
from toolmend.guard import SESSION_HEADER, Conversations, GuardPolicy
from toolmend.mcp._session import INVALID_REQUEST, PARSE_ERROR, McpSession, Step, _error
from toolmend.serve._budget import Budget, BudgetExceeded, Limits, read_body
from toolmend.serve._listen import listen
from toolmend.serve._protocol import RequestError
from toolmend.serve._upstream import sse_events

__all__ = ["MCP_PATH", "create_mcp_app", "run_http", "shown_url"]

MCP_PATH = "/mcp"
_log = logging.getLogger("toolmend.mcp")
RELAY: web.AppKey[_Relay] = web.AppKey("toolmend.mcp.relay")
_SESSION_ID = "mcp-session-id"
# Hop-by-hop headers, the ones the relay sets itself, and Accept-Encoding (the relay reads the
# upstream's JSON, so it asks for it uncompressed).
_DROP_REQUEST = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te",
                           "upgrade", "proxy-authorization", "proxy-connection", "accept-encoding"})  # fmt: skip
_DROP_RESPONSE = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding",
                            "content-encoding", "date", "server"})  # fmt: skip
_INTERNAL_ERROR = -32603


class _Relay:
    """One guard in front of one upstream: the sessions and the connection pool."""

    def __init__(
        self, upstream: str, policy: GuardPolicy, limits: Limits, *, max_sessions: int = 1024
    ) -> None:
        self.upstream = upstream
        self.limits = limits
        self.budget = Budget(limits.check_seconds)
        self.locks: weakref.WeakKeyDictionary[McpSession, asyncio.Lock] = weakref.WeakKeyDictionary()
        self.shown = shown_url(upstream)
        """The upstream as messages and logs show it: without a user or password."""
        self.policy = policy
        self.conversations = Conversations(limit=max_sessions)
        self.sessions: OrderedDict[str, McpSession] = OrderedDict()
        self.max_sessions = max_sessions
        self._http: aiohttp.ClientSession | None = None

    async def start(self, _app: web.Application) -> None:
        # No total bound and no read bound: a tool may run long, and a GET stream stays open.
        self._http = client_session(limit=0, timeout=client_timeout(total=None, connect=10.0, read=None))

    async def stop(self, _app: web.Application) -> None:
        if self._http is not None:
            await self._http.close()

    def session(self, request: web.Request) -> McpSession:
        key = request.headers.get(_SESSION_ID) or request.headers.get(SESSION_HEADER) or "default"
        found = self.sessions.get(key)
        if found is None:
            found = self.sessions[key] = McpSession(self.policy, conversation=self.conversations.get(key),
                                                    label=self.shown, limits=self.limits)  # fmt: skip
            while len(self.sessions) > self.max_sessions:
                self.sessions.popitem(last=False)
        else:
            self.sessions.move_to_end(key)
        return found

    async def from_client(self, session: McpSession, raw: bytes) -> Step:
        """``session.from_client`` as a budget step; past the budget, the session's refusal."""
        async with self._lock(session):
            try:
                return await self.budget.run(session.from_client, raw, what="the client's message")
            except BudgetExceeded:
                _log.warning("toolmend mcp-guard: %s: a message's check ran past %g s of CPU time; refused",
                             self.shown, self.budget.seconds)  # fmt: skip
                return session.too_costly(raw, self.budget.seconds)

    async def from_server(self, session: McpSession, raw: bytes) -> bytes:
        """``session.from_server`` as a budget step; past the budget, ``raw`` unchanged."""
        if not session.waiting:
            return raw
        async with self._lock(session):
            try:
                return await self.budget.run(session.from_server, raw, what="the server's message")
            except BudgetExceeded:
                session.server_too_costly(self.budget.seconds)
                return raw

    def _lock(self, session: McpSession) -> asyncio.Lock:
        lock = self.locks.get(session)
        if lock is None:
            lock = self.locks[session] = asyncio.Lock()
        return lock

    def headers(self, request: web.Request) -> dict[str, str]:
        return {k: v for k, v in request.headers.items()
                if k.lower() not in _DROP_REQUEST and not k.lower().startswith("x-toolmend")}  # fmt: skip

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert self._http is not None
        session = self.session(request)
        body: bytes | None = None
        rid: Any = None
        renamed: str | None = None
        if request.method == "POST":
            try:
                raw = await read_body(request, self.limits)
            except RequestError as exc:
                return web.Response(body=_error(None, INVALID_REQUEST, _guard_words(exc)), status=exc.status,
                                    content_type="application/json")  # fmt: skip
            step = await self.from_client(session, raw)
            if step.reply is not None:
                status = 400 if _code(step.reply) == PARSE_ERROR else 200
                return web.Response(body=step.reply, status=status, content_type="application/json")
            body = step.forward
            rid = _request_id(raw)
            if step.name is not None:
                renamed = step.name
        elif request.method == "DELETE":
            self.sessions.pop(request.headers.get(_SESSION_ID) or "", None)
        try:
            headers = self.headers(request)
            if renamed is not None:
                # Protocol 2026-07-28 repeats the tool's name in Mcp-Name; the server checks the two agree.
                headers = {k: (renamed if k.lower() == "mcp-name" else v) for k, v in headers.items()}
            resp = await self._http.request(request.method, self.upstream, data=body, headers=headers,
                                            allow_redirects=False)  # fmt: skip
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            message = f"toolmend mcp-guard: the upstream MCP server {self.shown} could not be reached ({exc})"
            _log.warning("%s", message)
            return web.Response(body=_error(rid, _INTERNAL_ERROR, message), status=502,
                                content_type="application/json")  # fmt: skip
        try:
            headers = {k: v for k, v in resp.headers.items() if k.lower() not in _DROP_RESPONSE}
            kind = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if kind == "text/event-stream":
                return await self._stream(request, resp, headers, session)
            data = await resp.read()
            if kind == "application/json" and data:
                data = await self.from_server(session, data)
            return web.Response(body=data, status=resp.status, headers=headers)
        finally:
            resp.release()

    async def _stream(
        self,
        request: web.Request,
        resp: aiohttp.ClientResponse,
        headers: Mapping[str, str],
        session: McpSession,
    ) -> web.StreamResponse:
        out = web.StreamResponse(status=resp.status, headers=headers)
        await out.prepare(request)
        try:
            async for event in sse_events(resp):
                await out.write(await self._relay_event(event, session) + b"\n\n")
        except (aiohttp.ClientError, TimeoutError) as exc:
            _log.warning("toolmend mcp-guard: the upstream's event stream broke off (%s)", exc)
        with contextlib.suppress(ConnectionError):
            await out.write_eof()
        return out

    async def _relay_event(self, event: bytes, session: McpSession) -> bytes:
        """One event as the client gets it: unchanged unless the guard rewrote its message."""
        fields = event.split(b"\n")
        data = [f[6:] if f[5:6] == b" " else f[5:] for f in fields if f.startswith(b"data:")]
        if not data:
            return event
        message = b"\n".join(data)
        if not message.strip():
            return event
        out = await self.from_server(session, message)
        if out is message:
            return event
        rest = [f for f in fields if not f.startswith(b"data:")]
        return b"\n".join([*rest, b"data: " + out])


def shown_url(url: str) -> str:
    """``url`` without its ``user:password@``.

    >>> shown_url("http://me:secret@127.0.0.1:8000/mcp")
    'http://127.0.0.1:8000/mcp'
    """
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(an unreadable URL)"
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _code(reply: bytes) -> int | None:
    msg = loads(reply)
    error = msg.get("error") if isinstance(msg, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def _request_id(raw: bytes) -> Any:
    try:
        msg = loads(raw)
    except ValueError:
        return None
    return msg.get("id") if isinstance(msg, dict) else None


def _guard_words(exc: RequestError) -> str:
    """A refusal of the proxy's limits (:func:`~toolmend.serve._budget.read_body`) as the guard
    says it: the same limit and flag, under this command's name."""
    text = str(exc).replace("toolmend serve", "toolmend mcp-guard").replace("the proxy's", "the guard's")
    return f"toolmend mcp-guard: {text}"


def create_mcp_app(
    upstream: str, policy: GuardPolicy | None = None, *, limits: Limits | None = None
) -> web.Application:
    """The aiohttp application that guards ``upstream`` (the upstream's full MCP URL) within
    ``limits`` (the proxy's defaults when ``None``)."""
    limits = limits or Limits()
    relay = _Relay(upstream, policy or GuardPolicy(), limits)
    app = web.Application(client_max_size=limits.max_body_bytes, middlewares=[_shaped])
    app[RELAY] = relay
    app.on_startup.append(relay.start)
    app.on_cleanup.append(relay.stop)
    for method in ("POST", "GET", "DELETE"):
        app.router.add_route(method, MCP_PATH, relay.handle)
    return app


@web.middleware
async def _shaped(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every error a JSON-RPC error: aiohttp's own (404, 405, 413) and, last, the guard's own fault
    (logged with its traceback, never sent)."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        body = dumpb({"jsonrpc": "2.0", "id": None, "error": {"code": -32600,
                      "message": f"toolmend mcp-guard: {exc.status} {exc.reason}: {exc.text or ''}".strip()}})  # fmt: skip
        headers = {k: v for k, v in exc.headers.items() if k.lower() == "allow"}
        return web.Response(body=body, status=exc.status, content_type="application/json", headers=headers)
    except Exception:
        _log.exception("toolmend mcp-guard: internal error")
        body = _error(
            None, _INTERNAL_ERROR, "toolmend mcp-guard failed on this request; its log has the details"
        )
        return web.Response(body=body, status=500, content_type="application/json")


def run_http(
    upstream: str, *, host: str = "127.0.0.1", port: int = 8710, policy: GuardPolicy | None = None,
    print_line: Any = print, limits: Limits | None = None,
) -> None:  # fmt: skip
    """Serve the guard at ``http://host:port/mcp`` until interrupted, as ``toolmend serve`` listens
    (:func:`toolmend.serve._listen.listen`: a connection that has not sent a request's headers
    within ``limits.header_timeout`` is closed; a warning when ``host`` reaches beyond loopback)."""
    limits = limits or Limits()
    exposed = (f"toolmend mcp-guard: warning: listening on {host}: anyone who can reach this port "
               "can call the upstream's tools through it")  # fmt: skip
    listen(create_mcp_app(upstream, policy, limits=limits), host=host, port=port, limits=limits,
           banner=f"toolmend mcp-guard: http://{host}:{port}{MCP_PATH} -> {shown_url(upstream)}",
           exposed=exposed, print_line=print_line)  # fmt: skip
