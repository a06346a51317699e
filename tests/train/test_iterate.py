"""ToolACE-R's iterative loop on the tiny model: 2 real rounds (hf/ sampling, TRL SFT), the
difficulty filter driven by D, and bad input refused before anything is sampled."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend._errors import ConfigError
from toolmend._schema import Message
from toolmend.benchmarks._toolace_r import difficulty, in_band
from toolmend.cli._app import app
from toolmend.formats import load_tools, parse_calls, to_openai_tool
from toolmend.models import Completion, GenerateRequest, ScriptedModel
from toolmend.models._hf import chat_dicts
from toolmend.models._openai_wire import DEFAULT_TOOL_PROMPT
from toolmend.train import IterateConfig, build_rows, iterate
from toolmend.train._iterate import _gold, _self_refine

TINY = {"limit": 2, "max_tools": 2, "k": 2, "max_new_tokens": 12, "eval_set": {"limit": 2},
        "sft": {"max_steps": 1, "per_device_train_batch_size": 2}}  # fmt: skip


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_two_rounds_on_the_tiny_model(tiny_model: Path, tmp_path: Path) -> None:
    # beta above 1 keeps the untrained model's D = 1 samples, so both rounds train.
    result = iterate(tiny_model, tmp_path, {**TINY, "rounds": 2, "beta": 1.01})
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert [r["round"] for r in curves["rounds"]] == [0, 1, 2]
    assert curves["config"]["k"] == 2 and (tmp_path / "curves.md").read_text().count("\n") == 5
    if importlib.util.find_spec("matplotlib") is not None:  # the optional viz extra
        assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")
    assert result.final_model == tmp_path / "round-2" / "model"
    assert (result.final_model / "model.safetensors").is_file()
    # Round 2 sampled and trained from round 1's checkpoint, not the starting model.
    assert curves["rounds"][1]["model"] == str(tmp_path / "round-1" / "model")
    tasks = {r["trace_id"]: r for r in build_rows("sft", source="world", seed=0, limit=2, max_tools=2)[0]}
    for n in (1, 2):
        records = _lines(tmp_path / f"round-{n}" / "difficulty.jsonl")
        assert Counter(r["part"] for r in records) == {"task": 2, "refine": 2}
        for r in records:
            # The filter's D is eq. 5 over the k recorded answers, and `kept` is alpha < D < beta.
            assert len(r["answers"]) == 2
            d = difficulty(_gold(tasks[r["trace_id"]]), [parse_calls(a).calls for a in r["answers"]])
            assert r["difficulty"] == d and r["kept"] == in_band(d, 0.0, 1.01)
        point = curves["rounds"][n]
        assert point["kept_tasks"] + point["kept_refine"] == sum(r["kept"] for r in records)
        assert point["steps"] == 1 and point["eval_tasks"] == 2


def test_filter_keeps_only_the_band(tiny_model: Path, tmp_path: Path) -> None:
    tasks = build_rows("sft", source="world", seed=0, limit=3, max_tools=2)[0]
    gold = {r["prompt"][0]["content"]: r["completion"][0]["content"] for r in tasks}
    easy, mid, hard = list(gold)
    seen: Counter[str] = Counter()

    def script(messages: list[Message]) -> str:
        # easy: always the gold (D = 0); mid: gold, then nothing (D = 0.5); hard: never (D = 1).
        query = messages[0].content
        seen[repr(messages)] += 1
        if query == easy or (query == mid and seen[repr(messages)] % 2 == 1):
            return gold[query]
        return "I do not know."

    checkpoints: list[Path] = []

    def sampler(checkpoint: Path) -> ScriptedModel:
        checkpoints.append(checkpoint)
        return ScriptedModel(script)

    config = {**TINY, "limit": 3, "rounds": 1, "alpha": 0.0, "beta": 0.9}
    result = iterate(tiny_model, tmp_path, config, sampler=sampler)
    records = _lines(tmp_path / "round-1" / "difficulty.jsonl")
    by_query = {(r["trace_id"], r["part"]): (r["difficulty"], r["kept"]) for r in records}
    ids = {r["prompt"][0]["content"]: r["trace_id"] for r in tasks}
    for part in ("task", "refine"):
        assert by_query[(ids[easy], part)] == (0.0, False)
        assert by_query[(ids[mid], part)] == (0.5, True)
        assert by_query[(ids[hard], part)] == (1.0, False)
    point = result.rounds[1]
    assert (point.kept_tasks, point.kept_refine, point.too_easy, point.too_hard) == (1, 1, 2, 2)
    assert point.steps == 1 and result.final_model == tmp_path / "round-1" / "model"
    # Sampled from the start, evaluated after training on the new checkpoint.
    assert checkpoints[0] == tiny_model and checkpoints[-1] == result.final_model


def test_sampling_renders_the_prompt_sft_trains_on(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    row = build_rows("sft", source="world", seed=0, limit=1, max_tools=3)[0][0]
    tools = load_tools(json.loads(row["tools"]))
    request = GenerateRequest(messages=[Message(**m) for m in row["prompt"]], tools=tools)
    sampled = tokenizer.apply_chat_template(chat_dicts(request, "native", DEFAULT_TOOL_PROMPT),
                                            tools=[to_openai_tool(t) for t in tools],
                                            add_generation_prompt=True, tokenize=False)  # fmt: skip
    trained = tokenizer.apply_chat_template(row["prompt"], tools=json.loads(row["tools"]),
                                            add_generation_prompt=True, tokenize=False)  # fmt: skip
    assert sampled == trained


def _never(checkpoint: Path) -> ScriptedModel:
    raise AssertionError("sampled before the input was checked")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"alpha": 0.9, "beta": 0.5}, "alpha must be below beta"),
        ({"k": 0}, "field 'k'"),
        ({"rounds": 2, "temprature": 1.0}, "field 'temprature'"),
        ({"refine": "sometimes"}, "field 'refine'"),
        ({"limit": 3, "eval_set": {"seed": 0, "limit": 3}}, "no task outside the training set"),
        ({"source": "nowhere"}, "unknown trajectory source"),
    ],
)
def test_bad_input_fails_before_sampling(
    tiny_model: Path, tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        iterate(tiny_model, tmp_path, config, sampler=_never)


def test_missing_model_and_cli_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        iterate(tmp_path / "nope", tmp_path / "out", sampler=_never)
    runner = CliRunner()
    bad = runner.invoke(app, ["train", "iterate", "--model", str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "does not exist" in bad.output
    bad = runner.invoke(app, ["train", "iterate", "--model", str(tmp_path), "--out", str(tmp_path),
                              "--alpha", "1", "--beta", "0.5"])  # fmt: skip
    assert bad.exit_code == 2 and "alpha must be below beta" in bad.output
    assert IterateConfig.load({"sft": {"max_steps": 3}}).sft == {"max_steps": 3}


def test_nestools_tasks_and_a_merged_lora_checkpoint(tiny_model: Path, tmp_path: Path) -> None:
    tasks = build_rows("sft", source="nestools", seed=0, limit=2)[0]
    # One row per turn: a later turn's prompt holds the earlier turns and their tool results.
    assert len(tasks) > 2 and any(m["role"] == "tool" for r in tasks for m in r["prompt"])
    gold = {
        json.dumps([[m["role"], m["content"]] for m in r["prompt"]]): r["completion"][0]["content"]
        for r in tasks
    }
    seen: Counter[str] = Counter()

    def script(messages: list[Message]) -> str:
        key = json.dumps([[m.role, m.content] for m in messages])
        seen[key] += 1  # every sample: right once, then wrong (D = 0.5)
        return gold.get(key, "") if seen[key] % 2 else "no"

    config = {**TINY, "source": "nestools", "rounds": 1, "lora": True, "refine": "none",
              "eval_set": {"offset": 2, "limit": 2}}  # fmt: skip
    result = iterate(tiny_model, tmp_path, config, sampler=lambda _: ScriptedModel(script))
    assert result.rounds[1].kept_tasks == len(tasks) and result.rounds[1].kept_refine == 0
    final = result.final_model
    # The adapter is merged: the next round (and the hf/ backend) loads a plain checkpoint.
    assert (final / "config.json").is_file() and not (final / "adapter_config.json").exists()
    from transformers import AutoModelForCausalLM

    assert AutoModelForCausalLM.from_pretrained(final).num_parameters() > 0
    records = _lines(tmp_path / "round-1" / "difficulty.jsonl")
    assert {r["trace_id"] for r in records} == {r["trace_id"] for r in tasks}
    # The eval set skips 2 tasks (not rows) and holds every turn of the next 2.
    held_out = build_rows("sft", source="nestools", seed=0, limit=4)[0]
    first_two = {r["trace_id"] for r in tasks}
    assert result.rounds[1].eval_tasks == sum(r["trace_id"] not in first_two for r in held_out)


def test_training_offset_skips_tasks_and_the_eval_set_leaves_them_out(
    tiny_model: Path, tmp_path: Path
) -> None:
    # bfcl lists its multi-call categories first: only an offset reaches the single-call ones.
    first = build_rows("sft", source="nestools", seed=0, limit=3)[0]
    ids = list(dict.fromkeys(r["trace_id"] for r in first))
    gold = {json.dumps([[m["role"], m["content"]] for m in r["prompt"]]): r["completion"][0]["content"]
            for r in first}  # fmt: skip
    perfect = ScriptedModel(
        lambda messages: gold.get(json.dumps([[m.role, m.content] for m in messages]), "")
    )
    config = {**TINY, "source": "nestools", "rounds": 1, "refine": "none", "offset": 2, "limit": 1,
              "eval_set": {"limit": 3}}  # fmt: skip
    result = iterate(tiny_model, tmp_path, config, sampler=lambda _: perfect)
    records = _lines(tmp_path / "round-1" / "difficulty.jsonl")
    assert {r["trace_id"] for r in records} == {ids[2]}
    # The eval set's first 3 tasks less the one trained on: every turn of the first two.
    assert result.rounds[0].eval_tasks == sum(r["trace_id"] in ids[:2] for r in first)
    # Counted in gold trajectories, not in built tasks: 2 parallel_multiple golds fail the checks.
    rows, report = build_rows("sft", source="bfcl", offset=600, limit=1)
    assert [r["trace_id"] for r in rows] == ["bfcl-simple_python_0"] and report.traces == 1
    with pytest.raises(ConfigError, match="offset"):
        build_rows("critique", source="world", offset=1, limit=1)
    with pytest.raises(ConfigError, match="offset"):
        IterateConfig.load({"offset": -1})


def test_native_tool_calls_are_scored_not_read_as_empty_text(tiny_model: Path, tmp_path: Path) -> None:
    # hf/ returns the calls it parses as Completion.tool_calls with empty text, as servers do.
    tasks = build_rows("sft", source="world", seed=0, limit=2, max_tools=2)[0]
    held_out = build_rows("sft", source="world", seed=1, limit=2, max_tools=2)[0]
    gold = {r["prompt"][0]["content"]: _gold(r) for r in tasks + held_out}
    native = ScriptedModel(lambda messages: Completion(tool_calls=gold[messages[0].content]))
    result = iterate(tiny_model, tmp_path, {**TINY, "rounds": 1, "refine": "none"}, sampler=lambda _: native)
    assert (result.rounds[0].exact, result.rounds[0].schema_valid) == (1.0, 1.0)
    records = _lines(tmp_path / "round-1" / "difficulty.jsonl")
    assert all(r["difficulty"] == 0.0 and "<tool_call>" in r["answers"][0] for r in records)


def test_builder_refine_rows_and_an_empty_band_train_nothing(tiny_model: Path, tmp_path: Path) -> None:
    tasks = [
        r for seed in (0, 1) for r in build_rows("sft", source="world", seed=seed, limit=2, max_tools=2)[0]
    ]
    gold = {r["prompt"][0]["content"]: r["completion"][0]["content"] for r in tasks}
    perfect = ScriptedModel(lambda messages: gold[messages[0].content])  # D = 0 everywhere: too easy
    config = {**TINY, "rounds": 1, "refine": "builder"}
    result = iterate(tiny_model, tmp_path, config, sampler=lambda _: perfect)
    records = _lines(tmp_path / "round-1" / "difficulty.jsonl")
    refine = build_rows("refine", source="world", seed=0, limit=2, max_tools=2)[0]
    assert sum(r["part"] == "refine" for r in records) == len(refine) > 0
    assert all(r["difficulty"] == 0.0 and not r["kept"] for r in records)
    point = result.rounds[1]
    assert (point.too_easy, point.steps, point.exact) == (len(records), 0, 1.0)
    assert result.final_model == tiny_model and not (tmp_path / "round-1" / "model").exists()


def test_missing_train_extra_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tiny_model: Path, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "trl", None)  # Python's own way to make an import fail
    result = CliRunner().invoke(app, ["train", "iterate", "--model", str(tiny_model), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "pip install 'toolmend[train]'" in result.output and not list(tmp_path.iterdir())


def test_cli_runs_one_round_and_writes_the_curves(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["train", "iterate", "--model", str(tiny_model), "--out", str(out), "--rounds", "1", "--k", "1",
            "--limit", "2", "--max-tools", "2", "--eval-limit", "1", "--beta", "1.01", "--refine", "none",
            "--set", "max_new_tokens=8", "--set", "sft.max_steps=1", "--set", "sft.per_device_train_batch_size=2"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    curves = json.loads((out / "curves.json").read_text())
    assert [r["round"] for r in curves["rounds"]] == [0, 1]
    assert curves["config"]["k"] == 1 and curves["config"]["sft"]["max_steps"] == 1
    assert curves["rounds"][1]["eval_tasks"] == 1 and (out / "curves.md").is_file()
    assert (out / "round-1" / "difficulty.jsonl").is_file()
    assert f"curves in {out}/curves.json" in " ".join(result.output.split())


def test_self_refine_rows_with_grounding_name_a_wrong_value() -> None:
    row = build_rows("sft", source="world", seed=0, limit=1, max_tools=2)[0][0]
    call = json.loads(row["gold_calls"])[0]
    key = next(k for k, v in call["arguments"].items() if isinstance(v, str) and len(v) > 1)
    wrong = {**call, "arguments": {**call["arguments"], key: "Nowhere Town"}}
    attempt = f"<tool_call>\n{json.dumps(wrong)}\n</tool_call>"
    grounded = _self_refine(row, attempt, ground=True)
    assert f"'{key}' is 'Nowhere Town', which appears nowhere" in grounded["prompt"][-1]["content"]
    assert "appears nowhere" not in _self_refine(row, attempt)["prompt"][-1]["content"]
    assert grounded["completion"] == row["completion"]
