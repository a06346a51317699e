"""What ``toolmend serve`` adds: latency (p50/p99) and CPU per request for clean tool-call traffic,
streamed and not, through the proxy and directly to the same upstream in the same run; memory
over a long run; and every request answered exactly once.

    .venv/bin/python benchmarks/proxy_overhead.py [--concurrency 64] [--requests 2000] [--rounds 3]
        [--memory 20000] [--stacks]

Three processes: the scripted upstream (tests/serve/scripted_upstream.py: aiohttp.web, one
valid call per answer, its id carrying the request's marker), ``toolmend serve`` in front of it,
and this load generator (N concurrent aiohttp clients). Each round sends the same requests
directly and through the proxy (alternating which goes first), so a change of machine load hits
both. Added latency is the difference of the two percentiles. The proxy's CPU per request is its
process time (/proc) over the proxied requests; it means the same on a loaded machine, where the
wall-clock figures do not.

``--stacks`` also measures the candidate server stacks on their own: a bare pass-through (read
the body, forward it with one aiohttp client session, send the answer back) on aiohttp.web and
on Starlette + uvicorn (``pip install starlette uvicorn``), against the same upstream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
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


class Load:
    """N concurrent clients sending marked requests; latencies and who got which answer."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.answers: Counter[str] = Counter()
        self.failures = 0

    async def run(self, session: Any, base: str, marks: list[str], stream: bool) -> list[float]:
        url = base + "/chat/completions"
        work = iter(marks)
        latencies: list[float] = []

        async def one(mark: str) -> None:
            body = {"model": "bench", "messages": [{"role": "user", "content": mark}], "tools": TOOLS}
            if stream:
                body["stream"] = True
            t = time.perf_counter()
            async with session.post(
                url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
            ) as r:
                raw = await r.read()
            latencies.append(time.perf_counter() - t)
            ok = r.status == 200 and (f'"call_{mark}"' in raw.decode() if stream else
                                      json.loads(raw)["choices"][0]["message"]["tool_calls"][0]["id"] == f"call_{mark}")  # fmt: skip
            if ok:
                self.answers[mark] += 1
            else:
                self.failures += 1

        async def worker() -> None:
            for mark in work:
                await one(mark)

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        return latencies


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _compare(
    direct: str, proxied: str, pid: int, args: argparse.Namespace, stream: bool, tag: str
) -> dict[str, Any]:
    import aiohttp

    load = Load(args.concurrency)
    lat: dict[str, list[float]] = {"direct": [], "proxy": []}
    cpu = 0.0
    sent = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency)) as session:
        await load.run(
            session, proxied, [f"{tag}w{i}" for i in range(args.concurrency * 2)], stream
        )  # warm-up
        await load.run(session, direct, [f"{tag}v{i}" for i in range(args.concurrency * 2)], stream)
        for r in range(args.rounds):
            order = ["direct", "proxy"] if r % 2 == 0 else ["proxy", "direct"]
            for who in order:
                marks = [f"{tag}{who[0]}{r}-{i}" for i in range(args.requests)]
                before = _cpu_s(pid)
                lat[who] += await load.run(session, direct if who == "direct" else proxied, marks, stream)
                if who == "proxy":
                    cpu += _cpu_s(pid) - before
                    sent += len(marks)
    dup = sum(1 for n in load.answers.values() if n > 1)
    return {
        "mode": "stream" if stream else "non-stream",
        "direct_p50": _pct(lat["direct"], 0.5), "direct_p99": _pct(lat["direct"], 0.99),
        "proxy_p50": _pct(lat["proxy"], 0.5), "proxy_p99": _pct(lat["proxy"], 0.99),
        "added_p50": _pct(lat["proxy"], 0.5) - _pct(lat["direct"], 0.5),
        "added_p99": _pct(lat["proxy"], 0.99) - _pct(lat["direct"], 0.99),
        "proxy_cpu_ms": cpu * 1000 / sent, "answered": sum(load.answers.values()), "failures": load.failures,
        "duplicated": dup,
    }  # fmt: skip


