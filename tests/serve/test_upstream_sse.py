"""The upstream stream reader on its own: a real server on 127.0.0.1 writes an SSE body in
pieces cut at awkward places, with each line-end form the SSE format allows."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web
from scripted_upstream import AppThread

from toolmend.serve._upstream import iter_sse

BODY = (
    b'data: {"a": 1}\n\n'
    b": a comment, then a keep-alive\n\n"
    b'data: {"b":\r\ndata: 2}\r\n\r\n'  # two data lines, CRLF
    b'data:{"c": 3}\r\r'  # no space after the colon, CR line ends
    b'event: x\ndata: {"d": 4}\n\n\n'
    b"data: [DONE]"  # the last event without its blank line
)
WANT = [b'{"a": 1}', b'{"b":\n2}', b'{"c": 3}', b'{"d": 4}', b"[DONE]"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(BODY)])
def test_events_are_the_same_however_the_body_is_cut(size: int) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(0, len(BODY), size):
            await resp.write(BODY[i : i + size])
            await asyncio.sleep(0)  # let each piece go out on its own
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/", handler)
    server = AppThread(app).start()

    async def read() -> list[bytes]:
        async with aiohttp.ClientSession() as s, s.get(server.url + "/") as resp:
            return [data async for data in iter_sse(resp)]

    try:
        assert asyncio.run(read()) == WANT
    finally:
        server.stop()
