"""A scripted OpenAI-compatible upstream on 127.0.0.1 (aiohttp.web in a thread), and a runner
that serves any aiohttp app (the proxy) in a thread, so sync and async clients can use both.

Each request takes the next :class:`Scene` of the script (the last one repeats): a JSON answer,
a stream of chunks (with delays, a drop or a stop mid-way), an error status, a raw body, or a
dropped connection. Every request body is kept, and the server counts streams whose client went
away before the end (``cancelled``).

As a process (for benchmarks/proxy_overhead.py)::

    python tests/serve/scripted_upstream.py [--port 0]   # prints "PORT <n>"; clean calls, streamed or not

(each answer after the service time in the request's ``metadata.latency_ms``; none without it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web

__all__ = ["AppThread", "Scene", "Scripted", "ScriptedUpstream", "call", "completion", "stream_of"]


@dataclass
class Scene:
    """What the upstream does for one request."""

    body: Any = None
    """A JSON answer (dict), or raw bytes sent as they are."""
    chunks: list[Any] | None = None
    """A stream: each item a chunk dict, raw bytes (sent as one event's data) or None (a pause)."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunk_delay: float = 0.0
    drop: bool = False
    """Close the connection without an answer (after ``delay``); with ``chunks``: after them."""
    done: bool = True
    """Send ``data: [DONE]`` at the end of a stream."""


def call(name: str, arguments: str | dict[str, Any], id: str | None = None) -> dict[str, Any]:
    """A ``tool_calls`` item; dict arguments are JSON-encoded."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": id or f"call_{name}", "type": "function", "function": {"name": name, "arguments": args}}


def completion(
    content: str | None = None,
    calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: tuple[int, int] = (10, 5),
) -> dict[str, Any]:
    """A chat completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": finish or ("tool_calls" if calls else "stop")}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }  # fmt: skip


def stream_of(
    deltas: list[dict[str, Any]], finish: str | None = "stop", usage: tuple[int, int] | None = (10, 5)
) -> list[Any]:
    """Chunks for ``deltas`` (a role chunk first), a finish chunk, and a usage chunk."""
    base = {
        "id": "chatcmpl-up",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "scripted",
    }
    out: list[Any] = [
        {
            **base,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
        }
    ]
    out += [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    if finish is not None:
        out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage is not None:
        out.append({**base, "choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                                    "total_tokens": sum(usage)}})  # fmt: skip
    return out


class AppThread:
    """Serves an aiohttp app on 127.0.0.1 in a daemon thread (its own event loop)."""

    def __init__(
        self,
        app: web.Application,
        *,
        handler_cancellation: bool = True,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.app = app
        self.options = options or {"handler_cancellation": handler_cancellation, "access_log": None}
        """The runner's settings (a proxy's come from ``toolmend.serve._app.server_options``)."""
        self.port = 0
        self._cancel = handler_cancellation
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._error: BaseException | None = None

    def start(self) -> AppThread:
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(self._serve())
            except BaseException as exc:  # pragma: no cover - surfaced by start()
                self._error = exc
                self._ready.set()
                return
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
            self._loop.close()

        threading.Thread(target=run, daemon=True).start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    async def _serve(self) -> None:
        self._runner = web.AppRunner(self.app, **self.options)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)


class Scripted:
    """What every scripted upstream shares: the script (or a ``handler`` that picks the scene from
    the request body), the server thread, and how a scene is played (:meth:`play`); a subclass
    adds its routes to ``app`` and says how one stream item is framed."""

    def __init__(
        self,
        app: web.Application,
        script: tuple[Scene, ...],
        handler: Callable[[dict[str, Any]], Scene] | None,
    ) -> None:
        self.script = list(script)
        self.handler = handler
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        """Each request's headers as they arrived."""
        self.sent: list[bytes] = []
        """Each answer's bytes as this server wrote them (a stream: all its events)."""
        self.cancelled = 0
        """Answers whose client went away before the end (while "thinking" or mid-stream)."""
        self.finished = 0
        self.thread = AppThread(app)

    def start(self) -> Self:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.thread.stop()

    @property
    def base_url(self) -> str:
        return self.thread.url + "/v1"

    def _next(self, body: dict[str, Any]) -> Scene:
        if self.handler is not None:
            return self.handler(body)
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def frame(self, item: Any) -> bytes:
        """One stream item (a chunk dict or raw bytes) as the bytes of its event."""
        data = item if isinstance(item, bytes) else json.dumps(item).encode()
        return b"data: " + data + b"\n\n"

    async def play(self, request: web.Request, scene: Scene, end: bytes = b"") -> web.StreamResponse:
        """Answer ``request`` as ``scene`` says; a stream's items go out through :meth:`frame`, then
        ``end`` (when ``scene.done``)."""
        if scene.delay:
            try:
                await asyncio.sleep(scene.delay)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        if scene.drop and scene.chunks is None:
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError
        if scene.chunks is None:
            if isinstance(scene.body, bytes):
                self.sent.append(scene.body)
                return web.Response(body=scene.body, status=scene.status, headers=scene.headers,
                                    content_type="application/json")  # fmt: skip
            self.sent.append(json.dumps(scene.body).encode())
            return web.json_response(scene.body, status=scene.status, headers=scene.headers)
        resp = web.StreamResponse(
            status=scene.status, headers={"Content-Type": "text/event-stream", **scene.headers}
        )
        written = []
        try:
            await resp.prepare(request)
            for item in scene.chunks:
                if scene.chunk_delay:
                    await asyncio.sleep(scene.chunk_delay)
                if item is None:
                    await asyncio.sleep(3600)
                written.append(self.frame(item))
                await resp.write(written[-1])
            self.sent.append(b"".join(written))
            if scene.drop:
                assert request.transport is not None
                request.transport.close()
                return resp
            if scene.done and end:
                await resp.write(end)
            await resp.write_eof()
            self.finished += 1
        except (asyncio.CancelledError, ConnectionError):
            self.cancelled += 1
            raise
        return resp

    def serve_forever(self, port: int) -> None:
        """The process form: serve on ``port`` (0: any free one, printed as ``PORT <n>``) until
        interrupted, keeping nothing per request (memory stays flat under a long benchmark)."""
        for name, value in vars(self).items():
            if isinstance(value, list) and name != "script":
                setattr(self, name, _Discard())
            elif isinstance(value, set):
                setattr(self, name, _NoSet())

        async def serve() -> None:
            runner = web.AppRunner(self.thread.app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
            await site.start()
            bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            print(f"PORT {bound}", flush=True)
            while True:
                await asyncio.sleep(3600)

        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve())


class ScriptedUpstream(Scripted):
    """See the module docstring."""

    def __init__(self, *script: Scene, handler: Callable[[dict[str, Any]], Scene] | None = None) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._chat)  # the same scenes, Responses-shaped
        app.router.add_get("/v1/models", self._models)
        super().__init__(app, script, handler)
        self.raw: list[bytes] = []
        """Each request body as the bytes that arrived."""
        self.auth: list[str | None] = []
        self.peers: set[Any] = set()
        self.paths: list[str] = []
        """Each request's path (``/v1/chat/completions``, ``/v1/responses``)."""

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "me"}]}
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.raw.append(raw)
        self.paths.append(request.path)
        body = json.loads(raw)
        self.bodies.append(body)
        self.auth.append(request.headers.get("Authorization"))
        self.headers.append(dict(request.headers))
        self.peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        return await self.play(request, self._next(body), b"data: [DONE]\n\n")


