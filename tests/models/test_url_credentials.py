"""A base URL with credentials (``http://user:pass@host/v1``): sent as basic auth, never written.

The rule: credentials in the URL go out as HTTP basic auth in place of a key read from the
default ``$OPENAI_API_KEY``; with a key the caller asks for (``api_key=``, ``api_key_env=``) as
well, both would be the one Authorization header, so that is a one-line ConfigError. The URL
that messages, cache keys and manifests see has no credentials.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import typer
from aiohttp import web
from typer.testing import CliRunner

from toolmend._errors import ConfigError, EndpointError
from toolmend._schema import Message
from toolmend.cli import _bench as bench
from toolmend.models import OpenAIModel

SECRET = "pa:ss@w/rd"  # URL-quoted below; every special character a password may hold
QUOTED = "pa%3Ass%40w%2Frd"


@pytest.fixture
async def server() -> AsyncIterator[dict[str, Any]]:
    """A chat-completions server on 127.0.0.1 that answers and records the Authorization header."""
    seen: dict[str, Any] = {"auth": []}

    async def chat(request: web.Request) -> web.Response:
        seen["auth"].append(request.headers.get("Authorization"))
        await request.read()
        return web.json_response({
            "id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })  # fmt: skip

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    seen["port"] = port
    try:
        yield seen
    finally:
        await runner.cleanup()


def _request() -> list[Message]:
    return [Message(role="user", content="hi")]


async def test_url_credentials_become_basic_auth_and_leave_the_url(
    server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")  # the default key gives way
    url = f"http://alice:{QUOTED}@127.0.0.1:{server['port']}/v1"
    model = OpenAIModel("m", base_url=url, cache=None)
    completion = await model.generate(_request())
    await model.aclose()
    assert completion.text == "ok"
    expected = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()
    assert server["auth"] == [expected]
    assert model.base_url == f"http://127.0.0.1:{server['port']}/v1"
    assert "alice" not in json.dumps(model.cache_identity())


async def test_url_credentials_with_a_key_asked_for_are_a_config_error(
    server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://alice:{QUOTED}@127.0.0.1:{server['port']}/v1"
    monkeypatch.setenv("MY_KEY", "sk-mine")
    for kwargs in ({"api_key": "sk-given"}, {"api_key_env": "MY_KEY"}):
        with pytest.raises(ConfigError, match="credentials in the URL and an API key") as info:
            OpenAIModel("m", base_url=url, cache=None, **kwargs)
        message = str(info.value)
        assert "\n" not in message and QUOTED not in message and "alice" not in message
        assert f"http://***@127.0.0.1:{server['port']}/v1" in message
    assert server["auth"] == []  # refused before any request


async def test_a_key_alone_is_still_a_bearer_token(server: dict[str, Any]) -> None:
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{server['port']}/v1", api_key="sk-k", cache=None)
    await model.generate(_request())
    await model.aclose()
    assert server["auth"] == ["Bearer sk-k"]


async def test_connection_errors_do_not_show_the_credentials() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAIModel("m", base_url=f"http://alice:{QUOTED}@127.0.0.1:{port}/v1", cache=None)
    with pytest.raises(EndpointError) as info:
        await model.generate(_request())
    await model.aclose()
    assert "alice" not in str(info.value) and QUOTED not in str(info.value)


def test_bench_with_url_credentials_writes_them_nowhere(
    data_dir: Path, tmp_path: Path, private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fake_openai_server as fake

    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    srv = fake.FakeOpenAIServer().start()
    try:
        app = typer.Typer()

        @app.callback()
        def _root() -> None:
            pass

        bench.register(app)
        url = srv.base_url.replace("http://", f"http://alice:{QUOTED}@")
        result = CliRunner().invoke(app, [
            "bench", "bfcl", "--model", "openai/m", "--base-url", url, "--data", str(data_dir / "bfcl"),
            "--categories", "simple_python", "--limit", "2", "--runs-dir", str(tmp_path / "runs"),
        ])  # fmt: skip
    finally:
        srv.stop()
    assert result.exit_code == 0, result.output
    assert srv.requests == 2
    written = [p for p in [*(tmp_path / "runs").rglob("*"), *private_cache_dir.rglob("*")] if p.is_file()]
    assert written
    for path in written:
        data = path.read_bytes()
        assert QUOTED.encode() not in data and SECRET.encode() not in data and b"alice" not in data, path
    assert "alice" not in result.output
