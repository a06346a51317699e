"""Connection defaults that do not swamp a server on this machine, and a time-out message that
says what to do when a local server serves one request at a time."""

from __future__ import annotations

from typing import Any

import pytest
from fake_openai_server import Reply

from toolmend._errors import ModelError
from toolmend._schema import Message
from toolmend.models import OpenAIModel, RetryPolicy
from toolmend.models._openai import LOCAL_CONNECTIONS, REMOTE_CONNECTIONS

ONCE = RetryPolicy(max_retries=0)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8080/v1", LOCAL_CONNECTIONS),
        ("http://localhost:11434/v1", LOCAL_CONNECTIONS),
        ("http://[::1]:8000/v1", LOCAL_CONNECTIONS),
        ("https://llm.example.org/v1", REMOTE_CONNECTIONS),
    ],
)
def test_default_connections_depend_on_where_the_server_is(url: str, expected: int) -> None:
    assert OpenAIModel("m", base_url=url, api_key="k", cache=None).max_connections == expected
    assert OpenAIModel("m", base_url=url, api_key="k", cache=None, max_connections=64).max_connections == 64
    assert LOCAL_CONNECTIONS < REMOTE_CONNECTIONS


async def test_a_local_server_queueing_requests_past_the_timeout_is_named(openai_server: Any) -> None:
    openai_server.fail_next("slow", Reply(delay=1.0))
    async with OpenAIModel(
        "m", base_url=openai_server.base_url, retry=ONCE, cache=None, timeout=0.2
    ) as model:
        with pytest.raises(ModelError, match="timed out") as info:
            await model.generate([Message(role="user", content="slow")])
    assert info.value.retryable
    assert "one request at a time" in str(info.value) and "--max-connections 1" in str(info.value)


async def test_with_one_connection_the_hint_is_about_time_instead(openai_server: Any) -> None:
    openai_server.fail_next("slow", Reply(delay=1.0))
    model = OpenAIModel("m", base_url=openai_server.base_url, retry=ONCE, cache=None, timeout=0.2,
                        max_connections=1)  # fmt: skip
    async with model:
        with pytest.raises(ModelError, match="timed out") as info:
            await model.generate([Message(role="user", content="slow")])
    assert "--max-connections" not in str(info.value) and "more time" in str(info.value)


def test_a_bench_run_against_a_local_server_sends_few_requests_at_once(data_dir: Any, tmp_path: Any) -> None:
    from fake_openai_server import FakeOpenAIServer

    from toolmend import run_bench

    server = FakeOpenAIServer(latency=0.05).start()
    try:
        result = run_bench("bfcl", "openai/m", base_url=server.base_url, data=data_dir / "bfcl",
                           categories=["simple_python"], limit=12, runs_dir=tmp_path / "runs", cache=False,
                           progress=False)  # fmt: skip
        assert result.summary.n_scored == 12 and server.requests == 12
        assert 1 <= server.peak_in_flight <= LOCAL_CONNECTIONS
        explicit = FakeOpenAIServer(latency=0.2).start()
        try:
            run_bench("bfcl", "openai/m", base_url=explicit.base_url, data=data_dir / "bfcl",
                      categories=["simple_python"], limit=12, runs_dir=tmp_path / "runs2", cache=False,
                      progress=False, max_connections=12)  # fmt: skip
        finally:
            explicit.stop()
        assert explicit.peak_in_flight > LOCAL_CONNECTIONS  # an explicit value is used as it is
    finally:
        server.stop()
