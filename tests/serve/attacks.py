"""The hostile requests of the proxy's isolation check, shared by tests/serve/test_isolation.py
and benchmarks/proxy_isolation.py, and the upstream that plays its part in them.

Each :class:`Attack` is what one client sends (a JSON body, or raw bytes on a socket) and, for
attacks carried by the model's answer, what the upstream answers: the upstream reads
``metadata.attack`` of the request and answers accordingly (:func:`scene`); any other request
gets a clean call. The client-side attacks are the ones the proxy must refuse before or while it
works (``expect`` is the status the client gets); the answer-side ones are checked by the guard.

As a process (for the benchmark)::

    python tests/serve/attacks.py [--port 0]   # prints "PORT <n>"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import zlib
from dataclasses import dataclass
from typing import Any

from scripted_upstream import Scene, ScriptedUpstream, call, completion

__all__ = ["ATTACKS", "gzip_bomb", "CLEAN", "Attack", "clean_body", "scene", "send", "upstream"]

CLEAN = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]  # fmt: skip


def clean_body(mark: str = "clean") -> dict[str, Any]:
    """A clean request: one tool, answered with one valid call."""
    return {"model": "m", "messages": [{"role": "user", "content": mark}], "tools": CLEAN}


def _tool(params: dict[str, Any], name: str = "f") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": params}}


def _asking(attack: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": tools,
            "metadata": {"attack": attack}}  # fmt: skip


@dataclass(frozen=True)
class Attack:
    """One hostile request: ``body`` (JSON), or ``raw`` bytes sent as the body after headers that
    declare ``length`` bytes (more than are sent: a half-sent request), or ``head`` (only part of
    the headers). ``expect`` is the status the client gets; 0 means the proxy closes the
    connection without an answer."""

    name: str
    expect: int
    body: dict[str, Any] | None = None
    raw: bytes | None = None
    length: int | None = None
    head: bytes | None = None


_PATTERN = _tool({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}})
_UNIQUE = _tool({"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}})
_PATTERNED = _tool({"type": "object", "patternProperties": {f"^p{i}_[a-z]+$": {"type": "string"}
                                                            for i in range(20_000)}})  # fmt: skip
_DEV_ZERO = _tool({"$schema": "file:///dev/zero", "type": "object"})


def _deep(levels: int) -> bytes:
    return (b'{"model": "m", "messages": [{"role": "user", "content": "go"}], "metadata": {"x": '
            + b"[" * levels + b"]" * levels + b"}}")  # fmt: skip


ATTACKS = [
    # The model's answer (the upstream's part) against a backtracking pattern: RE2 answers in
    # linear time; the call is refused (re-asked, then the guard's 422).
    Attack("pattern ^(a+)+$ against 100,000 characters", 422, body=_asking("pattern", [_PATTERN])),
    Attack("uniqueItems over 4,000 objects", 200, body=_asking("unique", [_UNIQUE])),
    Attack("a tool with 20,000 patterned properties", 400, body=_asking("patterned", [_PATTERNED])),
    Attack("$schema: file:///dev/zero", 400, body=_asking("dev_zero", [_DEV_ZERO])),
    Attack("a body nested 100,000 deep", 400, raw=_deep(100_000)),
    Attack("a 65 MiB body", 413, raw=b'{"model": "m", "messages": [', length=65 * 2**20),
    Attack("a half-sent body", 408, raw=b'{"model": "m", "messages": [', length=4096),
    Attack("half-sent headers", 0, head=b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Ty"),
    # 128 MiB once decompressed, past the default limit of 64 MiB ("bytes" in the metadata sets
    # another size).
    Attack("an upstream gzip bomb", 502, body={**clean_body(), "metadata": {"attack": "gzip_bomb"}}),
]
"""The attacks of issue 34. The half-sent ones end after the proxy's ``body_timeout`` and
``header_timeout``: a test sets them short."""


async def send(
    attack: Attack | dict[str, Any], port: int, path: str = "/v1/chat/completions"
) -> tuple[int, bytes]:
    """Send one request (an attack, or a JSON body) to the proxy's ``path`` on ``port``, as its own
    client on its own connection; (status, body), or (0, b"") when the proxy closed the connection
    first."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        if isinstance(attack, dict) or attack.body is not None:
            payload = json.dumps(attack if isinstance(attack, dict) else attack.body).encode()
            length = len(payload)
        else:
            payload = attack.raw or b""
            length = attack.length if attack.length is not None else len(payload)
        if isinstance(attack, Attack) and attack.head is not None:
            writer.write(attack.head)
        else:
            writer.write(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
                         + f"Connection: close\r\nContent-Length: {length}\r\n\r\n".encode() + payload)  # fmt: skip
        await writer.drain()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return 0, b""
        status = int(head.split(b" ", 2)[1])
        size = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                     if line.lower().startswith(b"content-length:")), None)  # fmt: skip
        if size is not None:
            return status, await reader.readexactly(size)
        body = await reader.read()
        if b"transfer-encoding: chunked" in head.lower():
            body = _dechunk(body)
        return status, body
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


def _dechunk(raw: bytes) -> bytes:
    out = b""
    while raw:
        size_line, _, rest = raw.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        raw = rest[size + 2 :]
    return out


@functools.lru_cache(maxsize=2)
def gzip_bomb(size: int) -> bytes:
    """``size`` bytes of zeros, gzipped (128 MiB take about half a MiB)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    block = b"\0" * 2**20
    return b"".join(packer.compress(block) for _ in range(size // 2**20)) + packer.flush()


def scene(body: dict[str, Any]) -> Scene:
    """The upstream's answer to ``body`` (see the module docstring)."""
    meta = body.get("metadata")
    attack = meta.get("attack") if isinstance(meta, dict) else None
    if attack == "pattern":
        return Scene(body=completion(None, [call("f", {"s": "a" * 100_000 + "!"}, "c1")]))
    if attack == "unique":
        xs = [{"id": i, "tags": [i, {"n": str(i)}]} for i in range(4_000)]
        return Scene(body=completion(None, [call("f", {"xs": xs}, "c1")]))
    if attack == "gzip_bomb":
        size = int(meta.get("bytes") or 128 * 2**20)  # type: ignore[union-attr]
        return Scene(body=gzip_bomb(size), headers={"Content-Encoding": "gzip"})
    mark = str((body.get("messages") or [{}])[-1].get("content") or "x")
    if body.get("tools"):
        return Scene(
            body=completion(None, [call("get_weather", {"city": "Oslo", "days": 3}, f"call_{mark}")])
        )
    return Scene(body=completion(mark))


def upstream() -> ScriptedUpstream:
    """The attack upstream, not started (``.start()`` it in a thread)."""
    return ScriptedUpstream(handler=scene)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    upstream().serve_forever(args.port)


if __name__ == "__main__":
    main()
