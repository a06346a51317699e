"""What ``toolmend serve`` adds: latency (p50/p99) and CPU per request for clean tool-call traffic,
streamed and not, through the proxy and directly to the same upstream in the same run, next to a
bare pass-through proxy (the floor any Python proxy pays); memory over a long run; and every
request answered exactly once.

    .venv/bin/python benchmarks/proxy_overhead.py [--concurrency 64] [--requests 2000] [--rounds 3]
        [--latency-ms 100] [--jitter 0.5] [--memory 20000] [--stacks] [--only chat|messages]
        [--mcp 500 [--mcp-only]]

Processes: the scripted upstream (tests/serve/scripted_upstream.py: aiohttp.web, one valid call
per answer, its id carrying the request's marker), ``toolmend serve`` in front of it, the bare
pass-through, and this load generator (N concurrent aiohttp clients), each its own process, so
no event loop waits on another's work. The upstream behaves like a model server: each answer
takes a service time drawn (seeded) uniformly from ``latency x [1 - jitter, 1 + jitter]``; a
stream sends its first chunk after half of it and the rest spread over the other half. The load
generator draws the same service times, in the same order, for the direct and the proxied
requests of a round, so the two latency distributions differ only by what the proxy adds.

Each round sends the same requests directly and through the proxy (alternating which goes
first), so a change of machine load hits both. Added latency is the difference of the two
percentiles. The proxy's CPU per request is its process time (/proc) over the proxied requests;
it means the same on a loaded machine, where the wall-clock figures do not. The CPU share each
process used during the proxied requests is printed too: when their sum nears the number of
cores, the processes queue for CPU and the added latency is that queue.

``/v1/responses`` gets the same comparison (:func:`_responses_rows`): the same requests as
Responses API calls, through toolmend serve and through the bare pass-through of the same
protocol, streamed and not, in the same run; the proxy's CPU per clean request is printed beside
the pass-through's.

``/v1/messages`` (Anthropic Messages) is measured in its own part (:func:`messages_overhead`):
proxy CPU per clean request through ``toolmend serve`` and through a bare pass-through of the
same protocol (tests/serve/messages_upstream.py as the upstream), streamed and not, in one run.
``--only messages`` runs that part alone, ``--only chat`` everything else.

``--mcp N`` also measures ``toolmend mcp-guard --upstream`` against a bare MCP pass-through,
both in front of the tests' MCP server (the official SDK's MCPServer on uvicorn; needs ``mcp``):
CPU per clean ``tools/call``, N calls per relay per round (``--mcp-only``: that alone).

``--stacks`` also measures a bare pass-through on Starlette + uvicorn (``pip install starlette
uvicorn``), the other server stack considered, against the same upstream (non-streamed only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "serve" / "scripted_upstream.py"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _wait_healthy(url: str, proc: subprocess.Popen[Any], timeout: float = 60) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


@dataclass(frozen=True)
class Protocol:
    """What a load sends on one route and how it knows an answer is the request's own."""

    path: str
    """The route below the base URL (``/chat/completions``)."""
    body: Callable[[str], dict[str, Any]]
    """The request for a marker."""
    own: Callable[[bytes, str, bool], bool]
    """Whether an answer (its bytes, streamed or not) carries the marker's call."""
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


CHAT = Protocol(
    "/chat/completions",
    lambda mark: {"model": "bench", "messages": [{"role": "user", "content": mark}], "tools": TOOLS},
    lambda raw, mark, stream: (f'"call_{mark}"' in raw.decode() if stream else
                               json.loads(raw)["choices"][0]["message"]["tool_calls"][0]["id"] == f"call_{mark}"),
)  # fmt: skip


