"""``toolmend mcp-guard`` between the official MCP SDK's client (``ClientSession``) and a real
``MCPServer`` (the SDK's FastMCP), over streamable HTTP (all three in this process, on
127.0.0.1) and over stdio (the guard's CLI starting the server as its subprocess)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from repo_module import repo_module

pytest.importorskip("mcp")
uvicorn = pytest.importorskip("uvicorn")

from aiohttp import web  # noqa: E402
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from toolmend.guard import GuardPolicy  # noqa: E402
from toolmend.mcp import create_mcp_app  # noqa: E402
from toolmend.serve import Limits  # noqa: E402

_HERE = Path(__file__).resolve().parent
server_module = repo_module("tests/mcp_guard/mcp_server.py", "toolmend_test_mcp_server")
SRC = _HERE.parents[1] / "src"


@dataclass
class Served:
    url: str
    """The guard's /mcp URL."""
    upstream: str
    calls: list[dict[str, Any]]
    """Every tool call the server ran, in order."""


@contextlib.asynccontextmanager
async def served(
    policy: GuardPolicy | None = None, limits: Limits | None = None, server: Any = None
) -> AsyncIterator[Served]:
    """The test server (or ``server``, an ``MCPServer``) on uvicorn and the guard (aiohttp) in
    front of it, both on 127.0.0.1."""
    calls: list[dict[str, Any]] = []
    app = (server or server_module.build(calls)).streamable_http_app()
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on"))
    task = asyncio.create_task(http.serve())
    while not http.started:
        assert not task.done(), "the MCP server did not start"
        await asyncio.sleep(0.02)
    port = http.servers[0].sockets[0].getsockname()[1]
    upstream = f"http://127.0.0.1:{port}/mcp"
    runner = web.AppRunner(create_mcp_app(upstream, policy, limits=limits))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    guard_port = runner.addresses[0][1]
    try:
        yield Served(f"http://127.0.0.1:{guard_port}/mcp", upstream, calls)
    finally:
        await runner.cleanup()
        http.should_exit = True
        await task


@contextlib.asynccontextmanager
async def connect(url: str, **options: Any) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write, **options) as session:
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def test_clean_call_passes_unchanged_and_runs_once() -> None:
    async with served() as s, connect(s.url) as session:
        tools = await session.list_tools()
        assert {t.name for t in tools.tools} >= {"add", "get_weather", "forecast", "lookup"}
        result = await session.call_tool("add", {"a": 2, "b": 3})
        assert not result.is_error
        assert result.structured_content == {"result": 5}
        assert s.calls == [{"tool": "add", "arguments": {"a": 2, "b": 3}}]


async def test_safe_repairs_reach_the_server_repaired_and_once() -> None:
    async with served() as s, connect(s.url) as session:
        await session.list_tools()
        result = await session.call_tool("add", {"a": "3", "b": 4})  # a string number
        assert not result.is_error and result.structured_content == {"result": 7}
        weather = await session.call_tool("get_weather", {"City": "Oslo"})  # a misspelt key
        assert text_of(weather) == "Oslo: sunny for 1 day(s)"
        renamed = await session.call_tool("get_wether", {"city": "Bergen", "days": 2})  # a misspelt tool
        assert text_of(renamed) == "Bergen: sunny for 2 day(s)"
        assert s.calls == [
            {"tool": "add", "arguments": {"a": 3, "b": 4}},
            {"tool": "get_weather", "arguments": {"city": "Oslo", "days": 1}},
            {"tool": "get_weather", "arguments": {"city": "Bergen", "days": 2}},
        ]


async def test_a_missing_argument_is_a_tool_error_naming_it_and_never_runs() -> None:
    async with served() as s, connect(s.url) as session:
        await session.list_tools()
        result = await session.call_tool("add", {"b": 1})
        assert result.is_error
        text = text_of(result)
        assert "add was not run" in text and "'a'" in text and "integer" in text
        bad = await session.call_tool("add", {"a": "three"})
        assert bad.is_error and "'a' must be integer" in text_of(bad)
        assert s.calls == []


async def test_an_unknown_tool_names_the_closest_and_is_never_renamed() -> None:
    async with served() as s, connect(s.url) as session:
        await session.list_tools()
        with pytest.raises(MCPError) as raised:
            await session.call_tool("weather", {"city": "Oslo"})
        message = str(raised.value)
        assert "Unknown tool: 'weather'" in message and "get_weather" in message
        with pytest.raises(MCPError, match="Unknown tool: 'multiply'"):
            await session.call_tool("multiply", {"a": 1, "b": 2})
        assert s.calls == []


