"""The OpenAI-compatible backend's request defaults against a real HTTP server on loopback:
``max_tokens`` and ``temperature`` are always stated, ``tool_choice="auto"`` on demand, and all
of them are part of the cache key and of a run's record (issue 35: a server's own defaults made
a local model generate to the end of its context, at temperature 0.8, and drop the tools)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply

from toolmend._bench import run_bench
from toolmend._errors import ConfigError
from toolmend._schema import Message, Tool
from toolmend.models import GenerateConfig, OpenAIModel, get_model
from toolmend.runs import RunDir

TOOLS = [Tool(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}})]


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


async def test_max_tokens_and_temperature_are_sent_by_default(openai_server: Any) -> None:
    async with OpenAIModel("m", base_url=openai_server.base_url) as model:
        await model.generate(user("hi"), tools=TOOLS)
    sent = openai_server.bodies[0]
    assert sent["max_tokens"] == 1024 and sent["temperature"] == 0.0
    assert "tool_choice" not in sent  # only on demand


async def test_a_request_s_own_settings_win(openai_server: Any) -> None:
    async with OpenAIModel("m", base_url=openai_server.base_url, cache=None) as model:
        await model.generate(user("a"), config=GenerateConfig(temperature=0.7, max_tokens=9))
        await model.generate(user("b"), config=GenerateConfig(extra={"max_tokens": 7}))
    first, second = openai_server.bodies
    assert (first["temperature"], first["max_tokens"]) == (0.7, 9)
    assert (second["temperature"], second["max_tokens"]) == (0.0, 7)


async def test_model_options_set_or_drop_the_defaults(openai_server: Any) -> None:
    model = get_model("openai/m", cache=False, base_url=openai_server.base_url,
                      max_tokens=64, temperature=0.3, tool_choice="auto")  # fmt: skip
    async with model:
        await model.generate(user("with tools"), tools=TOOLS)
        await model.generate(user("without"))
        await model.generate(user("named"), tools=TOOLS, tool_choice="get_weather")
    with_tools, without, named = openai_server.bodies
    assert (with_tools["max_tokens"], with_tools["temperature"], with_tools["tool_choice"]) == (
        64,
        0.3,
        "auto",
    )
    assert "tool_choice" not in without  # no tools, nothing to choose from
    assert named["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    silent = get_model(
        "openai/m", cache=False, base_url=openai_server.base_url, max_tokens=None, temperature=None
    )
    async with silent:
        await silent.generate(user("nothing stated"))
    assert "max_tokens" not in openai_server.bodies[-1] and "temperature" not in openai_server.bodies[-1]


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_tokens", 0), ("max_tokens", "lots"), ("max_tokens", True), ("temperature", -1),
     ("temperature", "hot"), ("tool_choice", "always"), ("context_length", 0)],
)  # fmt: skip
def test_bad_option_values_are_configuration_errors(option: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=option):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", **{option: value})


def test_the_defaults_are_part_of_the_cache_key() -> None:
    from toolmend.models._base import GenerateRequest

    request = GenerateRequest(messages=user("hi"))
    url = "http://127.0.0.1:9/v1"
    keys = {
        OpenAIModel("m", base_url=url).cache_key(request),
        OpenAIModel("m", base_url=url, max_tokens=64).cache_key(request),
        OpenAIModel("m", base_url=url, temperature=0.5).cache_key(request),
        OpenAIModel("m", base_url=url, tool_choice="auto").cache_key(request),
    }
    assert len(keys) == 4


def test_a_run_records_its_request_defaults_and_a_resume_keeps_them(tmp_path: Path, data_dir: Path) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        name = body["tools"][0]["function"]["name"]
        return Reply(text=None, tool_calls=[{"name": name, "arguments": "{}"}], finish_reason="tool_calls")

    server = FakeOpenAIServer(handler).start()
    common: dict[str, Any] = {"base_url": server.base_url, "progress": False, "cache": False,
                              "data": data_dir / "bfcl", "categories": ["simple_python"], "tool_mode": "native"}  # fmt: skip
    try:
        result = run_bench("bfcl", "openai/tiny", limit=2, runs_dir=tmp_path / "runs",
                           model_options={"tool_choice": "auto"}, **common)  # fmt: skip
        config = RunDir(result.run_dir).manifest().config
        assert config["request_defaults"] == {"max_tokens": 1024, "temperature": 0.0, "tool_choice": "auto"}
        assert all(b["max_tokens"] == 1024 and b["temperature"] == 0.0 for b in server.bodies)
        assert all(b["tool_choice"] == "auto" for b in server.bodies)
        with pytest.raises(ConfigError, match=r"max_tokens=64 \(the run has 1024\)"):
            run_bench("bfcl", "openai/tiny", resume=result.run_dir,
                      model_options={"tool_choice": "auto", "max_tokens": 64}, **common)  # fmt: skip
        # A resume reuses the run's -M options: tool_choice=auto comes back with it.
        sent = len(server.bodies)
        (result.run_dir / "results.json").unlink()
        lines = (result.run_dir / "samples.jsonl").read_bytes().splitlines(keepends=True)
        (result.run_dir / "samples.jsonl").write_bytes(lines[0])
        run_bench("bfcl", "openai/tiny", resume=result.run_dir, **common)
        assert len(server.bodies) > sent and all(b["tool_choice"] == "auto" for b in server.bodies[sent:])
        again = run_bench("bfcl", "openai/tiny", resume=result.run_dir, model_options={"tool_choice": "auto"},
                          **common)  # fmt: skip
        assert again.run_dir == result.run_dir
    finally:
        server.stop()
    assert json.loads(json.dumps(config))  # plain JSON in the manifest


LONG = "Please look up the weather for each of these cities in turn: " + ", ".join(
    f"city{i}" for i in range(400)
)


async def test_a_prompt_over_a_given_context_length_fails_before_it_is_sent(openai_server: Any) -> None:
    from toolmend._errors import ModelError

    async with OpenAIModel("m", base_url=openai_server.base_url, cache=None, context_length=500) as model:
        with pytest.raises(
            ModelError, match=r"at least \d+ tokens .* against 500 tokens \(context_length\)"
        ) as info:
            await model.generate(user(LONG), tools=TOOLS)
        assert not info.value.retryable
        await model.generate(user("short"), tools=TOOLS)  # a prompt that fits goes out
    assert openai_server.requests == 1


async def test_the_server_s_own_context_length_is_read_from_models(openai_server: Any) -> None:
    from toolmend._errors import ModelError

    openai_server.models = [{"id": "other", "max_model_len": 100_000},
                            {"id": "m", "object": "model", "meta": {"n_ctx_train": 600}}]  # fmt: skip
    async with OpenAIModel("m", base_url=openai_server.base_url, cache=None) as model:
        with pytest.raises(ModelError, match=r"against 600 tokens \(as the server reports it\); not sent"):
            await model.generate(user(LONG))
        await model.generate(user("short"))
    assert openai_server.requests == 1
    # A server that states nothing (404 here) leaves the check to the server's own answer.
    openai_server.models = None
    async with OpenAIModel("m", base_url=openai_server.base_url, cache=None) as model:
        await model.generate(user(LONG))
    assert openai_server.requests == 2


def test_the_estimate_is_a_lower_bound_on_real_tokenizers() -> None:
    from toolmend.models._openai_wire import estimate_prompt_tokens

    # Token counts of SmolLM2-135M-Instruct's tokenizer (GPT-2 style) for these texts.
    assert estimate_prompt_tokens("The quick brown fox jumps over the lazy dog. " * 50) <= 501
    assert estimate_prompt_tokens("1234567890" * 100) <= 1000
    assert (
        estimate_prompt_tokens('{"a": 1, "b": [1,2,3], "long_identifier_name": "value", "_x": "_"}\n' * 40)
        <= 1280
    )
    assert estimate_prompt_tokens("def f(x):\n    return x_1 + 2\n" * 40) <= 560


def test_a_run_fails_samples_whose_prompt_cannot_fit_naming_the_sizes(tmp_path: Path, data_dir: Path) -> None:
    server = FakeOpenAIServer().start()
    try:
        result = run_bench("bfcl", "openai/tiny", base_url=server.base_url, progress=False, cache=False,
                           data=data_dir / "bfcl", categories=["simple_python"], tool_mode="native", limit=3,
                           runs_dir=tmp_path, model_options={"context_length": 20})  # fmt: skip
    finally:
        server.stop()
    assert server.requests == 0 and result.summary.n_errors == 3
    for row in (result.run_dir / "samples.jsonl").read_text().splitlines():
        assert "does not fit the model's context" in json.loads(row)["error"]["message"]
