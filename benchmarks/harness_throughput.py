"""Harness throughput: samples/s through the OpenAI backend + runner against a local server
with a fixed latency, compared with the ideal ``connections / latency``; and peak memory at
2,000 vs 10,000 samples to show it stays flat (samples are generated lazily, records go to disk).

    .venv/bin/python benchmarks/harness_throughput.py [--latency 0.1] [--connections 64] [--sizes 2000 10000]

The server (tests/helpers/fake_openai_server.py) runs in its own process; each size runs in a
fresh child process so that its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "helpers" / "fake_openai_server.py"


def _child(base_url: str, n: int, connections: int, cache: bool) -> dict[str, float]:
    from toolmend.models import OpenAIModel, ResponseCache
    from toolmend.runs import RunDir, SampleRecord, run_samples
    from toolmend.schema import Message, Sample

    def samples() -> Iterator[Sample]:
        for i in range(n):
            yield Sample(id=f"s{i}", messages=[Message(role="user", content=f"question number {i}")])

    async def main() -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            model = OpenAIModel(
                "bench",
                base_url=base_url,
                max_connections=connections,
                cache=ResponseCache(Path(tmp) / "cache") if cache else None,
            )

            async def solve(sample: Sample) -> SampleRecord:
                record = SampleRecord(id=sample.id)
                out = await model.generate(sample.messages, sample_id=sample.id)
                record.add_completion(out)
                record.scores = {"ok": 1.0 if out.text.endswith(sample.messages[0].content) else 0.0}
                return record

            start, cpu = time.perf_counter(), time.process_time()
            summary = await run_samples(
                samples(), solve, RunDir(Path(tmp) / "run"), max_samples=connections, progress=False, total=n
            )
            wall = time.perf_counter() - start
            cpu_ms = (time.process_time() - cpu) * 1000 / n
            await model.aclose()
            assert summary.n_scored == n and summary.metrics == {"ok": 1.0}, summary
        return {"n": n, "wall_s": wall, "samples_per_s": n / wall, "cpu_ms": cpu_ms}

    result = asyncio.run(main())
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument(
        "--cache", action="store_true", help="also write every answer to a fresh response cache"
    )
    parser.add_argument("--child", nargs=2, metavar=("BASE_URL", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child[0], int(args.child[1]), args.connections, args.cache)))
        return

    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        base_url = f"http://127.0.0.1:{port}/v1"
        ideal = args.connections / args.latency
        print(
            f"latency {args.latency * 1000:.0f} ms, {args.connections} connections, cache {'on' if args.cache else 'off'}"
        )
        print(f"ideal: {ideal:.0f} samples/s")
        print(
            f"{'samples':>8} {'wall s':>8} {'samples/s':>10} {'ratio':>6} {'peak RSS MiB':>13} {'client CPU ms/sample':>21}"
        )
        for n in args.sizes:
            cmd = [
                sys.executable,
                __file__,
                "--child",
                base_url,
                str(n),
                "--connections",
                str(args.connections),
            ]
            out = subprocess.run(cmd + (["--cache"] if args.cache else []), capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(out.stderr)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            ratio = r["samples_per_s"] / ideal
            print(
                f"{n:>8} {r['wall_s']:>8.2f} {r['samples_per_s']:>10.1f} {ratio:>6.3f}"
                f" {r['peak_rss_mib']:>13.1f} {r['cpu_ms']:>21.2f}"
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