async def _memory(proxied: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    load = Load(args.concurrency)
    samples = []
    step = args.memory // 4
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency)) as session:
        for k in range(4):
            marks = [f"m{k}-{i}" for i in range(step)]
            await load.run(session, proxied, marks[: step // 2], False)
            await load.run(session, proxied, marks[step // 2 :], True)
            samples.append(_rss_mib(pid))
    return {"requests": step * 4, "rss_mib": samples, "answered": sum(load.answers.values()),
            "failures": load.failures, "duplicated": sum(1 for n in load.answers.values() if n > 1)}  # fmt: skip


# -- the stack probe: a bare pass-through on each candidate server stack -----------------------------


def _probe_aiohttp(upstream: str, port: int) -> None:
    import aiohttp
    from aiohttp import web

    async def start(app: web.Application) -> None:
        app["s"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def chat(request: web.Request) -> web.Response:
        body = await request.read()
        json.loads(body)
        async with request.app["s"].post(upstream + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"}) as r:  # fmt: skip
            raw = await r.read()
        json.loads(raw) if not raw.startswith(b"data:") else None
        return web.Response(body=raw, content_type=r.content_type)

    async def health(_r: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.on_startup.append(start)
    app.router.add_post("/v1/chat/completions", chat)
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


def _start(cmd: list[str], health: str) -> subprocess.Popen[Any]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})  # fmt: skip
    _wait_healthy(health, proc)
    return proc


def _row(r: dict[str, Any]) -> str:
    return (f"| {r['what']} | {r['mode']} | {r['direct_p50']:.2f} / {r['direct_p99']:.2f} | "
            f"{r['proxy_p50']:.2f} / {r['proxy_p99']:.2f} | {r['added_p50']:+.2f} | {r['added_p99']:+.2f} | "
            f"{r['proxy_cpu_ms']:.3f} | {r['answered']} | {r['failures']} | {r['duplicated']} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=2000, help="requests per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", type=int, default=20000, help="requests of the memory run (0: skip)")
    parser.add_argument(
        "--stacks", action="store_true", help="also compare bare aiohttp.web and Starlette+uvicorn"
    )
    parser.add_argument("--probe", choices=["aiohttp", "starlette"], help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        (_probe_aiohttp if args.probe == "aiohttp" else _probe_starlette)(args.upstream, args.port)
        return

    up = subprocess.Popen([sys.executable, str(UPSTREAM)], stdout=subprocess.PIPE, text=True)
    assert up.stdout is not None
    direct = f"http://127.0.0.1:{int(up.stdout.readline().split()[1])}/v1"
    procs: list[subprocess.Popen[Any]] = [up]
    try:
        port = _free_port()
        proxy = _start([sys.executable, "-m", "toolmend", "serve", "--upstream", direct, "--port", str(port)],
                       f"http://127.0.0.1:{port}/healthz")  # fmt: skip
        procs.append(proxy)
        proxied = f"http://127.0.0.1:{port}/v1"
        print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores); "
              f"concurrency {args.concurrency}, {args.rounds} rounds x {args.requests} requests per target", flush=True)  # fmt: skip
        rows = []
        for stream in (False, True):
            r = asyncio.run(_compare(direct, proxied, proxy.pid, args, stream, "s" if stream else "n"))
            rows.append({"what": "toolmend serve", **r})
        if args.stacks:
            for stack in ("aiohttp", "starlette"):
                p = _free_port()
                probe = _start([sys.executable, __file__, "--probe", stack, "--upstream", direct, "--port", str(p)],
                               f"http://127.0.0.1:{p}/healthz")  # fmt: skip
                procs.append(probe)
                r = asyncio.run(
                    _compare(direct, f"http://127.0.0.1:{p}/v1", probe.pid, args, False, stack[0])
                )
                rows.append({"what": f"bare pass-through on {stack}", **r})
                probe.terminate()
        print("\n| through | mode | direct p50 / p99 ms | proxied p50 / p99 ms | added p50 ms | added p99 ms "
              "| proxy CPU ms/req | answered | failed | duplicated |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(_row(r))
        if args.memory:
            mem = asyncio.run(_memory(proxied, proxy.pid, args))
            rss = " -> ".join(f"{v:.1f}" for v in mem["rss_mib"])
            print(f"\nmemory: {mem['requests']} requests (half streamed) through the proxy; RSS after each quarter: "
                  f"{rss} MiB; answered {mem['answered']}, failed {mem['failures']}, duplicated {mem['duplicated']}")  # fmt: skip
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(f"median added p50 over modes: {statistics.median(r['added_p50'] for r in rows[:2]):+.2f} ms")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)


if __name__ == "__main__":
    main()