class Load:
    """N concurrent clients sending marked requests of a :class:`Protocol`; latencies and who got
    which answer."""

    def __init__(self, concurrency: int, protocol: Protocol = CHAT) -> None:
        self.concurrency = concurrency
        self.protocol = protocol
        self.answers: Counter[str] = Counter()
        self.sent = 0
        self.failures = 0

    async def run(
        self, session: Any, base: str, marks: list[str], stream: bool, service_ms: list[float] | None = None
    ) -> list[float]:
        protocol = self.protocol
        url = base + protocol.path
        work = iter(enumerate(marks))
        latencies: list[float] = []

        async def one(i: int, mark: str) -> None:
            body = protocol.body(mark)
            if service_ms:
                body["metadata"] = {"latency_ms": f"{service_ms[i]:.3f}"}
            if stream:
                body["stream"] = True
            self.sent += 1
            t = time.perf_counter()
            async with session.post(url, data=json.dumps(body).encode(), headers=protocol.headers) as r:
                raw = await r.read()
            latencies.append(time.perf_counter() - t)
            if r.status == 200 and protocol.own(raw, mark, stream):
                self.answers[mark] += 1
            else:
                self.failures += 1

        async def worker() -> None:
            for i, mark in work:
                await one(i, mark)

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        return latencies


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _service_times(args: argparse.Namespace, r: int, n: int) -> list[float]:
    """Round ``r``'s ``n`` service times: the same for the direct and the proxied requests."""
    rng = random.Random(args.seed * 1000 + r)
    lo, hi = args.latency_ms * (1 - args.jitter), args.latency_ms * (1 + args.jitter)
    return [rng.uniform(lo, hi) for _ in range(n)]


async def _compare(
    direct: str,
    proxied: str,
    pids: dict[str, int],
    args: argparse.Namespace,
    stream: bool,
    tag: str,
    protocol: Protocol = CHAT,
) -> dict[str, Any]:
    import aiohttp

    load = Load(args.concurrency, protocol)
    lat: dict[str, list[float]] = {"direct": [], "proxy": []}
    cpu: Counter[str] = Counter()
    wall = 0.0
    sent = 0
    warm = [args.latency_ms] * (args.concurrency * 2)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency)) as session:
        await load.run(session, proxied, [f"{tag}w{i}" for i in range(len(warm))], stream, warm)
        await load.run(session, direct, [f"{tag}v{i}" for i in range(len(warm))], stream, warm)
        for r in range(args.rounds):
            service = _service_times(args, r, args.requests)
            order = ["direct", "proxy"] if r % 2 == 0 else ["proxy", "direct"]
            for who in order:
                marks = [f"{tag}{who[0]}{r}-{i}" for i in range(args.requests)]
                before = {k: _cpu_s(pid) for k, pid in pids.items()}
                mine, t = time.process_time(), time.perf_counter()
                lat[who] += await load.run(
                    session, direct if who == "direct" else proxied, marks, stream, service
                )
                if who == "proxy":
                    wall += time.perf_counter() - t
                    cpu["load generator"] += time.process_time() - mine
                    for k, pid in pids.items():
                        cpu[k] += _cpu_s(pid) - before[k]
                    sent += len(marks)
    return {
        "mode": "stream" if stream else "non-stream",
        "direct_p50": _pct(lat["direct"], 0.5), "direct_p99": _pct(lat["direct"], 0.99),
        "proxy_p50": _pct(lat["proxy"], 0.5), "proxy_p99": _pct(lat["proxy"], 0.99),
        "added_p50": _pct(lat["proxy"], 0.5) - _pct(lat["direct"], 0.5),
        "added_p99": _pct(lat["proxy"], 0.99) - _pct(lat["direct"], 0.99),
        "proxy_cpu_ms": cpu["proxy"] * 1000 / sent, "sent": load.sent, "answered": sum(load.answers.values()),
        "failures": load.failures, "duplicated": sum(1 for n in load.answers.values() if n > 1),
        "busy": {k: v / wall for k, v in cpu.items()},
    }  # fmt: skip


