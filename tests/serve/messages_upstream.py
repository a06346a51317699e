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
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from scripted_upstream import Scene, Scripted

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


class MessagesUpstream(Scripted):
    """See the module docstring. ``handler`` (optional) picks the scene from the request body."""

    def __init__(self, *script: Scene, handler: Callable[[dict[str, Any]], Scene] | None = None) -> None:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count)
        super().__init__(app, script, handler)

    def frame(self, item: Any) -> bytes:
        """An event as Anthropic's API writes it (raw bytes: the data of an event of type ``x``)."""
        if isinstance(item, bytes):
            return b"event: x\ndata: " + item + b"\n\n"
        return f"event: {item['type']}\ndata: {json.dumps(item)}\n\n".encode()

    async def _count(self, request: web.Request) -> web.Response:
        """A token count: the request body's length in bytes, so a test can tell it was this one."""
        raw = await request.read()
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        return web.json_response({"input_tokens": len(raw)})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.bodies.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        return await self.play(request, self._next(body))


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
    MessagesUpstream(handler=_scripted(args.script) if args.script else _bench_scene).serve_forever(args.port)


if __name__ == "__main__":
    main()
