"""A scripted Anthropic Messages upstream on 127.0.0.1 (``POST /v1/messages``, aiohttp.web in a
thread), for the ``/v1/messages`` tests and benchmarks/proxy_overhead.py.

Each request takes the next :class:`~scripted_upstream.Scene` (the last one repeats): a JSON
answer, a stream of events (each written as ``event: <type>`` and ``data: <json>``, as
Anthropic's API does), an error status, raw bytes, or a dropped connection. Every request body
and its headers are kept.

As a process (for benchmarks/proxy_overhead.py)::

    python tests/serve/messages_upstream.py [--port 0]   # prints "PORT <n>"; clean calls, streamed or not
    python tests/serve/messages_upstream.py --script answers.json   # these answers, in order
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

if "scripted_upstream" not in sys.modules:  # run as a process: load the sibling module by path
    _spec = importlib.util.spec_from_file_location(
        "scripted_upstream", Path(__file__).with_name("scripted_upstream.py")
    )
    assert _spec is not None and _spec.loader is not None
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["scripted_upstream"] = _mod
    _spec.loader.exec_module(_mod)

from scripted_upstream import AppThread, Scene  # noqa: E402

__all__ = ["MessagesUpstream", "events", "message", "text", "tool_use"]


def text(s: str) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": s}


def tool_use(name: str, input: dict[str, Any] | str, id: str = "toolu_1") -> dict[str, Any]:
    """A tool_use block (``input`` a string: the raw JSON text a stream would carry)."""
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def message(
    *blocks: dict[str, Any], stop: str | None = None, usage: tuple[int, int] = (10, 5)
) -> dict[str, Any]:
    """A Messages answer of ``blocks`` (``stop``: tool_use when a block is one, else end_turn)."""
    calls = any(b["type"] == "tool_use" for b in blocks)
    return {"id": "msg_up", "type": "message", "role": "assistant", "model": "scripted", "content": list(blocks),
            "stop_reason": stop or ("tool_use" if calls else "end_turn"), "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}  # fmt: skip


def events(*blocks: dict[str, Any], stop: str | None = None, usage: tuple[int, int] = (10, 5),
           pieces: int = 3, end: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """The stream of ``blocks`` as Anthropic sends it: message_start, a ping, each block as
    start / deltas / stop (a tool's input JSON text cut into ``pieces`` fragments, text in two),
    message_delta and (``end``) message_stop."""
    whole = message(*blocks, stop=stop, usage=usage)
    out: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**whole, "content": [], "stop_reason": None,
                                              "usage": {"input_tokens": usage[0], "output_tokens": 1}}},
        {"type": "ping"},
    ]  # fmt: skip
    for i, b in enumerate(blocks):
        if b["type"] == "tool_use":
            raw = b["input"] if isinstance(b["input"], str) else json.dumps(b["input"])
            out.append({"type": "content_block_start", "index": i, "content_block": {**b, "input": {}}})
            size = max(1, -(-len(raw) // pieces))
            for k in range(0, len(raw), size):
                out.append({"type": "content_block_delta", "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": raw[k : k + size]}})  # fmt: skip
        else:
            out.append(
                {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}
            )
            half = len(b["text"]) // 2
            for part in (b["text"][:half], b["text"][half:]):
                if part:
                    out.append({"type": "content_block_delta", "index": i,
                                "delta": {"type": "text_delta", "text": part}})  # fmt: skip
        out.append({"type": "content_block_stop", "index": i})
    out.append({"type": "message_delta", "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage[1]}})  # fmt: skip
    if end:
        out.append({"type": "message_stop"})
    return out


class MessagesUpstream:
    """See the module docstring. ``handler`` (optional) picks the scene from the request body."""

    def __init__(self, *script: Scene, handler: Callable[[dict[str, Any]], Scene] | None = None) -> None:
        self.script = list(script)
        self.handler = handler
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.sent: list[bytes] = []
        self.cancelled = 0
        """Each answer's bytes as this server wrote them (a stream: all its events)."""
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count)
        self.thread = AppThread(app)

    def start(self) -> MessagesUpstream:
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

    async def _count(self, request: web.Request) -> web.Response:
        """A token count: the request body's length in bytes, so a test can tell it was this one."""
        raw = await request.read()
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        return web.json_response({"input_tokens": len(raw)})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.bodies.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        scene = self._next(body)
        if scene.delay:
            await asyncio.sleep(scene.delay)
        if scene.drop and scene.chunks is None:
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError
        if scene.chunks is None:
            raw = scene.body if isinstance(scene.body, bytes) else json.dumps(scene.body).encode()
            self.sent.append(raw)
            return web.Response(
                body=raw, status=scene.status, headers=scene.headers, content_type="application/json"
            )
        resp = web.StreamResponse(
            status=scene.status, headers={"Content-Type": "text/event-stream", **scene.headers}
        )
        await resp.prepare(request)
        written = []
        try:
            for event in scene.chunks:
                if scene.chunk_delay:
                    await asyncio.sleep(scene.chunk_delay)
                if isinstance(event, bytes):
                    frame = b"event: x\ndata: " + event + b"\n\n"
                else:
                    frame = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                written.append(frame)
                await resp.write(frame)
        except (asyncio.CancelledError, ConnectionError):
            self.cancelled += 1  # the proxy went away mid-stream
            raise
        self.sent.append(b"".join(written))
        if scene.drop:
            assert request.transport is not None
            request.transport.close()
            return resp
        await resp.write_eof()
        return resp


def _bench_scene(body: dict[str, Any]) -> Scene:
    """A clean answer for the benchmark: one valid call, its id carrying the last user message
    (the request's marker), streamed or not as asked."""
    mark = str(body["messages"][-1].get("content", ""))
    block = tool_use("get_weather", {"city": "Oslo", "days": 3}, id=f"toolu_{mark}")
    if body.get("stream"):
        return Scene(chunks=events(block))
    return Scene(body=message(block))


def _scripted(path: Path) -> Callable[[dict[str, Any]], Scene]:
    """Answers read from ``path`` (a JSON array of Messages answers), one per request in order
    (the last repeats), each streamed when the request asks for a stream."""
    answers = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(answers, list) or not answers:
        raise SystemExit(f"{path}: expected a non-empty JSON array of Messages answers")

    def scene(body: dict[str, Any]) -> Scene:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if body.get("stream"):
            u = answer.get("usage") or {}
            usage = (int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0))
            return Scene(chunks=events(*answer["content"], stop=answer.get("stop_reason"), usage=usage))
        return Scene(body=answer)

    return scene


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--script", type=Path, help="answer from this JSON array of Messages answers, in order"
    )
    args = parser.parse_args()
    upstream = MessagesUpstream(handler=_scripted(args.script) if args.script else _bench_scene)

    class _Discard(list):  # type: ignore[type-arg]
        def append(self, _item: Any) -> None:
            return None

    upstream.bodies, upstream.headers, upstream.sent = _Discard(), _Discard(), _Discard()

    async def serve() -> None:
        runner = web.AppRunner(upstream.thread.app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"PORT {port}", flush=True)
        while True:
            await asyncio.sleep(3600)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
