"""Through the proxy, no hostile spec makes toolmend open a file, a device, a FIFO or a socket.

An audit hook (``sys.addaudithook``; hooks stay for the process, so it records only while a flag
is set) sees every ``open`` and socket connection the test process makes while the proxy (a
thread of this process, its checks in threads of their own) answers requests whose tools name
files, devices, a FIFO and URLs. The only connections allowed are the client's to the proxy and
the proxy's to its upstream; opens of the interpreter's and the project's own code are allowed.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from attacks import clean_body, scene, send
from audit import watched


def _hostile_tools(tmp_path: Path) -> list[dict[str, Any]]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    local = tmp_path / "schema.json"
    local.write_text('{"type": "object"}')
    uris = ["file:///dev/zero", "file:///dev/stdin", f"file://{fifo}", f"file://{local}", str(local),
            "http://127.0.0.1:9/schema.json", "https://example.org/schema"]  # fmt: skip
    out = []
    for uri in uris:
        for params in (
            {"$schema": uri, "type": "object"},
            {"type": "object", "properties": {"a": {"$ref": uri}}},
            {"type": "object", "properties": {"a": {"$id": "https://x.org/a", "$schema": uri}}},
        ):
            out.append({"type": "function", "function": {"name": "f", "parameters": params}})
    return out


def test_hostile_specs_through_the_proxy_open_nothing(serve: Any, tmp_path: Path) -> None:
    proxy = serve(handler=scene)
    port = proxy.thread.port
    upstream_port = int(proxy.upstream.base_url.rsplit(":", 1)[1].split("/")[0])
    tools = _hostile_tools(tmp_path)

    async def go() -> list[tuple[int, bytes]]:
        out = [await send(clean_body("warm"), port)]  # the proxy's pool and imports are warm
        for tool in tools:
            out.append(await send({**clean_body(), "tools": [tool]}, port))
        out.append(await send(clean_body("last"), port))
        return out

    with watched() as seen:
        answers = asyncio.run(go())
    assert answers[0][0] == 200 and answers[-1][0] == 200
    for (status, raw), tool in zip(answers[1:-1], tools, strict=True):
        assert status == 400, (tool, raw[:300])
        assert json.loads(raw)["error"]["code"] == "invalid_schema"
    allowed = {("socket.connect", ("127.0.0.1", port)), ("socket.connect", ("127.0.0.1", upstream_port))}
    assert [e for e in seen if e not in allowed] == []
    # The hook did watch: it saw the client's connections to the proxy.
    assert ("socket.connect", ("127.0.0.1", port)) in seen
