"""The stdio relay: ``toolmend mcp-guard -- <server command ...>``.

The guard starts the server as a subprocess and sits on its stdin and stdout; the client talks
to the guard as it would to the server (one JSON-RPC message per line, as MCP's stdio transport
has it). The server's stderr is the guard's, so its logs still reach the client's log.
When the client closes its end, the server's stdin is closed and the server gets a few seconds
to finish before it is stopped; the guard exits with the server's status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import BinaryIO

from toolmend.guard import Conversation, GuardPolicy
from toolmend.mcp._session import INVALID_REQUEST, McpSession, _error
from toolmend.serve._budget import Limits

__all__ = ["relay_stdio", "run_stdio"]

_log = logging.getLogger("toolmend.mcp")

MAX_LINE = 64 * 2**20
"""The longest message either side may send (bytes); a longer one is dropped (the client gets a
JSON-RPC error)."""
_GRACE_S = 5.0
_LIST_WAIT_S = 30.0

Write = Callable[[bytes], Awaitable[None]]


async def _lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """The lines of ``reader`` without their line ends (``None`` for one past :data:`MAX_LINE`,
    which is skipped); blank lines are left out."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():
                yield exc.partial.rstrip(b"\r")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
            while True:  # drop the rest of the long line
                try:
                    await reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as more:
                    await reader.readexactly(more.consumed)
                except asyncio.IncompleteReadError:
                    break
            yield None
            continue
        line = line.rstrip(b"\r\n")
        if line.strip():
            yield line


async def relay_stdio(
    argv: Sequence[str],
    client_in: asyncio.StreamReader,
    write_client: Write,
    *,
    policy: GuardPolicy | None = None,
    conversation: Conversation | None = None,
    env: dict[str, str] | None = None,
    limits: Limits | None = None,
) -> int:
    """Start ``argv`` and relay between it and the client (``client_in`` / ``write_client``)
    through one :class:`McpSession` within ``limits`` (its size and depth limits; one client by
    nature, so its checks run on the loop); the server's exit status."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=MAX_LINE
    )
    assert proc.stdin is not None and proc.stdout is not None
    server_in, server_out = proc.stdin, proc.stdout
    session = McpSession(policy, conversation=conversation, label=" ".join(argv)[:80], limits=limits)
    listed = asyncio.Event()

    async def client_to_server() -> None:
        async for line in _lines(client_in):
            if session.listing:
                # A client that sends calls right behind tools/list gets them checked against it.
                listed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(listed.wait(), _LIST_WAIT_S)
            if line is None:
                await write_client(_error(None, INVALID_REQUEST, f"toolmend mcp-guard: a message longer than "
                                          f"{MAX_LINE} bytes was dropped") + b"\n")  # fmt: skip
                continue
            step = session.from_client(line)
            if step.reply is not None:
                await write_client(step.reply + b"\n")
            elif step.forward is not None:
                try:
                    server_in.write(step.forward + b"\n")
                    await server_in.drain()
                except (ConnectionError, BrokenPipeError):
                    return
        with contextlib.suppress(ConnectionError, BrokenPipeError, OSError):
            server_in.close()

    async def server_to_client() -> None:
        async for line in _lines(server_out):
            if line is None:
                _log.warning(
                    "toolmend mcp-guard: the server sent a line longer than %d bytes; dropped", MAX_LINE
                )
                continue
            await write_client(session.from_server(line) + b"\n")
            if not session.listing:
                listed.set()

    inbound = asyncio.create_task(client_to_server())
    outbound = asyncio.create_task(server_to_client())
    try:
        done, _ = await asyncio.wait({inbound, outbound}, return_when=asyncio.FIRST_COMPLETED)
        if inbound in done:
            # The client is gone: the server may still flush answers; then it must end.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(outbound), _GRACE_S)
        for task in (inbound, outbound):
            if task.done() and not task.cancelled() and task.exception() is not None:
                _log.warning("toolmend mcp-guard: relay stopped: %s", task.exception())
    finally:
        for task in (inbound, outbound):
            task.cancel()
        await _stop(proc)
    return proc.returncode if proc.returncode is not None else 1


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(ConnectionError, BrokenPipeError, OSError):
            proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), _GRACE_S)
        return
    except TimeoutError:
        pass
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), _GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def _stdio_streams(stdin: BinaryIO, stdout: BinaryIO) -> tuple[asyncio.StreamReader, Write]:
    """Async ends on the process's own stdin and stdout: pipes (as an MCP client starts the
    guard) through the event loop; a file, a terminal or /dev/null through a thread."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    if _is_pipe(stdin):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    else:
        # A daemon thread: one blocked on a terminal must not keep the process from exiting.
        threading.Thread(target=_feed, args=(stdin, reader, loop), daemon=True).start()
    if _is_pipe(stdout):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)

        async def write(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        return reader, write
    lock = asyncio.Lock()

    async def write_file(data: bytes) -> None:
        async with lock:
            await loop.run_in_executor(None, _write_flush, stdout, data)

    return reader, write_file


def _is_pipe(stream: BinaryIO) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _feed(stream: BinaryIO, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    while True:
        try:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        except OSError:
            chunk = b""
        if not chunk:
            loop.call_soon_threadsafe(reader.feed_eof)
            return
        loop.call_soon_threadsafe(reader.feed_data, chunk)


def _write_flush(out: BinaryIO, data: bytes) -> None:
    out.write(data)
    out.flush()


def run_stdio(argv: Sequence[str], *, policy: GuardPolicy | None = None, limits: Limits | None = None) -> int:
    """Relay between this process's stdin/stdout and the server ``argv`` until either side
    ends; the server's exit status."""

    async def main() -> int:
        reader, write = await _stdio_streams(sys.stdin.buffer, sys.stdout.buffer)
        return await relay_stdio(argv, reader, write, policy=policy, env=dict(os.environ), limits=limits)

    return asyncio.run(main())
