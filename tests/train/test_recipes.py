"""The recipes on a tiny Llama built here: each runs 2 real TRL steps on a builder's output,
refine masks supervise only the refined turn, and bad inputs fail before any training."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tiny_llm import NO_MARKERS, NO_TOOLS, save_tiny, write_jsonl
from typer.testing import CliRunner

from toolmend._errors import ConfigError, DatasetError
from toolmend.cli._app import app
from toolmend.train import build_rows, prepare, train
from toolmend.train._recipes import _check_grpo_rendering, balanced_desirable_weight, cut_negatives

SMALL = {"max_steps": 2, "logging_steps": 1, "per_device_train_batch_size": 2}


def _rows(kind: str, limit: int = 2) -> list[dict[str, Any]]:
    return build_rows(kind, source="world", seed=0, limit=limit, max_tools=2)[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("data")
    return {
        k: write_jsonl(root / f"{k}.jsonl", _rows(k)) for k in ("sft", "kto", "refine", "reflect", "critique")
    }


def test_sft_runs_two_steps_on_builder_output(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    result = train("sft", model=tiny_model, data=data["sft"], out=tmp_path, config=SMALL)
    assert result.steps == 2 and (tmp_path / "model.safetensors").is_file()
    assert any("loss" in e for e in result.log)


def test_refine_supervises_only_the_refined_turn(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    prepared = prepare("sft", model=tiny_model, data=data["refine"], out=tmp_path, config=SMALL)
    tokenizer = prepared.trainer.processing_class
    rows = [json.loads(line) for line in data["refine"].read_text().splitlines()]
    dataset = prepared.trainer.train_dataset
    assert len(dataset) == len(rows)
    for row, example in zip(rows, dataset, strict=True):
        # TRL folds the prompt-completion mask into labels: -100 is not supervised.
        supervised = [t for t in example["labels"] if t != -100]
        text = tokenizer.decode(supervised)
        refined, first = row["completion"][0]["content"], row["prompt"][1]["content"]
        assert text == refined + "<|im_end|>"
        assert first not in text or first in refined  # the first attempt is never a target on its own
        assert row["prompt"][2]["content"] not in text  # nor the feedback


def test_critique_data_loads_into_sft_unchanged(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    prepared = prepare("sft", model=tiny_model, data=data["critique"], out=tmp_path, config=SMALL)
    rows = data["critique"].read_text().splitlines()
    assert len(prepared.trainer.train_dataset) == len(rows) > 0  # nothing truncated away


def test_kto_runs_two_steps_with_both_labels(tiny_model: Path, data: dict[str, Path], tmp_path: Path) -> None:
    result = train(
        "kto",
        model=tiny_model,
        data=data["kto"],
        out=tmp_path,
        config={**SMALL, "per_device_train_batch_size": 4},
    )
    assert result.steps == 2
    logged = {k for e in result.log for k in e}
    assert {"rewards/chosen", "rewards/rejected"} <= logged  # shuffled rows: mixed batches


def test_kto_cut_negatives_end_at_the_mistake(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    config = {**SMALL, "per_device_train_batch_size": 4}
    whole = prepare("kto", model=tiny_model, data=data["kto"], out=tmp_path, config=config)
    cut = prepare(
        "kto", model=tiny_model, data=data["kto"], out=tmp_path, config={**config, "cut_negatives": True}
    )
    whole_rows, cut_rows = whole.trainer.train_dataset.to_list(), cut.trainer.train_dataset.to_list()
    gold = {tuple(r["prompt_ids"]): r["completion_ids"] for r in whole_rows if r["label"]}
    eos = whole.trainer.processing_class.eos_token_id
    n = 0
    for before, after in zip(whole_rows, cut_rows, strict=True):
        bad, kept = before["completion_ids"], after["completion_ids"]
        if before["label"] or len(kept) == len(bad):
            assert kept == bad
            continue
        n += 1
        good = gold[tuple(before["prompt_ids"])]
        first = next(i for i, (a, b) in enumerate(zip(bad, good, strict=False)) if a != b)
        assert kept == bad[: first + 1] and kept[-1] != good[first]  # ends on the mistake itself
        assert kept[-1] != eos or good[first] != eos  # no end of turn added after the cut
    assert n == cut.trainer.cut_count > 0
    size = config["per_device_train_batch_size"]
    for start in range(0, len(cut_rows), size):  # the KL pairs come from the cut completions
        chunk = cut_rows[start : start + size]
        assert [r["KL_completion_ids"] for r in chunk] == [chunk[-1]["completion_ids"]] + [
            r["completion_ids"] for r in chunk[:-1]
        ]
    with pytest.raises(ConfigError, match="cut_negatives is a KTO option"):
        prepare("sft", model=tiny_model, data=data["sft"], out=tmp_path, config={"cut_negatives": True})


def test_kto_balanced_desirable_weight_follows_the_labels(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    # Every other gold left out: the builder repeats the gold once per negative, so its rows balance.
    rows = [json.loads(line) for line in data["kto"].read_text().splitlines()]
    rows = [r for i, r in enumerate(rows) if not r["label"] or i % 2]
    desirable = sum(r["label"] for r in rows)
    assert 0 < desirable < len(rows) - desirable
    file = write_jsonl(tmp_path / "kto.jsonl", rows)
    config = {**SMALL, "per_device_train_batch_size": 4, "desirable_weight": "balanced"}
    prepared = prepare("kto", model=tiny_model, data=file, out=tmp_path, config=config)
    weight = prepared.trainer.args.desirable_weight
    assert weight == balanced_desirable_weight([r["label"] for r in rows])
    assert 1 <= weight * desirable / (len(rows) - desirable) <= 4 / 3  # the KTO paper's Eq. 8
    halved = prepare("kto", model=tiny_model, data=file, out=tmp_path,
                     config={**config, "undesirable_weight": 0.5})  # fmt: skip
    assert halved.trainer.args.desirable_weight == pytest.approx(weight / 2, abs=1e-3)
    for bad in (
        {"desirable_weight": "auto"},
        {"undesirable_weight": "balanced"},
        {"desirable_weight": 0},
        {"desirable_weight": True},
    ):
        with pytest.raises(ConfigError, match="must be a positive number"):
            prepare("kto", model=tiny_model, data=file, out=tmp_path, config={**config, **bad})


def test_cut_negatives_follows_the_closest_of_several_desirables() -> None:
    rows = [
        {"prompt_ids": [1], "completion_ids": [5, 6, 7, 0], "label": True},
        {"prompt_ids": [1], "completion_ids": [5, 9, 7, 0], "label": True},
        {"prompt_ids": [1], "completion_ids": [5, 9, 8, 0], "label": False},  # right up to 8
        {"prompt_ids": [1], "completion_ids": [5, 6], "label": False},  # a prefix of a desirable
        {"prompt_ids": [2], "completion_ids": [3, 4, 0], "label": False},  # no desirable
    ]
    assert cut_negatives(rows) == 1
    assert [r["completion_ids"] for r in rows[2:]] == [[5, 9, 8], [5, 6], [3, 4, 0]]


def test_kto_with_lora(tiny_model: Path, data: dict[str, Path], tmp_path: Path) -> None:
    result = train("kto", model=tiny_model, data=data["kto"], out=tmp_path, lora=True,
                   config={**SMALL, "max_steps": 1, "per_device_train_batch_size": 4})  # fmt: skip
    assert result.steps == 1 and (tmp_path / "adapter_config.json").is_file()


def test_lora_merged_is_a_plain_model_folder(tiny_model: Path, data: dict[str, Path], tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    linear = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    lora = {"r": 4, "lora_alpha": 8, "layers_to_transform": [1], "target_modules": linear}
    result = train("sft", model=tiny_model, data=data["sft"], out=tmp_path / "m",
                   config={**SMALL, "max_steps": 1, "lora": lora, "merge": True})  # fmt: skip
    assert result.steps == 1 and not (tmp_path / "m" / "adapter_config.json").exists()
    merged = AutoModelForCausalLM.from_pretrained(tmp_path / "m")
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    changed = {name for name, p in merged.state_dict().items() if not p.equal(base.state_dict()[name])}
    # Only the adapted layer moved, and no LoRA weight is left over.
    assert changed and all(".layers.1." in n for n in changed)
    assert not any("lora" in n for n in merged.state_dict())
    with pytest.raises(ConfigError, match="^lora: .*layers_to_transform"):  # peft's own words, one line
        prepare("sft", model=tiny_model, data=data["sft"], out=tmp_path / "x",
                config={"lora": {"layers_to_transform": [1], "target_modules": "all-linear"}})  # fmt: skip
    with pytest.raises(ConfigError, match="needs --lora"):
        train("sft", model=tiny_model, data=data["sft"], out=tmp_path / "x", config={**SMALL, "merge": True})


@pytest.mark.parametrize("preset", ["dapo", "gspo"])
def test_grpo_presets_run_with_checker_rewards(
    preset: str, tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    config = {**SMALL, "preset": preset, "num_generations": 2, "max_completion_length": 8,
              "rewards": ["schema", "call_match", "reflection"]}  # fmt: skip
    prepared = prepare("grpo", model=tiny_model, data=data["reflect"], out=tmp_path, config=config)
    args = prepared.trainer.args
    if preset == "dapo":
        assert (args.loss_type, args.epsilon_high, args.mask_truncated_completions) == ("dapo", 0.28, True)
        assert "soft_overlong_punishment_reward" in prepared.trainer.reward_func_names
    else:
        assert (args.importance_sampling_level, args.loss_type) == ("sequence", "grpo")
    prepared.trainer.train()
    logs = [e for e in prepared.trainer.state.log_history if "dynamic_sampling/dropped_groups" in e]
    assert prepared.trainer.state.global_step == 2 and logs
    # A random tiny model writes no valid call: every group ties, so every group is dropped and counted.
    assert prepared.trainer.dropped_groups == sum(e["dynamic_sampling/dropped_groups"] for e in logs) > 0


def test_grpo_renders_prompts_with_each_rows_tools(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    import trl

    prepared = prepare("grpo", model=tiny_model, data=data["sft"], out=tmp_path,
                       config={**SMALL, "num_generations": 2, "max_completion_length": 8})  # fmt: skip
    row = json.loads(data["sft"].read_text().splitlines()[0])
    _check_grpo_rendering(prepared.trainer, prepared.trainer.processing_class, row, tiny_model)
    # TRL's own GRPOTrainer ignores the `tools` column: the check catches it.
    plain = trl.GRPOTrainer(model=prepared.trainer.model, reward_funcs=prepared.trainer.reward_funcs,
                            args=prepared.trainer.args, train_dataset=prepared.trainer.train_dataset,
                            processing_class=prepared.trainer.processing_class)  # fmt: skip
    with pytest.raises(ConfigError, match="renders the tools differently"):
        _check_grpo_rendering(plain, plain.processing_class, row, tiny_model)


def test_bad_inputs_fail_before_training(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path, corpus: list[str]
) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        prepare("sft", model=tmp_path / "nope", data=data["sft"], out=tmp_path)
    row = {
        "prompt": [{"role": "user", "content": "hi"}],
        "completion": [{"role": "assistant", "content": "x"}],
    }
    missing = write_jsonl(tmp_path / "bad.jsonl", [row])
    with pytest.raises(DatasetError, match=r"line 1, field 'label'"):
        prepare("kto", model=tiny_model, data=missing, out=tmp_path)
    with pytest.raises(DatasetError, match="field 'ground_truth'"):
        prepare("grpo", model=tiny_model, data=data["sft"], out=tmp_path, rewards=["reflection"])
    with pytest.raises(ConfigError, match="divisible by num_generations"):
        prepare("grpo", model=tiny_model, data=data["sft"], out=tmp_path,
                config={"per_device_train_batch_size": 3, "num_generations": 2})  # fmt: skip
    with pytest.raises(ConfigError, match="vLLM generation needs a GPU"):
        prepare("grpo", model=tiny_model, data=data["sft"], out=tmp_path, config={"vllm": "colocate"})
    no_markers = save_tiny(tmp_path / "plain", NO_MARKERS, corpus)
    messages = write_jsonl(
        tmp_path / "m.jsonl", [{"prompt": r["prompt"], "completion": r["completion"]} for r in _rows("sft")]
    )
    with pytest.raises(ConfigError, match="generation"):
        prepare("sft", model=no_markers, data=messages, out=tmp_path, config={"assistant_only_loss": True})
    no_tools = save_tiny(tmp_path / "notools", NO_TOOLS, corpus)
    with pytest.raises(ConfigError, match="ignores the `tools` column"):
        prepare("sft", model=no_tools, data=data["sft"], out=tmp_path)


def test_missing_train_extra_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "trl", None)  # Python's own way to make an import fail
    result = CliRunner().invoke(app, ["train", "sft", "--model", str(tiny_model), "--data", str(data["sft"]),
                                      "--out", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2
    assert "pip install 'toolmend[train]'" in result.output and "Traceback" not in result.output


def test_cli_bad_input_exits_2(data: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "grpo", "--model", str(tmp_path / "none"), "--data",
                                      str(data["sft"]), "--out", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2 and "model folder does not exist" in result.output
    missing = tmp_path / "zero3.yaml"
    result = CliRunner().invoke(app, ["train", "sft", "--model", "m", "--data", "d", "--out", "o",
                                      "--accelerate-config", str(missing)])  # fmt: skip
    assert result.exit_code == 2 and "accelerate config file not found" in result.output


def test_dynamic_sampling_drops_only_tied_groups(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    import torch

    config = {**SMALL, "num_generations": 2, "max_completion_length": 8}
    trainer = prepare("grpo", model=tiny_model, data=data["sft"], out=tmp_path, config=config).trainer
    # Two groups of two: the first tied (advantage 0), the second not.
    output = {
        "advantages": torch.tensor([0.0, 0.0, 0.7, -0.7]),
        "completion_mask": torch.ones(4, 3, dtype=torch.int),
        "num_items_in_batch": torch.tensor(12),
    }
    trainer._drop_tied_groups(output)
    assert output["completion_mask"].sum(dim=1).tolist() == [0, 0, 3, 3]
    assert int(output["num_items_in_batch"]) == 6  # the dapo normaliser counts kept tokens only
    assert trainer.dropped_groups == 1


def test_rows_longer_than_max_length_are_counted_before_training(
    tiny_model: Path, data: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The world builder's rows with every tool offered are thousands of tokens; with a
    max_length their prompts fill, TRL would drop every row (num_samples=0). Refused first, with
    the count and the fix; when only some rows are too long, a warning says how many."""
    with pytest.raises(ConfigError) as err:
        prepare("sft", model=tiny_model, data=data["sft"], out=tmp_path, config={**SMALL, "max_length": 8})
    text = str(err.value)
    assert "2 of 2 rows" in text and "max_length=8" in text and "--set max_length=" in text
    assert "--max-tools" in text
    long_row = _rows("sft", limit=1)[0]
    short_row = {**long_row, "prompt": [{"role": "user", "content": "hi"}], "tools": None}
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [long_row, short_row])
    from transformers import AutoTokenizer

    from toolmend.train._recipes import _render, _tools

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    short = len(_render(tokenizer, short_row["prompt"], None))
    long = len(_render(tokenizer, long_row["prompt"], _tools(long_row["tools"])))
    assert short + 8 < long
    with caplog.at_level("WARNING", logger="toolmend.status"):
        prepare(
            "sft", model=tiny_model, data=mixed, out=tmp_path / "m", config={**SMALL, "max_length": short + 8}
        )
    assert any("1 of 2 rows" in r.getMessage() for r in caplog.records)