async def test_structured_content_is_checked_against_the_declared_output_schema() -> None:
    async with served() as s:
        # Without the guard the SDK's own client refuses the server's answer outright.
        async with connect(s.upstream) as direct:
            await direct.list_tools()
            with pytest.raises(RuntimeError, match="Invalid structured content"):
                await direct.call_tool("loose_forecast", {"city": "Oslo"})
        async with connect(s.url) as session:
            await session.list_tools()
            good = await session.call_tool("forecast", {"city": "Oslo"})
            assert not good.is_error and good.structured_content == {"city": "Oslo", "celsius": 21.5}
            bad = await session.call_tool("loose_forecast", {"city": "Oslo"})
            assert bad.is_error and bad.structured_content is None
            text = text_of(bad)
            assert "does not match the outputSchema" in text and "celsius" in text
            assert '"celsius": "warm"' in text  # the server's own content is kept
        assert [c["tool"] for c in s.calls] == ["loose_forecast", "forecast", "loose_forecast"]


# Logging notifications are deprecated from protocol 2026-07-28 on; this session speaks 2025-11-25.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_resources_prompts_notifications_and_server_errors_pass_through() -> None:
    logs: list[Any] = []
    progress: list[tuple[float, float | None]] = []

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def on_progress(done: float, total: float | None, _message: str | None) -> None:
        progress.append((done, total))

    async with served() as s, connect(s.url, logging_callback=on_log) as session:
        await session.list_tools()
        resource = await session.read_resource("note://hello")
        assert resource.contents[0].text == "hello from a resource"
        prompt = await session.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Greet Ada warmly."
        counted = await session.call_tool("slow_count", {"n": 3}, progress_callback=on_progress)
        assert text_of(counted) == "counted to 3"
        assert logs == ["counting to 3"] and progress == [(1, 3), (2, 3), (3, 3)]
        failed = await session.call_tool("lookup", {"key": "k1"})
        assert failed.is_error and "no record for key 'k1' in the test database" in text_of(failed)
        with pytest.raises(MCPError) as raised:
            await session.read_resource("note://missing")
        assert "note://missing" in str(raised.value)
        assert [c["tool"] for c in s.calls] == ["slow_count", "lookup"]


async def test_the_loop_breaker_stops_a_call_that_keeps_failing() -> None:
    async with served(GuardPolicy(max_repeated_failures=3)) as s, connect(s.url) as session:
        await session.list_tools()
        for _ in range(3):
            result = await session.call_tool("lookup", {"key": "k"})
            assert result.is_error and "no record" in text_of(result)
        stopped = await session.call_tool("lookup", {"key": "k"})
        assert stopped.is_error
        assert "failed 3 times in a row" in text_of(stopped) and "Do not repeat this call" in text_of(stopped)
        other = await session.call_tool("lookup", {"key": "other"})  # other arguments: a new call
        assert "no record for key 'other'" in text_of(other)
        assert [c["arguments"]["key"] for c in s.calls] == ["k", "k", "k", "other"]


async def test_malformed_messages_get_json_rpc_errors() -> None:
    async with served() as s, aiohttp.ClientSession() as http:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with http.post(s.url, data=b"{not json", headers=headers) as resp:
            assert resp.status == 400
            assert (await resp.json())["error"]["code"] == -32700
        async with http.post(s.url, data=b"[1, 2]", headers=headers) as resp:
            assert (await resp.json())["error"]["code"] == -32600
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"arguments": {}}}
        async with http.post(s.url, data=json.dumps(call), headers=headers) as resp:
            body = await resp.json()
            assert (
                body["id"] == 7
                and body["error"]["code"] == -32602
                and "params.name" in body["error"]["message"]
            )
        async with http.get(s.url.replace("/mcp", "/other")) as resp:
            assert resp.status == 404 and "error" in await resp.json()
    assert s.calls == []


async def test_an_unreachable_upstream_is_a_json_rpc_error() -> None:
    runner = web.AppRunner(create_mcp_app("http://127.0.0.1:9/mcp"))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/mcp"
    try:
        async with aiohttp.ClientSession() as http:
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            async with http.post(url, json=ping) as resp:
                body = await resp.json()
                assert resp.status == 502 and body["id"] == 1
                assert "could not be reached" in body["error"]["message"]
    finally:
        await runner.cleanup()


