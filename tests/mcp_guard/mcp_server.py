"""A real MCP server for the MCP guard's tests, built with the official SDK's ``MCPServer`` (the
SDK's FastMCP): tools with and without structured output, a tool that fails with its own error,
one that logs and reports progress, a resource and a prompt.

``python mcp_server.py LOG`` serves over stdio; every tool call it runs is appended to the file
LOG as one JSON line, so a test can count what reached the server. ``python mcp_server.py --http
PORT`` serves streamable HTTP at ``http://127.0.0.1:PORT/mcp`` (benchmarks/proxy_overhead.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Tool
from pydantic import BaseModel

# What `loose_forecast` declares it returns; what it really returns breaks it ("celsius" a string).
FORECAST_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}


class Forecast(BaseModel):
    city: str
    celsius: float


class _Server(MCPServer):
    async def list_tools(self) -> list[Tool]:
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "loose_forecast":
                tool.output_schema = FORECAST_SCHEMA
            if tool.name == "tag":
                # Distinct objects: a check that costs the guard's checker time in the list's length.
                tool.input_schema["properties"]["items"]["uniqueItems"] = True
        return tools


def build(calls: list[dict[str, Any]] | Path) -> MCPServer:
    """The server; each tool call it runs goes into ``calls`` (a list, or a file of JSON lines)."""
    mcp = _Server("toolmend-test")

    def ran(name: str, **arguments: Any) -> None:
        entry = {"tool": name, "arguments": arguments}
        if isinstance(calls, list):
            calls.append(entry)
        else:
            with calls.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    @mcp.tool()
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        ran("add", a=a, b=b)
        return a + b

    @mcp.tool()
    def get_weather(city: str, days: int = 1) -> str:
        """The weather for a city over the next days."""
        ran("get_weather", city=city, days=days)
        return f"{city}: sunny for {days} day(s)"

    @mcp.tool()
    def forecast(city: str) -> Forecast:
        """A structured forecast."""
        ran("forecast", city=city)
        return Forecast(city=city, celsius=21.5)

    @mcp.tool(structured_output=True)
    def loose_forecast(city: str) -> dict[str, Any]:
        """A forecast whose result breaks the outputSchema the server declares for it."""
        ran("loose_forecast", city=city)
        return {"city": city, "celsius": "warm"}

    @mcp.tool()
    def lookup(key: str) -> str:
        """Fails every time, with the server's own message."""
        ran("lookup", key=key)
        raise ToolError(f"no record for key {key!r} in the test database")

    @mcp.tool()
    async def slow_count(n: int, ctx: Context) -> str:
        """Logs and reports progress while it counts."""
        ran("slow_count", n=n)
        await ctx.info(f"counting to {n}")
        for i in range(n):
            await ctx.report_progress(i + 1, n)
        return f"counted to {n}"

    @mcp.tool()
    def tag(items: list[dict[str, Any]]) -> int:
        """Tags distinct items (listed with uniqueItems)."""
        ran("tag", items=items)
        return len(items)

    @mcp.resource("note://hello")
    def hello() -> str:
        return "hello from a resource"

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"Greet {name} warmly."

    return mcp


if __name__ == "__main__":
    if sys.argv[1] == "--http":  # streamable HTTP on 127.0.0.1:PORT/mcp, calls kept in memory only
        import uvicorn

        uvicorn.run(
            build([]).streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="error"
        )
    else:
        build(Path(sys.argv[1])).run()
