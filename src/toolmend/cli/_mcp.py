"""``toolmend mcp-guard``: the tool-call guard between an MCP client and an MCP server.

::

    toolmend mcp-guard -- python my_server.py            # stdio: the guard starts the server
    toolmend mcp-guard --upstream http://127.0.0.1:8000/mcp --port 8710   # streamable HTTP

With a server command (after ``--``) the guard speaks MCP's stdio transport on its own stdin and
stdout, so a client is configured with ``toolmend mcp-guard -- <server command>`` where it had
the server command. With ``--upstream`` it serves ``http://HOST:PORT/mcp`` (loopback by
default). Warnings (tool schemas the checker cannot use, refused and repaired calls with
``--verbose``) go to stderr. The proxy's limit flags (``--max-body-bytes``, ``--max-tools``,
``--check-seconds`` ...) apply to the guard's messages and listed tools (docs/protocols/mcp.md,
"Limits"); in stdio mode the size and depth limits. Bad usage is one ``error:`` line and exit status 2.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated
from urllib.parse import urlparse

import typer

from toolmend.cli._console import fail
from toolmend.cli._serve import (
    BodyTimeoutFlag,
    CheckSecondsFlag,
    HeaderTimeoutFlag,
    MaxBodyBytesFlag,
    MaxJsonDepthFlag,
    MaxSchemaBytesFlag,
    MaxSchemaDepthFlag,
    MaxToolsFlag,
    guard_settings,
    started,
)

__all__ = ["register"]


def mcp_guard_command(
    command: Annotated[
        list[str] | None, typer.Argument(help="The server command after '--' (stdio).", show_default=False)
    ] = None,
    upstream: Annotated[
        str | None, typer.Option("--upstream", help="The upstream MCP URL, e.g. http://127.0.0.1:8000/mcp.")
    ] = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind with --upstream (default: loopback).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on with --upstream.", min=1, max=65535)
    ] = 8710,
    policy: Annotated[Path | None, typer.Option("--policy", help="GuardPolicy as TOML or JSON.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse a call rather than repair it.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log each repaired or refused call.")
    ] = False,
    max_body_bytes: MaxBodyBytesFlag = None,
    max_tools: MaxToolsFlag = None,
    max_schema_bytes: MaxSchemaBytesFlag = None,
    max_schema_depth: MaxSchemaDepthFlag = None,
    max_json_depth: MaxJsonDepthFlag = None,
    check_seconds: CheckSecondsFlag = None,
    header_timeout: HeaderTimeoutFlag = None,
    body_timeout: BodyTimeoutFlag = None,
) -> None:
    """Guard an MCP server's tools/call: check, repair, or answer what is wrong without calling it."""
    if bool(command) == bool(upstream):
        fail("give either a server command after '--' (stdio) or --upstream URL (streamable HTTP), not both"
             if command else "give a server command after '--' (stdio) or --upstream URL (streamable HTTP)")  # fmt: skip
    given = dict(locals())  # the parameters as given: the limit flags among them
    with started(host, port):
        guard_policy, limits = guard_settings(policy, given, strict=strict)
    logging.basicConfig(format="%(message)s", level=logging.INFO if verbose else logging.WARNING)
    if upstream is not None:
        try:
            url = urlparse(upstream)
        except ValueError:
            fail("--upstream: not a URL; expected one such as http://127.0.0.1:8000/mcp")
        from toolmend.mcp._streamable import run_http, shown_url

        if url.scheme not in ("http", "https") or not url.netloc:
            fail(
                f"--upstream {shown_url(upstream)!r}: expected an http(s) URL such as http://127.0.0.1:8000/mcp"
            )
        with started(host, port):
            run_http(upstream, host=host, port=port, policy=guard_policy, limits=limits,
                     print_line=lambda line: typer.echo(line, err=True))  # fmt: skip
        return
    from toolmend.mcp import run_stdio

    assert command is not None
    try:
        code = run_stdio(command, policy=guard_policy, limits=limits)
    except FileNotFoundError:
        fail(f"cannot start the server: {command[0]!r} not found")
    except PermissionError:
        fail(f"cannot start the server: {command[0]!r} is not executable")
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``mcp-guard`` to ``app``."""
    app.command("mcp-guard")(mcp_guard_command)
