"""The verl export and integration against verl's own classes, on CPU: the parquet loads through
``RLHFDataset`` with the tools YAML, the world tools run through ``ToolAgentLoop``'s call
dispatch (create / execute / release per call) after verl's Hermes parser read the calls, and
``compute_score`` is loaded and called the way verl's reward loop does it.

The tokenizer is built here (a byte-level BPE trained on the rows, with a Hermes-style chat
template that renders tools), so nothing is downloaded."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

verl = pytest.importorskip("verl", reason="the verl extra is not installed: pip install 'toolmend[verl]'")

from omegaconf import OmegaConf  # noqa: E402

with warnings.catch_warnings():
    # verl 0.9.1 imports Ray's state API from its old ray.experimental path (Ray 2.60 warns).
    warnings.simplefilter("ignore", DeprecationWarning)
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
    from verl.experimental.agent_loop.tool_parser import FunctionCall, ToolParser
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

from toolmend.cli import app  # noqa: E402
from toolmend.integrations.verl import WorldTool, compute_score, export_verl  # noqa: E402
from toolmend.world import WorldEnv  # noqa: E402

TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n"
    "{%- for m in messages %}{%- if m['role'] == 'system' %}{{ m['content'] }}{%- endif %}{%- endfor %}\n"
    "<tools>\n{%- for t in tools %}{{ t | tojson }}\n{%- endfor %}</tools><|im_end|>\n"
    "{%- endif %}"
    "{%- for m in messages %}{%- if m['role'] != 'system' or not tools %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def _tokenizer(texts: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    specials = ["<|im_start|>", "<|im_end|>", "<pad>"]
    core.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=600, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),  # fmt: skip
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core, chat_template=TEMPLATE, eos_token="<|im_end|>", pad_token="<pad>"
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("verl")
    rl = export_verl("rl", root / "rl", seed=0, limit=40, max_tools=8)
    sft = export_verl("sft", root / "sft", seed=0, limit=24, max_tools=6)
    import pyarrow.parquet as pq

    rows = pq.read_table(root / "rl" / "train.parquet").to_pylist()
    texts = [json.dumps(r, ensure_ascii=False) for r in rows]
    texts += [(root / "rl" / "tools.yaml").read_text(encoding="utf-8")]
    return {"root": root, "rl": rl, "sft": sft, "rows": rows, "tokenizer": _tokenizer(texts)}


def _dataset(folder: Path, tokenizer: Any, **config: Any) -> RLHFDataset:
    cfg = OmegaConf.create({
        "prompt_key": "prompt", "max_prompt_length": 100_000, "filter_overlong_prompts": True,
        "filter_overlong_prompts_workers": 1, "cache_dir": str(folder / "cache"),
        "tool_config_path": str(folder / "tools.yaml"), **config,
    })  # fmt: skip
    return RLHFDataset(data_files=str(folder / "train.parquet"), tokenizer=tokenizer, config=cfg)


def test_the_parquet_loads_through_rlhf_dataset_with_the_tools(exported: dict[str, Any]) -> None:
    folder = exported["root"] / "rl"
    data = _dataset(folder, exported["tokenizer"])
    assert len(data) == exported["rl"].rows == 40
    # verl loaded every world tool from the YAML (the schemas go into the length filter).
    assert data.tool_schemas is not None and len(data.tool_schemas) == 50
    item = data[3]
    assert item["data_source"] == "toolmend/world" and item["agent_name"] == "tool_agent"
    assert [m["role"] for m in item["raw_prompt"]] == ["system", "user"]
    kwargs = item["tools_kwargs"]["todo_create"]["create_kwargs"]
    assert kwargs["task_id"] == item["extra_info"]["task_id"] and kwargs["history"] == "[]"
    assert 0 < len(item["extra_info"]["tool_selection"]) <= 8
    batch = collate_fn([data[0], data[1]])
    assert list(batch["index"]) == [0, 1]
    # The length filter counts the tool schemas: a bound below one prompt's length drops rows.
    assert len(_dataset(folder, exported["tokenizer"], max_prompt_length=64)) == 0


def _loop(tools: list[Any]) -> Any:
    """A ToolAgentLoop with only what its call dispatch reads (no rollout server on CPU)."""
    loop = object.__new__(ToolAgentLoop)
    loop.tools = {t.name: t for t in tools}
    loop.max_tool_response_length = 100_000
    loop.tool_response_truncate_side = "middle"
    return loop


def _agent_data(row: dict[str, Any]) -> Any:
    return AgentData(messages=list(row["prompt"]), image_data=None, video_data=None, audio_data=None,
                     mm_processor_kwargs=None, metrics={}, request_id="r0",
                     tools_kwargs=row["extra_info"]["tools_kwargs"])  # fmt: skip


async def test_world_tools_run_a_gold_trajectory_through_verls_tool_loop(exported: dict[str, Any]) -> None:
    tools = initialize_tools_from_config(str(exported["root"] / "rl" / "tools.yaml"))
    assert len(tools) == 50 and all(isinstance(t, WorldTool) for t in tools)
    # The model is shown toolmend's full schema, constraints included (verl's own model drops them).
    create = next(t for t in tools if t.name == "todo_create").tool_schema.model_dump(exclude_unset=True)
    assert create["function"]["parameters"]["properties"]["title"]["minLength"] == 1
    loop, tokenizer = _loop(tools), exported["tokenizer"]
    parser = ToolParser.get_tool_parser("hermes", tokenizer)
    row = next(
        r for r in exported["rows"] if r["extra_info"]["task_id"] == "world-0-mail_open_from_contact-1"
    )
    env = WorldEnv(faults="none")
    env.reset(row["extra_info"]["task_id"])
    replies = env.gold_replies()
    agent = _agent_data(row)
    responses = []
    for reply in replies[:-1]:
        text, calls = await parser.extract_tool_calls(tokenizer.encode(reply, add_special_tokens=False))
        assert len(calls) == 1
        response, reward, _ = await loop._call_tool(calls[0], agent.tools_kwargs, agent)
        assert reward == 0.0 and '"error"' not in (response.text or "")
        responses.append(response.text)
    # State carried across calls although verl made a fresh instance for each: the mail id the
    # search returned is the one the read opened.
    assert "M0010" in responses[1] and "Budget review" in responses[2]
    assert [c["name"] for c in agent.extra_fields["toolmend_calls"]] == [
        "contacts_search", "mail_search", "mail_read"]  # fmt: skip
    assert all(not t._instances for t in tools)  # every instance released

    # What one call changes, the next sees, through a fresh tool instance each.
    fresh = _agent_data(row)
    await loop._call_tool(FunctionCall(name="todo_create", arguments=json.dumps({"title": "Buy oat milk"})),
                          fresh.tools_kwargs, fresh)  # fmt: skip
    listed, _, _ = await loop._call_tool(
        FunctionCall(name="todo_list", arguments="{}"), fresh.tools_kwargs, fresh
    )
    assert "Buy oat milk" in (listed.text or "")
    other = _agent_data(row)  # another trajectory of the same task starts from the task's world
    unseen, _, _ = await loop._call_tool(
        FunctionCall(name="todo_list", arguments="{}"), other.tools_kwargs, other
    )
    assert "Buy oat milk" not in (unseen.text or "")

    # An invalid call: the checker's coded error body, and the step penalty.
    bad = FunctionCall(name="todo_create", arguments=json.dumps({"title": ""}))
    response, reward, _ = await loop._call_tool(bad, agent.tools_kwargs, agent)
    body = json.loads(response.text)
    assert body["error"]["details"][0]["code"] == "empty_value" and reward == pytest.approx(-0.1)


async def test_compute_score_loads_and_scores_the_way_verls_reward_loop_does(
    exported: dict[str, Any],
) -> None:
    import torch
    from verl import DataProto

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": "pkg://toolmend.integrations.verl", "name": "compute_score", "reward_kwargs": {}}}})  # fmt: skip
    fn = get_custom_reward_fn(config)
    assert fn is not None
    tokenizer = exported["tokenizer"]
    manager = NaiveRewardManager(config, tokenizer, compute_score=fn)
    row = next(
        r for r in exported["rows"] if r["extra_info"]["task_id"] == "world-0-mail_open_from_contact-1"
    )
    tools = {t.name: t for t in initialize_tools_from_config(str(exported["root"] / "rl" / "tools.yaml"))}
    loop, parser = _loop(list(tools.values())), ToolParser.get_tool_parser("hermes", tokenizer)

    async def rollout(replies: list[str]) -> dict[str, Any]:
        agent = _agent_data(row)
        for reply in replies:
            _, calls = await parser.extract_tool_calls(tokenizer.encode(reply, add_special_tokens=False))
            for call in calls:
                await loop._call_tool(call, agent.tools_kwargs, agent)
        response = tokenizer.encode("\n".join(replies), add_special_tokens=False)
        prompt = tokenizer.encode("prompt", add_special_tokens=False)
        data = DataProto.from_dict(
            tensors={"prompts": torch.tensor([prompt]), "responses": torch.tensor([response]),
                     "attention_mask": torch.ones(1, len(prompt) + len(response), dtype=torch.long)},
            non_tensors={"data_source": np.array([row["data_source"]], dtype=object),
                         "reward_model": np.array([row["reward_model"]], dtype=object),
                         "extra_info": np.array([dict(row["extra_info"])], dtype=object),
                         "tool_extra_fields": np.array([agent.extra_fields], dtype=object)},
        )  # fmt: skip
        out: dict[str, Any] = await manager.run_single(data)
        return out

    env = WorldEnv(faults="none")
    env.reset(row["extra_info"]["task_id"])
    gold = await rollout(env.gold_replies())
    assert gold["reward_score"] == 3.0 and gold["reward_extra_info"]["world_success"] == 1.0
    assert gold["reward_extra_info"]["calls"] == 3.0
    # Stopping after the search: no success, partial credit, every call valid.
    partial = await rollout(env.gold_replies()[:2] + ["I could not open it."])
    assert partial["reward_extra_info"]["world_success"] == 0.0
    assert -1.0 < partial["reward_score"] < gold["reward_score"]
    # An invalid call lowers the valid share.
    broken = await rollout(['<tool_call>{"name": "mail_read", "arguments": {}}</tool_call>', "Done."])
    assert (
        broken["reward_extra_info"]["invalid_calls"] == 1.0
        and broken["reward_extra_info"]["valid_share"] == 0.0
    )
    assert broken["reward_score"] < partial["reward_score"]


async def test_sft_rows_replay_their_earlier_turns_before_the_rollout(exported: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    rows = pq.read_table(exported["root"] / "sft" / "train.parquet").to_pylist()
    later = next(r for r in rows if json.loads(r["extra_info"]["history"]))
    data = _dataset(exported["root"] / "sft", exported["tokenizer"])
    assert len(data) == len(rows) == exported["sft"].rows
    gold = json.loads(later["reward_model"]["ground_truth"])
    tools = initialize_tools_from_config(str(exported["root"] / "sft" / "tools.yaml"))
    loop, agent = _loop(tools), _agent_data(later)
    for call in gold:
        response, _, _ = await loop._call_tool(
            FunctionCall(name=call["name"], arguments=json.dumps(call["arguments"])),
            agent.tools_kwargs,
            agent,
        )
        assert '"error"' not in (response.text or "")
    info = {**later["extra_info"], **agent.extra_fields}
    env = WorldEnv(faults="none")
    env.reset(later["extra_info"]["task_id"])
    answer = env.gold_replies()[-1]
    score = compute_score(later["data_source"], answer, later["reward_model"]["ground_truth"], info)
    # The earlier turns ran first (from the row), only the rollout's own calls are scored as its.
    assert score["world_success"] == 1.0 and score["valid_share"] == 1.0 and score["calls"] == len(gold)


def test_the_cli_writes_the_folder_and_refuses_other_sources(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["build", "kto", "--format", "verl", "--out", str(tmp_path / "k"), "--limit", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "reward.custom_reward_function.path=pkg://toolmend.integrations.verl" in result.output
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "k" / "train.parquet").to_pylist()
    assert rows and all(r["extra_info"]["negatives"] for r in rows)
    refused = runner.invoke(
        app, ["build", "sft", "--format", "verl", "--source", "bfcl", "--out", str(tmp_path / "b")]
    )
    assert refused.exit_code == 2 and "--source world" in refused.output
    bad = runner.invoke(app, ["build", "refine", "--format", "verl", "--out", str(tmp_path / "r")])
    assert bad.exit_code == 2 and "not refine" in bad.output


def test_the_gpu_script_overrides_compose_with_verls_trainer_config() -> None:
    """examples/verl/run_grpo.sh cannot run here (no GPU); every option it passes must at least be
    a key of verl's PPO trainer config (Hydra refuses unknown ones), with the values it sets."""
    from hydra import compose, initialize_config_dir

    script = (Path(__file__).resolve().parents[2] / "examples" / "verl" / "run_grpo.sh").read_text(
        encoding="utf-8"
    )
    block = script[script.index("verl.trainer.main_ppo") :].splitlines()[1:]
    values = {"$DATA": "data/verl-rl", "$MODEL": "Qwen/Qwen3-0.6B", "$STEPS": "3", "$GPUS": "1"}
    overrides = []
    for line in block:
        line = line.strip().removesuffix("\\").strip()
        if not line or line.startswith('"$@"'):
            continue
        key, _, value = line.partition("=")
        for name, given in values.items():
            value = value.replace(name, given)
        overrides.append(f"{key}={value.strip(chr(34)).strip(chr(39))}")
    with initialize_config_dir(
        config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None
    ):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.actor_rollout_ref.rollout.name == "vllm"
    assert cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path == "data/verl-rl/tools.yaml"
    assert cfg.reward.custom_reward_function.path == "pkg://toolmend.integrations.verl"