async def test_stdio_through_the_cli(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolmend", "mcp-guard", "--", sys.executable, str(_HERE / "mcp_server.py"), str(log)],
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        assert "add" in {t.name for t in tools.tools}
        repaired = await session.call_tool("add", {"a": "40", "b": 2})
        assert repaired.structured_content == {"result": 42}
        missing = await session.call_tool("get_weather", {"days": 2})
        assert missing.is_error and "'city'" in text_of(missing)
        resource = await session.read_resource("note://hello")
        assert resource.contents[0].text == "hello from a resource"
        with pytest.raises(MCPError, match="Unknown tool"):
            await session.call_tool("subtract", {"a": 1})
    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert ran == [{"tool": "add", "arguments": {"a": 40, "b": 2}}]


async def test_stdio_through_the_cli_holds_messages_to_the_size_limit(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "toolmend",
            "mcp-guard",
            "--max-body-bytes",
            "2000",
            "--",
            sys.executable,
            str(_HERE / "mcp_server.py"),
            str(log),
        ],  # fmt: skip
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        with pytest.raises(MCPError, match="2,000 bytes.*--max-body-bytes"):
            await session.call_tool("get_weather", {"city": "x" * 5_000})
        assert not (await session.call_tool("add", {"a": 1})).is_error
    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert ran == [{"tool": "add", "arguments": {"a": 1, "b": 0}}]


async def test_the_sdks_default_client_speaks_the_stateless_protocol_through_the_guard() -> None:
    """``mcp.Client(url)`` probes ``server/discover`` and speaks protocol 2026-07-28: no session,
    routing headers (``Mcp-Method``, ``Mcp-Name``) the server checks against the body; a call the
    guard renames gets a matching ``Mcp-Name``."""
    async with served() as s, Client(s.url) as client:
        assert client.protocol_version == "2026-07-28"
        await client.list_tools()
        assert (await client.call_tool("add", {"a": "4", "b": 1})).structured_content == {"result": 5}
        renamed = await client.call_tool("get_wether", {"city": "Oslo"})
        assert not renamed.is_error and text_of(renamed) == "Oslo: sunny for 1 day(s)"
        missing = await client.call_tool("add", {"b": 1})
        assert missing.is_error and "'a'" in text_of(missing)
        assert s.calls == [
            {"tool": "add", "arguments": {"a": 4, "b": 1}},
            {"tool": "get_weather", "arguments": {"city": "Oslo", "days": 1}},
        ]


# -- limits and the CPU budget (the proxy's, issue 34) -------------------------------------------

_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _rpc(http: aiohttp.ClientSession, url: str, msg: dict[str, Any], sid: str | None = None) -> Any:
    """One JSON-RPC message as a raw client sends it; the answer's message (JSON or the first SSE
    event with data), or None for a notification."""
    headers = {**_HEADERS, **({"Mcp-Session-Id": sid} if sid else {})}
    async with http.post(url, data=json.dumps(msg), headers=headers) as resp:
        text = await resp.text()
        if resp.content_type == "text/event-stream":
            datas = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
            return json.loads(datas[0]) if datas else None
        return json.loads(text) if text.strip() else None


async def _hostile_session(http: aiohttp.ClientSession, url: str) -> str:
    """A session opened by hand (initialize, initialized, tools/list): its Mcp-Session-Id."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}  # fmt: skip
    async with http.post(url, data=json.dumps(init), headers=_HEADERS) as resp:
        sid = resp.headers["Mcp-Session-Id"]
        await resp.read()
    await _rpc(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    listed = await _rpc(http, url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
    assert "tag" in {t["name"] for t in listed["result"]["tools"]}
    return sid


# A step interrupted for its budget may be inside a garbage collector's callback, which reports
# the interruption as "ignored" (the budget interrupts it again): not a fault of the test.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.usefixtures("steps_end")
async def test_a_costly_call_does_not_stall_another_session_and_is_refused_as_too_costly() -> None:
    # 60,000 distinct objects under uniqueItems: seconds of the checker's time unbudgeted.
    items = [{"k": i, "v": [i, str(i)]} for i in range(60_000)]
    hostile = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "tag", "arguments": {"items": items}}})  # fmt: skip
    # This process also holds the MCP server, both clients and pytest: a full garbage collection
    # (which the costly call's many objects set off, holding the GIL) walks them all, some 300 ms
    # here, and a guard's own process holds none of them. Frozen, it walks what came since.
    gc.freeze()
    try:
        await _costly_call_against_clean_calls(hostile)
    finally:
        gc.unfreeze()


async def _costly_call_against_clean_calls(hostile: str) -> None:
    async with served(limits=Limits(check_seconds=0.5)) as s, connect(s.url) as clean:
        await clean.list_tools()

        async def timed(n: int) -> list[float]:
            out = []
            for _ in range(n):
                t = time.perf_counter()
                result = await clean.call_tool("add", {"a": 1, "b": 2})
                out.append(time.perf_counter() - t)
                assert not result.is_error
            return out

        async with aiohttp.ClientSession() as http:
            sid = await _hostile_session(http, s.url)
            await timed(2)
            unloaded = await timed(5)

            async def attack() -> Any:
                async with http.post(
                    s.url, data=hostile, headers={**_HEADERS, "Mcp-Session-Id": sid}
                ) as resp:
                    return resp.status, await resp.json()

            task = asyncio.ensure_future(attack())
            await asyncio.sleep(0.05)  # sent, and being checked
            # Clean calls answered while the costly one is still being checked (the best of 3).
            during: list[float] = []
            while not task.done() and len(during) < 3:
                during += await timed(1)
            status, answer = await task
    assert status == 200 and answer["id"] == 3
    result = answer["result"]
    text = result["content"][0]["text"]
    assert result["isError"] is True and "CPU time" in text and "--check-seconds" in text, text
    assert [c["tool"] for c in s.calls].count("tag") == 0
    assert during, "the costly call ended before a clean call could be timed against it"
    extra = min(during) - min(unloaded)
    assert extra < 0.1, (
        f"clean calls took {[round(x * 1000) for x in during]} ms during the costly call, "
        f"{[round(x * 1000) for x in unloaded]} ms without"
    )


async def test_an_over_limit_body_is_one_shaped_refusal_and_never_forwarded() -> None:
    async with served(limits=Limits(max_body_bytes=2_000)) as s, connect(s.url) as session:
        await session.list_tools()
        async with aiohttp.ClientSession() as http:
            call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": {"name": "get_weather", "arguments": {"city": "x" * 5_000}}}  # fmt: skip
            async with http.post(s.url, data=json.dumps(call), headers=_HEADERS) as resp:
                body = await resp.json()
                assert resp.status == 413 and resp.content_type == "application/json"
        error = body["error"]
        assert body["jsonrpc"] == "2.0" and error["code"] == -32600
        assert "2,000" in error["message"] and "toolmend mcp-guard --max-body-bytes" in error["message"]
        # The session goes on: a call within the limit is served.
        assert not (await session.call_tool("add", {"a": 1})).is_error
    assert [c["tool"] for c in s.calls] == ["add"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.usefixtures("steps_end")
async def test_a_costly_tool_list_passes_unchanged_and_its_calls_unchecked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import Tool

    # 20,000 patterned properties: compiling them takes the checker far past a 0.3 s budget.
    costly = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "patternProperties": {f"^p{i}_[a-z]+$": {"type": "integer"} for i in range(20_000)}}  # fmt: skip
    ran: list[Any] = []

    class Hostile(MCPServer):
        async def list_tools(self) -> list[Tool]:
            tools = await super().list_tools()
            for tool in tools:
                tool.input_schema = costly
            return tools

    server = Hostile("hostile")

    @server.tool()
    def count(n: Any) -> str:
        ran.append(n)
        return f"counted {n}"

    with caplog.at_level(logging.WARNING, logger="toolmend.mcp"):
        async with served(limits=Limits(check_seconds=0.3), server=server) as s, connect(s.url) as session:
            listed = await session.list_tools()
            assert len(listed.tools[0].input_schema["patternProperties"]) == 20_000  # unchanged
            # "n" a string breaks the schema; unchecked, it reaches the server as it was sent.
            result = await session.call_tool("count", {"n": "three"})
    assert not result.is_error and ran == ["three"]
    assert any("--check-seconds" in r.getMessage() and "unchecked" in r.getMessage() for r in caplog.records)
