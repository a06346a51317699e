"""Harness throughput: samples/s through the OpenAI backend + runner against a local server
with a fixed latency, compared with the ideal ``connections / latency``; CPU per sample on both
sides; and peak memory at 2,000 vs 10,000 samples to show it stays flat.

    .venv/bin/python benchmarks/harness_throughput.py [--latency 0.1] [--connections 64] [--sizes 2000 10000]
        [--loop asyncio|uvloop] [--cache] [--no-reference] [--replicas 3]

Three clients run against the same server process, each in a fresh child process (so that its
peak RSS and CPU time are its own):

- ``bare``: the floor — raw aiohttp posts of the same JSON under the same concurrency, no toolmend;
- ``model``: ``OpenAIModel.generate`` from 64 plain workers (the backend alone);
- ``harness``: the full path — ``run_samples`` with records fsync'd to a run directory.

CPU is process time (user + system, all threads), so it means the same on a loaded machine,
where wall-clock throughput does not: the "CPU ceiling" column is the throughput one core could
sustain at that cost, and the server's own CPU per request (read from /proc) is printed too,
since on a 2-core machine the two processes share the cores.

``--replicas N`` starts N servers and gives the model every URL (``base_url=[...]``, as
``--base-url`` given N times): ``--connections`` is then the bound per replica, the ideal is
``N × connections / latency``, and the ``bare`` row is left out (it talks to one server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "helpers" / "fake_openai_server.py"
WARMUP = 64


def _bare(base_url: str, n: int, connections: int, loop: str) -> dict[str, float]:
    import aiohttp

    url = f"{base_url}/chat/completions"

    async def main() -> dict[str, float]:
        connector = aiohttp.TCPConnector(limit=connections)
        async with aiohttp.ClientSession(
            connector=connector, headers={"Content-Type": "application/json"}
        ) as session:

            async def one(i: int) -> None:
                body = {"model": "bench", "messages": [{"role": "user", "content": f"question number {i}"}]}
                async with session.post(url, data=json.dumps(body).encode()) as response:
                    answer = json.loads(await response.read())
                assert answer["choices"][0]["message"]["content"].endswith(f"number {i}")

            await asyncio.gather(*(one(-i) for i in range(1, WARMUP + 1)))
            work = iter(range(n))

            async def worker() -> None:
                for i in work:
                    await one(i)

            start, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(worker() for _ in range(connections)))
            return _figures(n, start, cpu)

    return asyncio.run(main())


def _run(main: Coroutine[Any, Any, dict[str, float]], loop: str) -> dict[str, float]:
    if loop == "uvloop":
        import uvloop  # optional: pip install uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main)
    return asyncio.run(main)


def _figures(n: int, start: float, cpu: float) -> dict[str, float]:
    wall = time.perf_counter() - start
    return {"wall_s": wall, "samples_per_s": n / wall, "cpu_ms": (time.process_time() - cpu) * 1000 / n}


def _toolmend(
    base_url: str, n: int, connections: int, cache: bool, harness: bool, loop: str
) -> dict[str, float]:
    from toolmend._schema import Message, Sample
    from toolmend.models import OpenAIModel, ResponseCache
    from toolmend.runs import RunDir, SampleRecord, run_samples

    def samples() -> Iterator[Sample]:
        for i in range(n):
            yield Sample(id=f"s{i}", messages=[Message(role="user", content=f"question number {i}")])

    async def main() -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            urls = base_url.split(",")
            model = OpenAIModel(
                "bench",
                base_url=urls if len(urls) > 1 else urls[0],
                max_connections=connections,
                cache=ResponseCache(Path(tmp) / "cache") if cache else None,
            )
            # Connections opened before the clock starts, as for the bare client.
            warm = [Message(role="user", content=f"warm-up {i}") for i in range(WARMUP)]
            await asyncio.gather(*(model.generate([m]) for m in warm))

            async def solve(sample: Sample) -> SampleRecord:
                record = SampleRecord(id=sample.id)
                out = await model.generate(sample.messages, sample_id=sample.id)
                record.add_completion(out)
                record.scores = {"ok": 1.0 if out.text.endswith(sample.messages[0].content) else 0.0}
                return record

            start, cpu = time.perf_counter(), time.process_time()
            in_flight = connections * len(urls)
            if harness:
                summary = await run_samples(
                    samples(),
                    solve,
                    RunDir(Path(tmp) / "run"),
                    max_samples=in_flight,
                    progress=False,
                    total=n,
                )
                assert summary.n_scored == n and summary.metrics == {"ok": 1.0}, summary
            else:
                work = samples()

                async def worker() -> None:
                    for sample in work:
                        record = await solve(sample)
                        assert record.scores["ok"] == 1.0

                await asyncio.gather(*(worker() for _ in range(in_flight)))
            result = _figures(n, start, cpu)
            await model.aclose()
        return result

    return _run(main(), loop)


def _child(mode: str, base_url: str, n: int, args: argparse.Namespace) -> dict[str, float]:
    if mode == "bare":
        result = _bare(base_url, n, args.connections, args.loop)
    else:
        result = _toolmend(base_url, n, args.connections, args.cache, mode == "harness", args.loop)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _cpu_s(pid: int) -> float | None:
    # utime + stime of another process; Linux only (the benchmark still runs elsewhere, without it).
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _servers_cpu_s(servers: list[subprocess.Popen[str]]) -> float | None:
    times = [_cpu_s(s.pid) for s in servers]
    return None if any(t is None for t in times) else sum(t for t in times if t is not None)


def _run_child(mode: str, base_url: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        mode,
        base_url,
        str(n),
        "--connections",
        str(args.connections),
    ]
    out = subprocess.run(cmd + (["--cache"] if args.cache else []), capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument(
        "--cache", action="store_true", help="also write every answer to a fresh response cache"
    )
    parser.add_argument(
        "--loop", choices=["asyncio", "uvloop"], default="asyncio", help="the clients' event loop"
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the bare and model rows")
    parser.add_argument(
        "--replicas", type=int, default=1, help="servers sharing the load (--connections each)"
    )
    parser.add_argument("--child", nargs=3, metavar=("MODE", "BASE_URL", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, base_url, n = args.child
        print(json.dumps(_child(mode, base_url, int(n), args)))
        return

    servers = [
        subprocess.Popen(
            [sys.executable, str(SERVER), "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(max(1, args.replicas))
    ]
    try:
        urls = []
        for server in servers:
            assert server.stdout is not None
            urls.append(f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}/v1")
        base_url = ",".join(urls)
        ideal = len(servers) * args.connections / args.latency
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(
            f"latency {args.latency * 1000:.0f} ms, {len(servers)} server(s), {args.connections} connections each, "
            f"cache {'on' if args.cache else 'off'}, {args.loop} loop, {os.cpu_count()} cores, load average {load:.1f}"
        )
        print(f"ideal: {ideal:.0f} samples/s")
        print(
            f"{'client':>8} {'samples':>8} {'wall s':>7} {'samples/s':>10} {'ratio':>6} {'peak RSS MiB':>13}"
            f" {'client CPU ms':>14} {'CPU ceiling':>12} {'server CPU ms':>14}"
        )
        reference = (
            [("model", args.sizes[0])]
            if len(servers) > 1
            else [("bare", args.sizes[0]), ("model", args.sizes[0])]
        )
        runs = [] if args.no_reference else reference
        runs += [("harness", n) for n in args.sizes]
        for mode, n in runs:
            before = _servers_cpu_s(servers)
            r = _run_child(mode, base_url, n, args)
            after = _servers_cpu_s(servers)
            # The server's CPU includes the child's warm-up requests; per request over all of them.
            server_ms = (
                f"{(after - before) * 1000 / (n + WARMUP):.3f}" if before is not None and after else "–"
            )
            ceiling = 1000 / r["cpu_ms"] / ideal
            print(
                f"{mode:>8} {n:>8} {r['wall_s']:>7.2f} {r['samples_per_s']:>10.1f} {r['samples_per_s'] / ideal:>6.3f}"
                f" {r['peak_rss_mib']:>13.1f} {r['cpu_ms']:>14.3f} {ceiling:>11.2f}x {server_ms:>14}"
            )
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"load average at the end: {load:.1f}")
    finally:
        for server in servers:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