async def _memory(proxied: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    load = Load(args.concurrency)
    samples = []
    step = args.memory // 4
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency)) as session:
        for k in range(4):
            service = _service_times(args, 100 + k, step)
            marks = [f"m{k}-{i}" for i in range(step)]
            await load.run(session, proxied, marks[: step // 2], False, service)
            await load.run(session, proxied, marks[step // 2 :], True, service[step // 2 :])
            samples.append(_rss_mib(pid))
    return {"requests": step * 4, "rss_mib": samples, "sent": load.sent, "answered": sum(load.answers.values()),
            "failures": load.failures, "duplicated": sum(1 for n in load.answers.values() if n > 1)}  # fmt: skip


# -- the floor: a bare pass-through on each candidate server stack -----------------------------------


def _probe_aiohttp(
    upstream: str,
    port: int,
    routes: tuple[str, ...] = ("/v1/chat/completions", "/v1/responses"),
    headers: dict[str, str] | None = None,
) -> None:
    """Read the request, parse it, forward it with one pooled client session; a non-streamed
    answer is read, parsed and sent back, a stream is relayed piece by piece as it comes. Serves
    ``routes`` (each forwarded to the same path below ``upstream``), sending ``headers``."""
    import aiohttp
    from aiohttp import web

    sent = headers or {"Content-Type": "application/json"}

    async def start(app: web.Application) -> None:
        app["s"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        stream = json.loads(body).get("stream")
        async with request.app["s"].post(upstream + request.path.removeprefix("/v1"), data=body,
                                         headers=sent) as r:  # fmt: skip
            if not stream:
                raw = await r.read()
                json.loads(raw)
                return web.Response(body=raw, content_type=r.content_type)
            out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await out.prepare(request)
            async for piece in r.content.iter_any():
                await out.write(piece)
            await out.write_eof()
            return out

    async def health(_r: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.on_startup.append(start)
    for route in routes:
        app.router.add_post(route, relay)
    app.router.add_get("/healthz", health)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


def _probe_starlette(upstream: str, port: int) -> None:
    import contextlib

    import aiohttp
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> Any:
        state["s"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        yield
        await state["s"].close()

    async def chat(request: Request) -> Response:
        body = await request.body()
        json.loads(body)
        async with state["s"].post(upstream + "/chat/completions", data=body,
                                   headers={"Content-Type": "application/json"}) as r:  # fmt: skip
            raw = await r.read()
        json.loads(raw) if not raw.startswith(b"data:") else None
        return Response(raw, media_type=r.content_type)

    async def health(_r: Request) -> Response:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/healthz", health)],
                    lifespan=lifespan)  # fmt: skip
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# -- /v1/messages (Anthropic Messages): CPU per clean request, toolmend serve vs a bare pass-through ----


MESSAGES_UPSTREAM = ROOT / "tests" / "serve" / "messages_upstream.py"
MESSAGES_TOOLS = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}]  # fmt: skip


def _probe_messages(upstream: str, port: int) -> None:
    """The bare pass-through for ``/v1/messages`` (:func:`_probe_aiohttp` on that route)."""
    _probe_aiohttp(upstream, port, ("/v1/messages",),
                   {"Content-Type": "application/json", "anthropic-version": "2023-06-01"})  # fmt: skip


MESSAGES = Protocol(
    "/messages",
    lambda mark: {"model": "bench", "max_tokens": 64, "tools": MESSAGES_TOOLS,
                  "messages": [{"role": "user", "content": mark}]},
    lambda raw, mark, stream: (f'"toolu_{mark}"' in raw.decode() if stream else
                               json.loads(raw)["content"][0]["id"] == f"toolu_{mark}"),
    {"Content-Type": "application/json", "anthropic-version": "2023-06-01"},
)  # fmt: skip


def messages_overhead(args: argparse.Namespace) -> bool:
    """``/v1/messages``: proxy CPU per clean request (one valid ``tool_use`` per answer, streamed
    and not) through ``toolmend serve`` and through a bare aiohttp pass-through of the same
    protocol, in one run, rounds alternating which goes first. Prints a table; True when every
    request got its own answer."""
    import aiohttp

    up = subprocess.Popen([sys.executable, str(MESSAGES_UPSTREAM)], stdout=subprocess.PIPE, text=True,
                          start_new_session=True)  # fmt: skip
    assert up.stdout is not None
    direct = f"http://127.0.0.1:{int(up.stdout.readline().split()[1])}/v1"
    procs: list[subprocess.Popen[Any]] = [up]
    try:
        targets = {}
        p = _free_port()
        procs.append(_start([sys.executable, "-m", "toolmend", "serve", "--upstream", direct, "--port", str(p)],
                            f"http://127.0.0.1:{p}/healthz"))  # fmt: skip
        targets["toolmend serve"] = (f"http://127.0.0.1:{p}/v1", procs[-1].pid)
        p = _free_port()
        procs.append(_start([sys.executable, __file__, "--probe", "messages", "--upstream", direct, "--port", str(p)],
                            f"http://127.0.0.1:{p}/healthz"))  # fmt: skip
        targets["bare pass-through (aiohttp)"] = (f"http://127.0.0.1:{p}/v1", procs[-1].pid)
        cpu: Counter[tuple[str, bool]] = Counter()
        sent: Counter[tuple[str, bool]] = Counter()
        failed = 0

        async def run() -> None:
            nonlocal failed
            async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=args.concurrency)
            ) as session:
                for stream in (False, True):
                    for url, _pid in targets.values():  # warm-up
                        warm = [f"w{i}" for i in range(args.concurrency * 2)]
                        await Load(args.concurrency, MESSAGES).run(session, url, warm, stream)
                    for r in range(args.rounds):
                        order = list(targets) if r % 2 == 0 else list(reversed(targets))
                        for what in order:
                            url, pid = targets[what]
                            marks = [f"{what[0]}{int(stream)}{r}-{i}" for i in range(args.requests)]
                            before = _cpu_s(pid)
                            load = Load(args.concurrency, MESSAGES)
                            await load.run(session, url, marks, stream)
                            cpu[what, stream] += _cpu_s(pid) - before
                            sent[what, stream] += len(marks)
                            failed += len(marks) - sum(load.answers.values())

        asyncio.run(run())
        print("\n/v1/messages (Anthropic Messages), clean tool_use answers, "
              f"{args.rounds} rounds x {args.requests} requests, concurrency {args.concurrency}:")  # fmt: skip
        print("| through | mode | CPU ms/req | vs bare |")
        print("|---|---|---|---|")
        for stream in (False, True):
            bare = (
                cpu["bare pass-through (aiohttp)", stream]
                * 1000
                / sent["bare pass-through (aiohttp)", stream]
            )
            for what in targets:
                ms = cpu[what, stream] * 1000 / sent[what, stream]
                print(f"| {what} | {'stream' if stream else 'non-stream'} | {ms:.3f} | {ms / bare:.2f}x |")
        print(f"check: every /v1/messages request got its own answer: {'PASS' if not failed else 'FAIL'}")
        return not failed
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


BOOST = [0]


def _start(cmd: list[str], health: str, src: Path = ROOT / "src") -> subprocess.Popen[Any]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(src)}, start_new_session=True)  # fmt: skip
    _wait_healthy(health, proc)
    _boost(proc.pid, BOOST[0])
    return proc


