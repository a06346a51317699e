"""The proxy tells nothing and forwards nothing it should not: the upstream URL's credentials,
clients' credential headers, keys echoed in upstream errors, ``/metrics`` behind the key when
asked, traces readable by their owner only, a warning when listening beyond loopback without a key."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from scripted_upstream import Scene, call, completion

from toolmend.serve import ServeConfig
from toolmend.serve._app import _loopback
from toolmend.serve._upstream import public_url

openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "a": {"type": "integer"}}, "required": ["a"]}}}]  # fmt: skip
ASK = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": TOOLS}
OK = completion(None, [call("f", '{"a": 1}', "c1")])
CREDENTIALS = {"Cookie": "session=cookie-secret", "Proxy-Authorization": "Basic cHJveHk6c2VjcmV0",
               "X-Api-Key": "xkey-secret", "Api-Key": "apikey-secret"}  # fmt: skip


def _with_userinfo(url: str, userinfo: str = "user:pass%40word") -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{userinfo}@{rest}"


async def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(url, headers=headers) as r:
        return r.status, await r.text()


def test_upstream_userinfo_is_sent_as_basic_auth_and_never_shown(serve: Any) -> None:
    proxy = serve(Scene(body=OK))
    # The fixture's proxy talks to the upstream by its plain URL; this one carries credentials.
    from scripted_upstream import AppThread

    from toolmend.serve import create_app

    config = ServeConfig(upstream=_with_userinfo(proxy.upstream.base_url))
    thread = AppThread(create_app(config)).start()
    try:
        import asyncio

        status, text = asyncio.run(_get(thread.url + "/healthz"))
        assert status == 200
        assert "pass" not in text and "user" not in text
        assert proxy.upstream.base_url in text
        client = openai.OpenAI(base_url=thread.url + "/v1", api_key="client-key-1", max_retries=0)
        client.chat.completions.create(**ASK)
        # user:pass@word, as Basic auth; the client's bearer stays with the proxy.
        assert proxy.upstream.auth[-1] == "Basic dXNlcjpwYXNzQHdvcmQ="
    finally:
        thread.stop()


def test_public_url_drops_only_the_userinfo() -> None:
    assert public_url("https://a:b@h:1/v1?x=1#f") == "https://h:1/v1?x=1#f"
    assert public_url("http://h/v1") == "http://h/v1"
    assert public_url("http://user@h/v1") == "http://h/v1"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_hosts_need_no_warning(host: str) -> None:
    assert _loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.com"])
def test_other_hosts_are_not_loopback(host: str) -> None:
    assert not _loopback(host)


def test_client_credentials_are_dropped_with_an_upstream_key(serve: Any) -> None:
    proxy = serve(Scene(body=OK), upstream_api_key="upstream-key-1")
    client = openai.OpenAI(base_url=proxy.url, api_key="client-key-1", max_retries=0,
                           default_headers=CREDENTIALS)  # fmt: skip
    raw = client.chat.completions.with_raw_response.create(**ASK)
    assert raw.status_code == 200
    assert proxy.upstream.auth[-1] == "Bearer upstream-key-1"
    seen = proxy.upstream.headers[-1]
    for name in CREDENTIALS:
        assert name.lower() not in {k.lower() for k in seen}, name


def test_client_credentials_go_on_without_an_upstream_key(serve: Any) -> None:
    proxy = serve(Scene(body=OK))
    client = openai.OpenAI(base_url=proxy.url, api_key="client-key-1", max_retries=0,
                           default_headers=CREDENTIALS)  # fmt: skip
    client.chat.completions.create(**ASK)
    assert proxy.upstream.auth[-1] == "Bearer client-key-1"
    seen = {k.lower(): v for k, v in proxy.upstream.headers[-1].items()}
    assert seen["x-api-key"] == "xkey-secret" and seen["cookie"] == "session=cookie-secret"
    # Proxy-Authorization is for the proxy, never for the next hop.
    assert "proxy-authorization" not in seen


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_error_bodies_do_not_echo_keys(serve: Any, stream: bool) -> None:
    echo = {"error": {"message": "Incorrect API key provided: upstream-key-1 (client sent client-key-1)",
                      "type": "invalid_request_error", "code": "invalid_api_key"}}  # fmt: skip
    proxy = serve(Scene(status=401, body=echo), upstream_api_key="upstream-key-1", api_key="client-key-1")
    client = openai.OpenAI(base_url=proxy.url, api_key="client-key-1", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        client.chat.completions.create(**ASK, stream=stream)
    message = info.value.body["message"]
    assert "upstream-key-1" not in message and "client-key-1" not in message
    assert "[redacted]" in message


def test_upstream_error_without_a_proxy_key_hides_the_clients_bearer(serve: Any) -> None:
    proxy = serve(Scene(status=400, body=b"bad token Bearer client-key-1 given"))
    client = openai.OpenAI(base_url=proxy.url, api_key="client-key-1", max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**ASK)
    assert "client-key-1" not in str(info.value.body)
    assert "bad token" in str(info.value.body)


def test_metrics_can_require_the_key(serve: Any) -> None:
    import asyncio

    proxy = serve(Scene(body=OK), api_key="proxy-key-1", metrics_auth=True)
    base = proxy.thread.url
    assert asyncio.run(_get(base + "/metrics"))[0] == 401
    assert asyncio.run(_get(base + "/metrics", {"Authorization": "Bearer wrong"}))[0] == 401
    status, text = asyncio.run(_get(base + "/metrics", {"Authorization": "Bearer proxy-key-1"}))
    assert status == 200 and "toolmend_" in text
    assert asyncio.run(_get(base + "/healthz"))[0] == 200
    # Off by default: a scraper without the key keeps working.
    open_proxy = serve(Scene(body=OK), api_key="proxy-key-1")
    assert asyncio.run(_get(open_proxy.thread.url + "/metrics"))[0] == 200


def test_metrics_auth_needs_a_key() -> None:
    with pytest.raises(ValueError, match="metrics_auth needs api_key"):
        ServeConfig(upstream="http://127.0.0.1:1/v1", metrics_auth=True)


def test_traces_are_owner_only(serve: Any, tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    (old / "traces.jsonl").write_text("")
    (old / "traces.jsonl").chmod(0o644)
    for directory in (tmp_path / "new", old):
        proxy = serve(Scene(body=OK), traces=directory)
        openai.OpenAI(base_url=proxy.url, api_key="k", max_retries=0).chat.completions.create(**ASK)
        proxy.counted(1)
        for name in ("traces.jsonl", "manifest.json"):
            mode = stat.S_IMODE((directory / name).stat().st_mode)
            assert mode == 0o600, (directory / name, oct(mode))
    manifest = (tmp_path / "new" / "manifest.json").read_text()
    assert "upstream" in manifest
