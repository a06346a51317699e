"""The MCP guard: ``toolmend mcp-guard`` between any MCP client and server.

Messages are relayed at the transport level, as JSON-RPC text: what the guard does not change
reaches the other side byte for byte. :class:`McpSession` decides (no I/O), :func:`run_stdio`
(:func:`relay_stdio`) relays a server started as a subprocess over stdin/stdout, and
:func:`create_mcp_app` / :func:`run_http` serve streamable HTTP at ``/mcp`` in front of an upstream
MCP server. See docs/protocols/mcp.md.
"""

from toolmend.mcp._session import McpSession, Step
from toolmend.mcp._stdio import relay_stdio, run_stdio
from toolmend.mcp._streamable import MCP_PATH, create_mcp_app, run_http

__all__ = ["MCP_PATH", "McpSession", "Step", "create_mcp_app", "relay_stdio", "run_http", "run_stdio"]