def _boost(pid: int, nice: int) -> None:
    """Give ``pid``'s session (autogroup) the niceness ``nice`` (negative: needs CAP_SYS_NICE)."""
    if nice:
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))


def _autogroup() -> str:
    try:
        return "on" if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1" else "off"
    except OSError:
        return "n/a"


def _row(r: dict[str, Any]) -> str:
    return (f"| {r['what']} | {r['mode']} | {r['direct_p50']:.2f} / {r['direct_p99']:.2f} | "
            f"{r['proxy_p50']:.2f} / {r['proxy_p99']:.2f} | {r['added_p50']:+.2f} | {r['added_p99']:+.2f} | "
            f"{r['proxy_cpu_ms']:.3f} | {r['sent']} | {r['answered']} | {r['failures']} | {r['duplicated']} |")  # fmt: skip


def _busy(r: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v * 100:.0f}%" for k, v in r["busy"].items())


# -- /v1/responses: the same comparison for the Responses API ----------------------------------------

RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "parameters": TOOLS[0]["function"]["parameters"]}
]


RESPONSES = Protocol(
    "/responses",
    lambda mark: {"model": "bench", "input": mark, "tools": RESPONSES_TOOLS},
    lambda raw, mark, stream: (b'"response.completed"' in raw and f'"call_{mark}"'.encode() in raw if stream else
                               json.loads(raw)["output"][0]["call_id"] == f"call_{mark}"),
)  # fmt: skip
"""The marker is the ``input``; an answer is right when its function call's ``call_id`` carries it."""


