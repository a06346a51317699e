"""Evaluation across replicas: ``base_url`` given several times spreads requests over the servers
(least outstanding requests, a connection bound each), a replica that dies is taken out and its
requests go to the others, and nothing of the run's identity depends on which replica answered.

Three real aiohttp servers on 127.0.0.1, each in a process of its own, one of them killed mid-run
(SIGKILL, or a crash after a number of answers)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend._errors import EndpointError
from toolmend._http import ConnectError, HTTPStatusError, Replicas
from toolmend._schema import Message
from toolmend.models import OpenAIModel, RetryPolicy

QUICK = RetryPolicy(max_retries=3, initial_wait=0.01, max_wait=0.05, jitter=0.0)

# Answers after `delay` seconds; names itself (its port) in the answer, so the test sees which
# replica answered; counts the requests it has in flight at once; crashes after `lives` answers.
_SERVER = """
import asyncio, os, sys
from aiohttp import web

lives, delay = int(sys.argv[1]), float(sys.argv[2])
answered = 0
in_flight = 0
peak = 0
port = 0

async def chat(request):
    global answered, in_flight, peak
    body = await request.json()
    in_flight += 1
    peak = max(peak, in_flight)
    try:
        await asyncio.sleep(delay)
    finally:
        in_flight -= 1
    answered += 1
    text = f"{port} {peak}|" + body["messages"][-1]["content"]
    response = web.json_response({
        "id": "c", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })
    if lives and answered >= lives:
        await response.prepare(request)
        await response.write_eof()
        os._exit(0)
    return response

async def main():
    global port
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print("PORT", port, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


class Replica:
    """One chat-completions server process (see ``_SERVER``)."""

    def __init__(self, lives: int = 0, delay: float = 0.02) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(lives), str(delay)], stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def exited(self) -> bool:
        return self._process.poll() is not None

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait(10)


@pytest.fixture
def replicas() -> Any:
    started = [Replica(), Replica(), Replica()]
    yield started
    for r in started:
        r.kill()


