"""The SQLite response cache: what the key holds, what is never stored, concurrent use."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import Reply

from toolmend._errors import ModelError
from toolmend._schema import Message, Tool
from toolmend.models import (
    Completion,
    GenerateConfig,
    OpenAIModel,
    ResponseCache,
    RetryPolicy,
    cache_key,
    default_cache_dir,
    get_model,
)


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


def key_of(model: OpenAIModel, *, tools: list[Tool] | None = None, epoch: int = 0, **cfg: Any) -> str:
    from toolmend.models import GenerateRequest

    request = GenerateRequest(
        messages=user("hi"), tools=tools or [], config=GenerateConfig(**cfg), epoch=epoch
    )
    return model.cache_key(request)


def test_key_holds_what_changes_the_answer_and_nothing_else() -> None:
    base = OpenAIModel("m", base_url="http://a/v1", api_key="k1", cache=None)
    same = [
        OpenAIModel("m", base_url="http://a/v1/", api_key="other-key", cache=None),
        OpenAIModel(
            "m", base_url="http://a/v1", max_connections=99, timeout=3, retry=RetryPolicy(max_retries=0)
        ),
    ]
    assert {key_of(m) for m in same} == {key_of(base)}
    different = {
        key_of(OpenAIModel("m2", base_url="http://a/v1")),
        key_of(OpenAIModel("m", base_url="http://b/v1")),
        key_of(OpenAIModel("m", base_url="http://a/v1", tool_mode="prompt")),
        key_of(base, temperature=0.7),
        key_of(base, epoch=1),
        key_of(base, tools=[Tool(name="f")]),
    }
    assert key_of(base) not in different and len(different) == 6


def test_key_is_canonical_json() -> None:
    assert cache_key({"a": 1, "b": 2}, {"x": [1, 2]}) == cache_key({"b": 2, "a": 1}, {"x": [1, 2]})
    assert cache_key({"a": 1}, {"x": [1, 2]}) != cache_key({"a": 1}, {"x": [2, 1]})


def test_empty_answers_are_refused_and_hits_round_trip(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    assert not cache.put("k", Completion(text="  "), model="m")
    answer = Completion(text="yes", finish_reason="stop", latency_s=1.5, retries=2)
    assert cache.put("k", answer, model="m")
    hit = cache.get("k")
    assert hit is not None and hit.text == "yes" and hit.finish_reason == "stop"
    assert cache.get("missing") is None
    stats = cache.stats()
    assert (stats.entries, stats.hits, stats.misses, stats.models) == (1, 1, 1, {"m": 1})


async def test_hit_makes_no_request_and_errors_are_never_cached(openai_server: Any, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    fast = RetryPolicy(max_retries=0)
    openai_server.fail_next("flaky", Reply(status=500))
    async with OpenAIModel("m", base_url=openai_server.base_url, cache=cache, retry=fast) as model:
        with pytest.raises(ModelError):
            await model.generate(user("flaky"))
        openai_server.fail_next("blank", Reply(text=""))
        assert (await model.generate(user("blank"))).text == ""
        assert cache.stats().entries == 0
        first = await model.generate(user("flaky"))
        second = await model.generate(user("flaky"))
    assert openai_server.requests == 3
    assert not first.cached and second.cached and second.text == first.text == "m: flaky"
    assert second.usage == first.usage and second.retries == 0


async def test_concurrent_tasks_share_one_cache(openai_server: Any, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    async with OpenAIModel("m", base_url=openai_server.base_url, cache=cache, max_connections=8) as model:
        outs = await asyncio.gather(*(model.generate(user(f"q{i % 10}"), epoch=i // 10) for i in range(40)))
        again = await asyncio.gather(*(model.generate(user(f"q{i % 10}"), epoch=i // 10) for i in range(40)))
    assert openai_server.requests == 40 and cache.stats().entries == 40
    assert all(a.cached for a in again) and [a.text for a in again] == [o.text for o in outs]


_WRITER = textwrap.dedent(
    """
    import sys
    from toolmend.models import Completion, ResponseCache
    cache = ResponseCache(sys.argv[1])
    tag = sys.argv[2]
    for i in range(150):
        cache.put(f"{tag}-{i}", Completion(text=f"{tag} {i}"), model=tag)
        cache.put(f"shared-{i}", Completion(text=f"shared {i}"), model="shared")
        assert cache.get(f"{tag}-{i}") is not None
    """
)


def test_two_processes_write_the_same_cache(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), tag], stderr=subprocess.PIPE)
        for tag in ("a", "b")
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    stats = ResponseCache(tmp_path).stats()
    assert stats.models == {"a": 150, "b": 150, "shared": 150}


def test_default_location_and_get_model_options(_private_cache_dir: Path, tmp_path: Path) -> None:
    assert default_cache_dir() == _private_cache_dir
    model = get_model("openai/m", base_url="http://x/v1")
    assert model.cache is not None and model.cache.directory == _private_cache_dir
    assert get_model("openai/m", base_url="http://x/v1", cache=False).cache is None
    there = get_model("openai/m", base_url="http://x/v1", cache=tmp_path / "c")
    assert there.cache is not None and there.cache.directory == tmp_path / "c"