def _responses_rows(
    direct: str, targets: list[tuple[str, str, int, bool]], upstream_pid: int, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """``/v1/responses`` through toolmend serve and through the bare pass-through of the same
    protocol (the aiohttp probe), streamed and not, against the same upstream in the same run."""
    rows = []
    for what, url, pid, streams in targets:
        if not streams:  # the Starlette probe forwards chat completions only
            continue
        for stream in (False, True):
            tag = f"r{len(rows)}{'s' if stream else 'n'}"
            r = asyncio.run(_compare(direct, url, {"proxy": pid, "upstream": upstream_pid}, args, stream, tag,
                                     RESPONSES))  # fmt: skip
            rows.append({"what": f"{what} /v1/responses", **r})
            print(f"  {what} /v1/responses, {r['mode']}: CPU busy during the proxied requests: {_busy(r)}",
                  flush=True)  # fmt: skip
    toolmend = {r["mode"]: r["proxy_cpu_ms"] for r in rows if r["what"].startswith("toolmend serve /v1")}
    bare = {r["mode"]: r["proxy_cpu_ms"] for r in rows if r["what"].startswith("bare pass-through (aiohttp)")}
    for mode in toolmend:
        if mode in bare:
            print(f"  /v1/responses {mode}: toolmend serve {toolmend[mode]:.3f} ms CPU per clean request, "
                  f"bare pass-through {bare[mode]:.3f} ms ({toolmend[mode] / bare[mode]:.2f}x)", flush=True)  # fmt: skip
    return rows


# -- the MCP guard ---------------------------------------------------------------------------

MCP_SERVER = ROOT / "tests" / "mcp_guard" / "mcp_server.py"


def _wait_port(port: int, proc: subprocess.Popen[Any], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"port {port} did not open")


def _probe_mcp_bare(upstream: str, port: int) -> None:
    """The floor for an MCP relay: each POST forwarded with the MCP headers, its answer (JSON or
    an event stream) relayed piece by piece, nothing parsed."""
    import aiohttp
    from aiohttp import web

    keep = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id")

    async def start(app: web.Application) -> None:
        app["s"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def relay(request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() in keep}
        async with request.app["s"].request(request.method, upstream, data=await request.read(),
                                            headers=headers) as r:  # fmt: skip
            back = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "mcp-session-id")}
            out = web.StreamResponse(status=r.status, headers=back)
            await out.prepare(request)
            async for piece in r.content.iter_any():
                await out.write(piece)
            await out.write_eof()
            return out

    app = web.Application()
    app.on_startup.append(start)
    app.router.add_route("POST", "/mcp", relay)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


