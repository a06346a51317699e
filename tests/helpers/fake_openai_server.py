"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It is asyncio-based (HTTP/1.1 with keep-alive, a bare ``asyncio.Protocol``) so it
sustains many concurrent slow requests. Answers come from a handler — a function of the decoded
request body returning a :class:`Reply` — and can be told to misbehave: be slow, return 429 with
``Retry-After``, 500, hang past the client's timeout, drop the connection or send broken JSON.

In a test (a thread)::

    server = FakeOpenAIServer(handler=lambda body: Reply(text="hi")).start()
    server.base_url   # http://127.0.0.1:<port>/v1
    server.fail_next("sample-3", Reply(status=429, headers={"Retry-After": "0"}))
    server.stop()

As a process (for the throughput benchmark)::

    python tests/helpers/fake_openai_server.py --latency 0.1   # prints "PORT <n>", serves until killed
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FakeOpenAIServer", "Reply", "echo_handler", "last_user_text"]


@dataclass
class Reply:
    """What the server does for one request."""

    text: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None
    """``[{"name": ..., "arguments": <str or dict>, "id": optional}]``; strings are sent as they are."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    """A raw body to send instead of the generated JSON (e.g. broken JSON)."""
    delay: float = 0.0
    drop: bool = False
    """Close the connection without answering (after ``delay``)."""
    usage: tuple[int, int] | None = None
    """(prompt_tokens, completion_tokens); default: word counts of the request and the text."""
    finish_reason: str = "stop"


Handler = Callable[[dict[str, Any]], Reply]


def last_user_text(body: dict[str, Any]) -> str:
    """The content of the last user message of a request body."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            return str(m["content"])
    return ""


def echo_handler(body: dict[str, Any]) -> Reply:
    """Answers ``"<model>: <last user text>"``."""
    return Reply(text=f"{body.get('model')}: {last_user_text(body)}")


def _words(body: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])


