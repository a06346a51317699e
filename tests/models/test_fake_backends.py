"""scripted and replay backends, and model strings."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmend._errors import ConfigError, DatasetError, MissingExtraError, ModelError
from toolmend._schema import Message, ToolCall
from toolmend.models import Completion, ReplayModel, ScriptedModel, get_model


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


async def test_scripted_list_in_order_then_exhausted() -> None:
    model = get_model("scripted", script=["one", Completion(text="", tool_calls=[ToolCall(name="f")])])
    assert (await model.generate(user("a b"))).text == "one"
    second = await model.generate(user("x"))
    assert [c.name for c in second.tool_calls] == ["f"]
    with pytest.raises(ModelError, match="exhausted"):
        await model.generate(user("x"))


async def test_scripted_function_sync_or_async_and_word_usage() -> None:
    async def reply(messages: list[Message]) -> str:
        return f"echo {messages[-1].content}"

    model = ScriptedModel(reply)
    out = await model.generate(user("two words"))
    assert out.text == "echo two words" and (out.usage.input_tokens, out.usage.output_tokens) == (2, 3)
    assert model.cache is None and model.calls == 1


async def test_scripted_infra_failures_are_retried() -> None:
    failures = iter([ModelError("boom", retryable=True)])

    def flaky(messages: list[Message]) -> str:
        err = next(failures, None)
        if err is not None:
            raise err
        return "fine"

    model = ScriptedModel(flaky)
    model.retry = model.retry.model_copy(update={"initial_wait": 0.0, "jitter": 0.0})
    out = await model.generate(user("x"))
    assert out.text == "fine" and out.retries == 1


async def test_replay_by_sample_id_and_epoch(tmp_path: Path) -> None:
    path = tmp_path / "pred.jsonl"
    path.write_text(
        '{"id": "a", "output": "[f()]"}\n\n{"id": 2, "outputs": ["x", "y"]}\n{"id": "n", "output": null}\n'
    )
    model = get_model(f"replay/{path}")
    assert isinstance(model, ReplayModel)
    assert (await model.generate(user("q"), sample_id="a")).text == "[f()]"
    assert (await model.generate(user("q"), sample_id="2", epoch=1)).text == "y"
    assert (await model.generate(user("q"), sample_id="n")).text == ""
    with pytest.raises(ModelError, match="no output for sample 'zzz'"):
        await model.generate(user("q"), sample_id="zzz")
    with pytest.raises(ModelError, match="sample_id"):
        await model.generate(user("q"))


@pytest.mark.parametrize(
    ("content", "line", "field"),
    [('{"id": "a", "output": "x"}\nnot json\n', 2, None), ('{"id": "a", "output": 3}\n', 1, "output")],
)
def test_replay_file_problems_name_the_line(
    tmp_path: Path, content: str, line: int, field: str | None
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(DatasetError) as info:
        ReplayModel(path)
    assert info.value.line == line and info.value.field == field and str(path) in str(info.value)


def test_model_strings() -> None:
    with pytest.raises(ConfigError, match="unknown model backend 'opnai'.*Did you mean 'openai'"):
        get_model("opnai/gpt")
    with pytest.raises(ConfigError, match="script="):
        get_model("scripted")
    with pytest.raises(ConfigError, match="unexpected options"):
        get_model("openai/m", base_url="http://x/v1", temprature=0.1)
    with pytest.raises(ConfigError, match="does not exist"):
        get_model("hf/does/not/exist")
    model = ScriptedModel(["x"])
    assert get_model(model) is model


def test_vllm_backend_fails_clearly_without_vllm_or_a_gpu(tmp_path: Path) -> None:
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(MissingExtraError, match=r"toolmend\[vllm\]"):
            get_model(f"vllm/{tmp_path}")
        return
    import torch

    if torch.cuda.is_available():  # pragma: no cover - GPU machines run the real thing elsewhere
        pytest.skip("a GPU is present; the error path is not reachable")
    with pytest.raises(ModelError, match="CUDA"):
        get_model(f"vllm/{tmp_path}")