def ask(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


def _who(text: str) -> tuple[int, int, str]:
    """(port, the server's peak requests in flight so far, the question) of an answer."""
    head, _, question = text.partition("|")
    port, peak = head.split()
    return int(port), int(peak), question


async def test_requests_spread_over_replicas_within_each_bound(replicas: list[Replica]) -> None:
    urls = [r.base_url for r in replicas]
    async with OpenAIModel("m", base_url=urls, max_connections=2, retry=QUICK, cache=None) as model:
        assert model.max_connections == 6  # two per replica
        answers = await asyncio.gather(*(model.generate(ask(f"q{i}")) for i in range(60)))
    seen = [_who(a.text) for a in answers]
    assert sorted(q for _, _, q in seen) == sorted(f"q{i}" for i in range(60))
    by_port = Counter(port for port, _, _ in seen)
    assert set(by_port) == {r.port for r in replicas}
    # Least outstanding with equal servers: each takes about a third, none far more.
    assert max(by_port.values()) - min(by_port.values()) <= 8, by_port
    assert max(peak for _, peak, _ in seen) <= 2  # no replica ever had more than its bound


async def test_a_replica_killed_mid_run_loses_no_request(replicas: list[Replica]) -> None:
    urls = [r.base_url for r in replicas]
    victim = replicas[1]
    done: list[str] = []

    async def one(model: OpenAIModel, i: int) -> Any:
        out = await model.generate(ask(f"q{i}"))
        done.append(out.text)
        if len(done) == 20:
            victim.kill()  # SIGKILL while it has requests in flight
        return out

    async with OpenAIModel("m", base_url=urls, max_connections=3, retry=QUICK, cache=None) as model:
        outs = await asyncio.gather(*(one(model, i) for i in range(90)))
        texts = [o.text for o in outs]
        pool = model.replicas
    assert pool is not None
    assert victim.exited
    # The requests it had in flight were sent again, to another replica, and counted as retries.
    assert sum(o.retries for o in outs) >= 1
    questions = [_who(t)[2] for t in texts]
    assert sorted(questions) == sorted(f"q{i}" for i in range(90))  # every request answered once
    assert victim.port in Counter(_who(t)[0] for t in done[:20])  # it served until it died
    late = Counter(_who(t)[0] for t in done[25:])
    assert victim.port not in late  # taken out: nothing after its death came from it
    dead = next(r for r in pool.replicas if r.url == victim.base_url)
    assert dead.failures >= 1 and dead.reason


async def test_every_replica_gone_stops_with_one_error_naming_them(replicas: list[Replica]) -> None:
    urls = [r.base_url for r in replicas]
    patient = RetryPolicy(max_retries=50, initial_wait=0.001, max_wait=0.01, jitter=0.0)
    async with OpenAIModel("m", base_url=urls, retry=patient, cache=None) as model:
        await model.generate(ask("before"))
        for r in replicas:
            r.kill()
        with pytest.raises(EndpointError, match="every replica stopped answering") as info:
            await model.generate(ask("after"))
    for url in urls:
        assert url in str(info.value)


def test_identity_ignores_the_order_and_the_replica_that_answered(tmp_path: Path) -> None:
    a, b, c = "http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1", "http://127.0.0.1:9003/v1"
    one = OpenAIModel("m", base_url=[a, b, c], cache=None)
    other = OpenAIModel("m", base_url=[c, a, b], cache=None)
    assert one.cache_identity() == other.cache_identity()
    assert one.cache_identity()["base_url"] == [a, b, c]
    # One URL keeps the key it always had (a plain string).
    assert OpenAIModel("m", base_url=a, cache=None).cache_identity()["base_url"] == a
    with pytest.raises(Exception, match="given twice"):
        OpenAIModel("m", base_url=[a, a], cache=None)


async def test_a_gateway_error_fails_over_at_once_but_a_model_500_does_not() -> None:
    pool = Replicas(["http://a/v1", "http://b/v1"], limit=1)
    first = await pool.acquire()
    pool.release(first, HTTPStatusError("HTTP 503: overloaded", status=503))
    assert first.failures == 1 and first.out_until > 0
    second = await pool.acquire(avoid={first.url})
    assert second is not None and second.url == "http://b/v1"
    pool.release(second, HTTPStatusError("HTTP 500: could not parse region as JSON", status=500))
    assert second.failures == 0  # the model's answer, not the server's health
    # Only the failed replica left to try, and it is resting: the caller's own backoff applies.
    again = await pool.acquire()
    assert again is not None and again.url == "http://b/v1"
    assert await pool.acquire(avoid={"http://b/v1"}) is None
    pool.release(again, ConnectError("x", url="http://b/v1", reason="connection refused"))


def test_a_bench_run_across_replicas_survives_one_dying(data_dir: Path, tmp_path: Path) -> None:
    """The CLI with three ``--base-url``: one replica crashes after a few answers; every sample is
    recorded once, none as failed, and the manifest holds the URLs sorted."""
    from toolmend.cli import app

    servers = [Replica(delay=0.01), Replica(lives=3, delay=0.01), Replica(delay=0.01)]
    try:
        urls = [s.base_url for s in servers]
        args = ["bench", "bfcl", "--model", "openai/m", "--data", str(data_dir / "bfcl"),
                "--categories", "simple_python", "--limit", "24", "--runs-dir", str(tmp_path / "runs"),
                "--no-cache", "--max-connections", "2", "--no-report"]  # fmt: skip
        for url in reversed(urls):
            args += ["--base-url", url]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert servers[1].exited  # it crashed mid-run
    finally:
        for s in servers:
            s.kill()
    (run,) = (tmp_path / "runs").iterdir()
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    ids = [r["id"] for r in records]
    assert len(ids) == 24 and len(set(ids)) == 24
    assert all(r.get("error") is None for r in records)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["connection"]["base_url"] == sorted(urls)