class FakeOpenAIServer:
    """See the module docstring. ``latency`` is added to every reply's own ``delay``."""

    def __init__(
        self,
        handler: Handler = echo_handler,
        *,
        latency: float = 0.0,
        keep_bodies: bool = True,
        parse_tool_calls: bool = False,
        port: int = 0,
    ) -> None:
        self.handler = handler
        self.parse_tool_calls = parse_tool_calls
        """Act like ``transformers serve`` / vLLM with a tool parser: ``<tool_call>{json}</tool_call>``
        blocks leave ``content`` for ``message.tool_calls`` (tools in the request or not), and a
        block that is not JSON makes the server answer 500, as ``transformers serve`` does."""
        self.latency = latency
        self.models: list[dict[str, Any]] | None = None
        """What ``GET /models`` lists (its ``data``); ``None``: that path is a 404."""
        self.keep_bodies = keep_bodies
        self.bodies: list[dict[str, Any]] = []
        self.requests = 0
        self.by_model: Counter[str] = Counter()
        self.in_flight = 0
        self.peak_in_flight = 0
        self._faults: list[tuple[str, list[Reply]]] = []
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self.port = port
        """0 until started for a free port; a fixed one for a page that names it (tests/test_docs_blocks.py)."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, match: str, *replies: Reply) -> None:
        """Requests whose last user message contains ``match`` get ``replies`` first, in order."""
        with self._lock:
            self._faults.append((match, list(replies)))

    def _reply_for(self, body: dict[str, Any]) -> Reply:
        text = last_user_text(body)
        with self._lock:
            for match, queue in self._faults:
                if queue and match in text:
                    return queue.pop(0)
        return self.handler(body)

    # --- HTTP ---------------------------------------------------------------------------------
    # A bare asyncio.Protocol with timer callbacks, not streams and a task per request: in the
    # throughput benchmark the server shares two cores with the client, so its CPU per request
    # (about 0.1 ms here, against 0.17 ms for the streams version) is part of what is measured.
    def _handle(self, conn: _Connection, method: str, path: str, raw: bytes) -> None:
        if method == "GET" and path.rstrip("/").endswith("/models") and self.models is not None:
            conn.respond(200, json.dumps({"object": "list", "data": self.models}).encode(), {})
            return
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            conn.respond(404, b'{"error": "not found"}', {})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            conn.respond(400, b'{"error": "bad json"}', {})
            return
        self.requests += 1
        self.by_model[str(body.get("model"))] += 1
        if self.keep_bodies:
            self.bodies.append(body)
        try:
            reply = self._reply_for(body)
        except Exception as exc:  # a test's handler failed: say so instead of hanging the client
            conn.respond(500, json.dumps({"error": f"handler raised {exc!r}"}).encode(), {})
            return
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        delay = self.latency + reply.delay
        if delay:
            conn.pending = asyncio.get_running_loop().call_later(delay, self._complete, conn, body, reply)
        else:
            self._complete(conn, body, reply)

    def _complete(self, conn: _Connection, body: dict[str, Any], reply: Reply) -> None:
        conn.pending = None
        self.in_flight -= 1
        if reply.drop:
            conn.abort()
            return
        if self.parse_tool_calls and reply.body is None and reply.status < 400:
            try:
                reply = _server_parsed(reply)
            except ValueError as exc:
                conn.respond(500, json.dumps({"error": {"message": str(exc)}}).encode(), {})
                return
        payload = reply.body if reply.body is not None else self._payload(body, reply)
        conn.respond(reply.status, payload, reply.headers)

    @staticmethod
    def _payload(body: dict[str, Any], reply: Reply) -> bytes:
        if reply.status >= 400:
            return json.dumps({"error": {"message": f"status {reply.status}"}}).encode()
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.get("id", f"call_{i}"),
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": c["arguments"]
                        if isinstance(c["arguments"], str)
                        else json.dumps(c["arguments"]),
                    },
                }
                for i, c in enumerate(reply.tool_calls)
            ]
        prompt, completion = reply.usage or (_words(body), len((reply.text or "").split()))
        return json.dumps(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        ).encode()

    # --- lifecycle ----------------------------------------------------------------------------
    async def serve(self, ready: Callable[[int], None] | None = None) -> None:
        """Serve until :meth:`stop` (or forever when run as a process)."""
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Connection(self), "127.0.0.1", self.port, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        if ready is not None:
            ready(self.port)
        try:
            await self._stop.wait()
        finally:
            server.close()
            for conn in list(self._connections):
                conn.abort()
            await server.wait_closed()

    def start(self) -> FakeOpenAIServer:
        """Serve from a background thread; returns once the port is bound."""
        started = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.serve(lambda _port: started.set()))
                loop.run_until_complete(_cancel_rest())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai-server", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)


_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def _server_parsed(reply: Reply) -> Reply:
    """``reply`` as a tool-parsing server returns it (see ``FakeOpenAIServer.parse_tool_calls``)."""
    text = reply.text or ""
    blocks = _TOOL_CALL.findall(text)
    if not blocks:
        return reply
    calls = list(reply.tool_calls or [])
    for block in blocks:
        try:
            value = json.loads(block)
            calls.append({"name": value["name"], "arguments": value.get("arguments", {})})
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"could not parse region as JSON: {block[:80]!r}") from exc
    rest = _TOOL_CALL.sub("", text).strip()
    return dataclasses.replace(reply, text=rest or None, tool_calls=calls)


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: requests are parsed from the buffer and answered in order."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False
        self.pending: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._connections.discard(self)
        self.transport = None
        if self.pending is not None:
            # The client gave up (its timeout) while the reply was still due.
            self.pending.cancel()
            self.pending = None
            self.server.in_flight -= 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next_request()

    def _next_request(self) -> None:
        if self.busy:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        try:
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                key, _, value = line.partition(":")
                if key.strip().lower() == "content-length":
                    length = int(value)
        except ValueError:
            self.abort()
            return
        start = end + 4
        if len(self.buffer) < start + length:
            return
        raw = bytes(self.buffer[start : start + length])
        del self.buffer[: start + length]
        self.busy = True
        self.server._handle(self, method, path, raw)

    def respond(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
        if self.transport is None:
            return
        head = [f"HTTP/1.1 {status} X", "Content-Type: application/json", f"Content-Length: {len(payload)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        self.busy = False
        self._next_request()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


async def _cancel_rest() -> None:
    # Connections still open (keep-alive, a reply still sleeping) end with the server.
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for t in rest:
        t.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply")
    args = parser.parse_args()
    server = FakeOpenAIServer(latency=args.latency, keep_bodies=False)

    def ready(port: int) -> None:
        print(f"PORT {port}", flush=True)

    try:
        asyncio.run(server.serve(ready))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
