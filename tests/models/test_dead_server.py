"""A server that dies: the OpenAI-compatible backend stops every request with one clear error
naming the URL (its breaker), instead of retrying each sample against nothing; and an unusable
``Retry-After`` from a live one falls back to the backoff schedule. Real aiohttp servers on
127.0.0.1, started and killed here (SIGKILL, or a crash after a number of answers)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import Reply

from toolmend._errors import EndpointError, ModelError
from toolmend._schema import Message
from toolmend.models import OpenAIModel, RetryPolicy

# Many retries and short waits: without the breaker a dead server would exhaust them and end in
# a retryable ModelError; with it the error is an EndpointError after a few refused connections.
PATIENT = RetryPolicy(max_retries=50, initial_wait=0.001, max_wait=0.01, jitter=0.0)


_SERVER = """
import asyncio, os, sys
from aiohttp import web

lives = int(sys.argv[1])
answered = 0

async def chat(request):
    global answered
    body = await request.json()
    answered += 1
    text = body["model"] + ": " + body["messages"][-1]["content"]
    response = web.json_response({
        "id": "c", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })
    if lives and answered >= lives:
        # Crash once this answer is out: the process ends, the kernel closes every socket.
        await response.prepare(request)
        await response.write_eof()
        os._exit(0)
    return response

async def main():
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print("PORT", site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


class ChatServer:
    """An aiohttp chat-completions server in a process of its own: it crashes after ``lives``
    answers, or when :meth:`kill` sends it SIGKILL, as a server that dies does (every socket
    closed by the kernel, nothing listening afterwards)."""

    def __init__(self, lives: int = 0) -> None:
        self.lives = lives
        self.port = 0
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> ChatServer:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(self.lives)], stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        return self

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
        if self._process is not None:
            self._process.wait(10)

    @property
    def exited(self) -> bool:
        return self._process is not None and self._process.poll() is not None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def ask(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


async def test_a_server_killed_mid_run_stops_every_request_with_one_error() -> None:
    server = ChatServer().start()
    try:
        async with OpenAIModel("m", base_url=server.base_url, retry=PATIENT, cache=None) as model:
            assert (await model.generate(ask("before"))).text == "m: before"
            server.kill()
            outcomes = await asyncio.gather(*(model.generate(ask(f"after {i}")) for i in range(8)),
                                            return_exceptions=True)  # fmt: skip
    finally:
        server.kill()
    assert all(isinstance(o, EndpointError) for o in outcomes), outcomes
    message = str(outcomes[0])
    assert server.base_url in message and "stopped accepting connections" in message
    assert "connection refused" in message
    # 8 requests, 50 retries each, yet only a handful of attempts before the breaker opened.
    assert model.breaker is not None and model.breaker.failures < 8 + 4


async def test_a_server_that_comes_back_between_failures_keeps_the_run_going() -> None:
    # Connections refused fewer times in a row than the breaker's threshold: retried as before.
    server = ChatServer().start()
    policy = RetryPolicy(max_retries=1, initial_wait=0.0, jitter=0.0)
    async with OpenAIModel("m", base_url=server.base_url, retry=policy, cache=None) as model:
        await model.generate(ask("x"))
        server.kill()
        with pytest.raises(ModelError, match="connection failed") as info:
            await model.generate(ask("y"))
        assert info.value.retryable and not isinstance(info.value, EndpointError)
        assert model.breaker is not None and not model.breaker.open


def test_a_bench_run_whose_server_dies_stops_with_one_error(data_dir: Path, tmp_path: Path) -> None:
    from toolmend import run_bench

    server = ChatServer(lives=2).start()
    model = OpenAIModel("m", base_url=server.base_url, retry=PATIENT, cache=None, max_connections=1)
    try:
        with pytest.raises(EndpointError, match="stopped accepting connections"):
            run_bench("bfcl", model, data=data_dir / "bfcl", categories=["simple_python"], limit=8,
                      runs_dir=tmp_path / "runs", cache=False, progress=False)  # fmt: skip
        assert server.exited  # it crashed on its own after two answers
    finally:
        server.kill()
    (run,) = (tmp_path / "runs").iterdir()
    records = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(records) == 2  # the answered samples are kept; no sample recorded as failed


@pytest.mark.parametrize("value", ["soon", "0x10", "NaN", "-3", "inf", "1e999", ""])
async def test_an_unusable_retry_after_falls_back_to_backoff(openai_server: Any, value: str) -> None:
    openai_server.fail_next("x", Reply(status=429, headers={"Retry-After": value}))
    policy = RetryPolicy(max_retries=2, initial_wait=0.01, max_wait=0.05, jitter=0.0)
    async with OpenAIModel("m", base_url=openai_server.base_url, retry=policy, cache=None) as model:
        out = await asyncio.wait_for(model.generate(ask("x")), timeout=30)
    assert out.text == "m: x" and out.retries == 1
