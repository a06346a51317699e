"""How a toolmend server starts: ``toolmend serve`` (:func:`toolmend.serve.run`) and
``toolmend mcp-guard --upstream`` (:func:`toolmend.mcp.run_http`) both listen through
:func:`listen`, with the same aiohttp settings (:func:`server_options`) and the same warning when
the address reaches beyond this machine.

>>> server_options(Limits(header_timeout=5))["keepalive_timeout"]
5.0
>>> loopback("127.0.0.1"), loopback("[::1]"), loopback("0.0.0.0")
(True, True, False)
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from aiohttp import web

from toolmend.serve._budget import Limits

__all__ = ["listen", "loopback", "server_options"]


def server_options(limits: Limits) -> dict[str, Any]:
    """The aiohttp server settings, for :func:`aiohttp.web.run_app` or an
    :class:`aiohttp.web.AppRunner`: client disconnects cancel their handler, and a connection that
    has not sent a request's headers within ``limits.header_timeout`` (a half-sent request, or
    one idle that long) is closed."""
    return {"handler_cancellation": True, "access_log": None, "keepalive_timeout": limits.header_timeout}


def loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listen(
    app: web.Application,
    *,
    host: str,
    port: int,
    limits: Limits,
    banner: str,
    exposed: str | None,
    print_line: Callable[[str], Any] = print,
) -> None:
    """Serve ``app`` on ``host:port`` until interrupted (SIGINT or SIGTERM end it, as
    :func:`aiohttp.web.run_app` handles them). ``exposed``, a warning, is printed first when
    ``host`` reaches beyond this machine; then ``banner``. An address that cannot be bound raises
    :class:`OSError`."""
    if exposed is not None and not loopback(host):
        print_line(exposed)
    print_line(banner)
    web.run_app(app, host=host, port=port, print=None, **server_options(limits))
