"""Can one client stall another? The slowest clean-request latency through ``toolmend serve``
while a hostile request is in flight, as a ratio to the unloaded latency, measured in one run.

    .venv/bin/python benchmarks/proxy_isolation.py [--clean 5] [--rounds 1] [--json]

Processes: the attack upstream (tests/serve/attacks.py: clean calls, and the hostile answers an
attack asks for), ``toolmend serve`` in front of it (its limits at their defaults, except the
header and body timeouts, set to 3 s so that the half-sent requests end within the run), and
this client. For each attack of tests/serve/attacks.py, one connection sends it while another
sends ``--clean`` clean requests one after another (one tool, one valid call), starting once the
attack has been sent. Unloaded: the same clean requests with nothing else in flight, measured
before each attack (so a change in machine load hits both).

Printed per attack: the unloaded best and median, the slowest and the best clean latency while
the attack was in flight, the ratio slowest / unloaded median, the status the attacker got and
how long its request took. "in flight" counts only the clean requests answered before the
attack's own answer.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "serve"))  # the test suite's attack upstream, as pytest sees it
import attacks  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[Any], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the proxy exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"port {port} did not open")


async def _clean(port: int, n: int, mark: str) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        status, body = await attacks.send(attacks.clean_body(f"{mark}{i}"), port)
        out.append(time.perf_counter() - t)
        if status != 200 or f"call_{mark}{i}".encode() not in body:
            raise SystemExit(f"a clean request failed: {status} {body[:200]!r}")
    return out


async def measure(port: int, clean: int) -> list[dict[str, Any]]:
    """One row per attack (see the module docstring)."""
    await _clean(port, 3, "warm")
    rows = []
    for attack in attacks.ATTACKS:
        unloaded = await _clean(port, clean, "u")
        t = time.perf_counter()
        hostile = asyncio.ensure_future(attacks.send(attack, port))
        await asyncio.sleep(0.02)  # the attack is on its way before the first clean request
        during: list[float] = []
        for i in range(clean):
            lat = await _clean(port, 1, f"d{i}-")
            if not hostile.done():
                during += lat
        status, _ = await hostile
        took = time.perf_counter() - t
        while not during and took < 600:  # the attack was quicker than one clean request
            break
        rows.append({
            "attack": attack.name, "expected": attack.expect, "status": status, "attack_s": round(took, 3),
            "unloaded_best_ms": round(min(unloaded) * 1000, 2),
            "unloaded_median_ms": round(statistics.median(unloaded) * 1000, 2),
            "in_flight": len(during),
            "slowest_ms": round(max(during) * 1000, 2) if during else None,
            "best_ms": round(min(during) * 1000, 2) if during else None,
            "ratio": round(max(during) / statistics.median(unloaded), 2) if during else None,
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clean", type=int, default=5, help="clean requests per attack (and unloaded)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    up = subprocess.Popen([sys.executable, str(ROOT / "tests" / "serve" / "attacks.py")], stdout=subprocess.PIPE,
                          text=True, env=env)  # fmt: skip
    proxy: subprocess.Popen[Any] | None = None
    try:
        assert up.stdout is not None
        line = up.stdout.readline()
        if not line.startswith("PORT"):
            raise SystemExit(f"the attack upstream did not start: {line!r}")
        upstream = f"http://127.0.0.1:{line.split()[1]}/v1"
        port = _free_port()
        proxy = subprocess.Popen(
            [sys.executable, "-m", "toolmend", "serve", "--upstream", upstream, "--port", str(port),
             "--header-timeout", "3", "--body-timeout", "3"],
            stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        _wait(port, proxy)
        rows = asyncio.run(measure(port, args.clean))
    finally:
        for p in (proxy, up):
            if p is not None:
                p.terminate()
                p.wait(10)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'attack':45} {'status':>6} {'attack s':>8} {'unloaded ms':>16} {'in flight':>9} "
          f"{'slowest ms':>10} {'ratio':>6}")  # fmt: skip
    for r in rows:
        unloaded = f"{r['unloaded_best_ms']:.1f} / {r['unloaded_median_ms']:.1f}"
        slow = "-" if r["slowest_ms"] is None else f"{r['slowest_ms']:.1f}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        print(f"{r['attack']:45} {r['status']:>6} {r['attack_s']:>8.2f} {unloaded:>16} {r['in_flight']:>9} "
              f"{slow:>10} {ratio:>6}")  # fmt: skip
    worst = max((r["ratio"] for r in rows if r["ratio"] is not None), default=None)
    print(f"worst ratio (slowest clean latency in flight / unloaded median): {worst}")


if __name__ == "__main__":
    main()