async def _mcp_load(url: str, calls: int, concurrency: int) -> dict[str, Any]:
    """One MCP session over raw HTTP (initialize, tools/list), then ``calls`` clean ``tools/call``
    requests from ``concurrency`` clients; each answer must carry its own sum."""
    import aiohttp

    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    counts = {"sent": 0, "answered": 0, "failures": 0}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
        async with http.post(url, json=init, headers=accept) as r:
            await r.read()
            headers = {**accept, "Mcp-Session-Id": r.headers.get("Mcp-Session-Id", ""),
                       "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with http.post(url, json=note, headers=headers) as r:
            await r.read()
        async with http.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
        ) as r:
            await r.read()
        work = iter(range(calls))

        async def worker() -> None:
            for i in work:
                body = {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                        "params": {"name": "add", "arguments": {"a": i, "b": 1}}}  # fmt: skip
                counts["sent"] += 1
                async with http.post(url, json=body, headers=headers) as r:
                    text = (await r.read()).decode()
                if r.status == 200 and f'"structuredContent":{{"result":{i + 1}}}' in text.replace(" ", ""):
                    counts["answered"] += 1
                else:
                    counts["failures"] += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return counts


def _mcp_overhead(args: argparse.Namespace) -> bool:
    """CPU per clean ``tools/call`` of ``toolmend mcp-guard --upstream`` next to a bare MCP
    pass-through, both in front of the same real MCP server (the SDK's MCPServer on uvicorn, the
    tests' server), measured in one run, alternating which goes first; True when every call was
    answered once and right."""
    procs: list[subprocess.Popen[Any]] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        up_port = _free_port()
        up = subprocess.Popen([sys.executable, str(MCP_SERVER), "--http", str(up_port)], stderr=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, text=True, env=env, start_new_session=True)  # fmt: skip
        procs.append(up)
        _wait_port(up_port, up)
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        targets = []
        g_port = _free_port()
        guard = subprocess.Popen([sys.executable, "-m", "toolmend", "mcp-guard", "--upstream", upstream, "--port",
                                  str(g_port)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                 env=env, start_new_session=True)  # fmt: skip
        procs.append(guard)
        _wait_port(g_port, guard)
        targets.append(("toolmend mcp-guard", f"http://127.0.0.1:{g_port}/mcp", guard.pid))
        b_port = _free_port()
        bare = subprocess.Popen([sys.executable, __file__, "--probe", "mcp-bare", "--upstream", upstream, "--port",
                                 str(b_port)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                env=env, start_new_session=True)  # fmt: skip
        procs.append(bare)
        _wait_port(b_port, bare)
        targets.append(("bare MCP pass-through (aiohttp)", f"http://127.0.0.1:{b_port}/mcp", bare.pid))
        for _what, url, _pid in targets:  # warm-up: imports, pools, the compiled checker
            asyncio.run(_mcp_load(url, 20, 4))
        cpu = {what: 0.0 for what, _, _ in targets}
        tally = {what: Counter[str]() for what, _, _ in targets}
        for r in range(args.rounds):
            for what, url, pid in targets if r % 2 == 0 else targets[::-1]:
                before = _cpu_s(pid)
                counts = asyncio.run(_mcp_load(url, args.mcp, min(args.concurrency, 16)))
                cpu[what] += _cpu_s(pid) - before
                tally[what].update(counts)
        print(f"\nMCP: {args.rounds} rounds x {args.mcp} clean tools/call per relay (concurrency "
              f"{min(args.concurrency, 16)}), upstream: the SDK's MCPServer over streamable HTTP (event streams)")  # fmt: skip
        print("\n| relay | CPU ms per tools/call | sent | answered | failed |")
        print("|---|---|---|---|---|")
        for what, _, _ in targets:
            t = tally[what]
            print(f"| {what} | {1000 * cpu[what] / max(t['sent'], 1):.3f} | {t['sent']} | {t['answered']} | "
                  f"{t['failures']} |")  # fmt: skip
        guard_ms, bare_ms = (1000 * cpu[w] / max(tally[w]["sent"], 1) for w, _, _ in targets)
        print(
            f"MCP guard CPU added per clean tools/call over the bare pass-through: {guard_ms - bare_ms:+.3f} ms"
        )
        return all(t["answered"] == t["sent"] and not t["failures"] for t in tally.values())
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=2000, help="requests per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=100.0, help="the upstream's mean service time")
    parser.add_argument("--jitter", type=float, default=0.5, help="service time spread: latency x [1-j, 1+j]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--boost", type=int, default=0, metavar="NICE",
        help="autogroup niceness for every benchmark process (e.g. -10): on a shared machine, other "
        "jobs then queue the benchmark less; the direct and the proxied paths get the same boost",
    )  # fmt: skip
    parser.add_argument("--memory", type=int, default=20000, help="requests of the memory run (0: skip)")
    parser.add_argument(
        "--stacks", action="store_true", help="also measure a bare pass-through on Starlette+uvicorn"
    )
    parser.add_argument(
        "--baseline-src", type=Path, metavar="DIR",
        help="also run toolmend serve from this source tree (another commit's src/, e.g. from "
        "'git worktree add'), against the same upstream in the same run: an A/B of two builds",
    )  # fmt: skip
    parser.add_argument(
        "--only", choices=["chat", "messages"],
        help="run one part only: chat (chat completions and /v1/responses) or messages (default: both)",
    )  # fmt: skip
    parser.add_argument(
        "--mcp", type=int, default=0, metavar="N",
        help="also measure toolmend mcp-guard: N clean tools/call per relay per round (0: skip)",
    )  # fmt: skip
    parser.add_argument("--mcp-only", action="store_true", help="measure only the MCP guard (with --mcp N)")
    parser.add_argument(
        "--probe", choices=["aiohttp", "starlette", "messages", "mcp-bare"], help=argparse.SUPPRESS
    )
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probes = {"aiohttp": _probe_aiohttp, "starlette": _probe_starlette, "messages": _probe_messages,
                  "mcp-bare": _probe_mcp_bare}  # fmt: skip
        probes[args.probe](args.upstream, args.port)
        return
    if args.mcp_only:
        sys.exit(0 if _mcp_overhead(args) else 1)
    if not 0 <= args.jitter <= 1 or args.latency_ms < 0:
        parser.error("--latency-ms must be >= 0 and --jitter within [0, 1]")
    BOOST[0] = args.boost
    if args.only == "messages":
        sys.exit(0 if messages_overhead(args) else 1)

    # Each server in its own session: with the kernel's autogroup scheduling (on here) a session
    # shares one CPU share, so the load generator, upstream and proxies would queue each other.
    up = subprocess.Popen(
        [sys.executable, str(UPSTREAM)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert up.stdout is not None
    direct = f"http://127.0.0.1:{int(up.stdout.readline().split()[1])}/v1"
    procs: list[subprocess.Popen[Any]] = [up]
    checks: dict[str, bool] = {}
    BOOST[0] = args.boost
    _boost(os.getpid(), args.boost)
    _boost(up.pid, args.boost)
    try:
        port = _free_port()
        proxy = _start([sys.executable, "-m", "toolmend", "serve", "--upstream", direct, "--port", str(port)],
                       f"http://127.0.0.1:{port}/healthz")  # fmt: skip
        procs.append(proxy)
        proxied = f"http://127.0.0.1:{port}/v1"
        cores = len(os.sched_getaffinity(0))
        print(
            f"machine: {cores} cores; load average before: {os.getloadavg()[0]:.2f}; "
            f"autogroup scheduling: {_autogroup()} (each process in its own session"
            + (f", autogroup nice {args.boost}" if args.boost else "")
            + ")"
        )
        print(f"upstream service time: uniform {args.latency_ms * (1 - args.jitter):.0f}-"
              f"{args.latency_ms * (1 + args.jitter):.0f} ms (mean {args.latency_ms:.0f}, seed {args.seed}); "
              f"concurrency {args.concurrency}; {args.rounds} rounds x {args.requests} requests per target", flush=True)  # fmt: skip
        targets: list[tuple[str, str, int, bool]] = [("toolmend serve", proxied, proxy.pid, True)]
        if args.baseline_src:
            p = _free_port()
            base = _start([sys.executable, "-m", "toolmend", "serve", "--upstream", direct, "--port", str(p)],
                          f"http://127.0.0.1:{p}/healthz", args.baseline_src.resolve())  # fmt: skip
            procs.append(base)
            targets.append(
                (f"toolmend serve from {args.baseline_src}", f"http://127.0.0.1:{p}/v1", base.pid, True)
            )
        p = _free_port()
        bare = _start([sys.executable, __file__, "--probe", "aiohttp", "--upstream", direct, "--port", str(p)],
                      f"http://127.0.0.1:{p}/healthz")  # fmt: skip
        procs.append(bare)
        targets.append(("bare pass-through (aiohttp)", f"http://127.0.0.1:{p}/v1", bare.pid, True))
        if args.stacks:
            p = _free_port()
            star = _start([sys.executable, __file__, "--probe", "starlette", "--upstream", direct, "--port", str(p)],
                          f"http://127.0.0.1:{p}/healthz")  # fmt: skip
            procs.append(star)
            targets.append(
                ("bare pass-through (Starlette+uvicorn)", f"http://127.0.0.1:{p}/v1", star.pid, False)
            )
        rows = []
        for what, url, pid, streams in targets:
            for stream in (False, True) if streams else (False,):
                tag = f"{len(rows)}{'s' if stream else 'n'}"
                r = asyncio.run(_compare(direct, url, {"proxy": pid, "upstream": up.pid}, args, stream, tag))
                rows.append({"what": what, **r})
                print(f"  {what}, {r['mode']}: CPU busy during the proxied requests: {_busy(r)}", flush=True)
        rows += _responses_rows(direct, targets, up.pid, args)
        print("\n| through | mode | direct p50 / p99 ms | proxied p50 / p99 ms | added p50 ms | added p99 ms "
              "| proxy CPU ms/req | sent | answered | failed | duplicated |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(_row(r))
        checks = {
            "every request answered once": all(
                r["answered"] == r["sent"] and not r["failures"] and not r["duplicated"] for r in rows
            )
        }
        if args.memory:
            mem = asyncio.run(_memory(proxied, proxy.pid, args))
            rss = " -> ".join(f"{v:.1f}" for v in mem["rss_mib"])
            print(f"\nmemory: {mem['requests']} requests (half streamed) through the proxy; RSS after each quarter: "
                  f"{rss} MiB; sent {mem['sent']}, answered {mem['answered']}, failed {mem['failures']}, "
                  f"duplicated {mem['duplicated']}")  # fmt: skip
            checks["every request answered once"] &= (
                mem["answered"] == mem["sent"] and not mem["failures"] and not mem["duplicated"]
            )
            # Growth after the first quarter (which includes warming caches and pools).
            growth = mem["rss_mib"][-1] - mem["rss_mib"][0]
            checks[f"no memory growth (RSS +{growth:.1f} MiB over the last three quarters, limit 5)"] = (
                growth < 5
            )
        if args.mcp:
            checks["every MCP tools/call answered once and right"] = _mcp_overhead(args)
        for what, ok in checks.items():
            print(f"check: {what}: {'PASS' if ok else 'FAIL'}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(
            f"median added p50 of toolmend serve over modes: {statistics.median(r['added_p50'] for r in rows[:2]):+.2f} ms"
        )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    if args.only is None:
        checks["/v1/messages"] = messages_overhead(args)
    if not all(checks.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