def _bench_scene(body: dict[str, Any]) -> Scene:
    """A clean answer for the benchmark: one valid call when the request has tools, its id taken
    from the last user message, so a client can tell that it got its own answer.

    ``metadata.latency_ms`` (set by the load generator) is the service time a model server would
    take: a non-streamed answer comes after it; a stream sends its first chunk after half of it
    and spreads the other chunks over the rest, as tokens come."""
    if "input" in body:
        return _bench_responses_scene(body)
    mark = str(body["messages"][-1].get("content", ""))
    meta = body.get("metadata")
    latency = float(meta.get("latency_ms", 0)) / 1000 if isinstance(meta, dict) else 0.0
    calls = (
        [call("get_weather", {"city": "Oslo", "days": 3}, id=f"call_{mark}")] if body.get("tools") else None
    )
    if not body.get("stream"):
        return Scene(body=completion(mark if not calls else None, calls), delay=latency)
    deltas: list[dict[str, Any]] = [{"content": mark}] if not calls else [
        {"tool_calls": [{"index": 0, "id": f"call_{mark}", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Oslo", '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"days": 3}'}}]},
    ]  # fmt: skip
    chunks = stream_of(deltas, "tool_calls" if calls else "stop")
    return Scene(chunks=chunks, delay=latency / 2, chunk_delay=latency / 2 / len(chunks))


def _bench_responses_scene(body: dict[str, Any]) -> Scene:
    """:func:`_bench_scene` for ``/v1/responses``: the marker is the request's ``input``, the call's
    ``call_id`` carries it (run as a process only: the helpers are this folder's
    responses_upstream.py, on sys.path when this file is the script)."""
    from responses_upstream import fcall, message, response, stream_events

    mark = str(body["input"])
    meta = body.get("metadata")
    latency = float(meta.get("latency_ms", 0)) / 1000 if isinstance(meta, dict) else 0.0
    item = (
        fcall("get_weather", {"city": "Oslo", "days": 3}, f"call_{mark}")
        if body.get("tools")
        else message(mark)
    )
    answer = response(item)
    if not body.get("stream"):
        return Scene(body=answer, delay=latency)
    events = stream_events(answer)
    return Scene(chunks=events, delay=latency / 2, chunk_delay=latency / 2 / len(events), done=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    ScriptedUpstream(handler=_bench_scene).serve_forever(args.port)


class _Discard(list):  # type: ignore[type-arg]
    def append(self, _item: Any) -> None:
        return None


class _NoSet(set):  # type: ignore[type-arg]
    def add(self, _item: Any) -> None:
        return None


if __name__ == "__main__":
    main()
