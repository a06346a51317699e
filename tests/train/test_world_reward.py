"""The world-state reward: hand-computed cases from the world's grading, and gold gets the maximum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats import write_calls
from toolmend.train import WorldRewardConfig, world_reward
from toolmend.world import Task, generate_tasks, world_dataset

TASKS = {seed: generate_tasks(seed) for seed in (0, 2)}


def _task(template: str) -> Task:
    return next(t for t in TASKS[0] if t.template == template)


def _score(task: Task, calls: list[ToolCall], config: WorldRewardConfig | None = None) -> float | None:
    return world_reward(config)([write_calls(calls, "tags")], trace_id=[task.id], seed=[task.seed])[0]


def test_hand_computed_cases() -> None:
    add = _task("todo_add")
    assert _score(add, add.calls) == 2.0  # success 1 + all 5 gold fields made
    # One more write the task never asked for: TD0001's `done` flips, 1 harmful field x 0.5.
    extra = ToolCall(name="todo_complete", arguments={"todo_id": "TD0001"})
    assert _score(add, [*add.calls, extra]) == 1.5
    assert _score(add, [*add.calls, extra], WorldRewardConfig(harm_penalty=2.0)) == 0.0
    # Read-only, 4 facts (2 per city): one city read -> 2/4 facts, no success.
    two = _task("weather_two_cities")
    assert _score(two, two.calls[:1]) == 0.5
    # 12 state changes made by the transfer, the 1 fact (the new balance) never read: 12/13.
    move = _task("finance_move_money")
    assert _score(move, move.calls[:1]) == pytest.approx(12 / 13)
    assert _score(move, move.calls[:1], WorldRewardConfig(progress_weight=0.0)) == 0.0
    # No call at all, and a call of a tool that does not exist: the floor / nothing done.
    fn = world_reward()
    assert fn(["I would rather not."], trace_id=[add.id], seed=[0]) == [-1.0]
    assert _score(add, [ToolCall(name="todo_make", arguments={"title": "x"})]) == 0.0


def test_fresh_world_per_completion_and_task_id_column() -> None:
    add = _task("todo_add")
    text = write_calls(add.calls, "tags")
    # The same completion twice: the second would collide with the first in a shared world.
    row = world_dataset(0, tasks=[add])[0]
    assert world_reward()([text, text], task_id=[row["task_id"]] * 2) == [2.0, 2.0]
    conversational = [[{"role": "assistant", "content": text}]]
    assert world_reward()(conversational, trace_id=[add.id], seed=[0]) == [2.0]


def test_bad_rows_raise() -> None:
    fn = world_reward()
    with pytest.raises(ConfigError, match="needs the dataset column"):
        fn(["x"], tools=["[]"])
    with pytest.raises(ConfigError, match="no world task"):
        fn(["x"], trace_id=["world-0-nope-1"], seed=[0])
    with pytest.raises(ConfigError, match="not a world task id"):
        fn(["x"], trace_id=["bfcl-simple-1"])


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([t for seed in TASKS for t in TASKS[seed]]))
def test_gold_gets_the_maximum_reward(task: Task) -> None:
    config = WorldRewardConfig()
    assert _score(task, task.calls) == config.max_reward


def test_grpo_trains_with_the_world_reward(tiny_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from datasets import Dataset

    from toolmend.train import build_rows, prepare

    rows = build_rows("sft", source="world", seed=0, limit=2, max_tools=2)[0]
    config = {"max_steps": 1, "logging_steps": 1, "per_device_train_batch_size": 2, "num_generations": 2,
              "max_completion_length": 8}  # fmt: skip
    prepared = prepare("grpo", model=tiny_model, data=Dataset.from_list(rows), out=tmp_path, config=config,
                       rewards=["world"])  # fmt: skip
    assert prepared.trainer.reward_func_names == ["world_state"]
    prepared.trainer.train()
    logged = next(e for e in prepared.trainer.state.log_history if "rewards/world_state/mean" in e)
    assert logged["rewards/world_state/mean"] == -1.0  # an untrained model writes no call: the floor


def test_a_later_turn_is_scored_after_the_turns_its_prompt_ran() -> None:
    from toolmend.train import build_rows

    rows = build_rows("sft", source="world", seed=0)[0]
    last = {r["trace_id"]: r for r in rows}  # each task's last turn
    later = [r for r in last.values() if any(m["role"] == "tool" for m in r["prompt"])]
    assert len(later) > 10
    fn = world_reward()
    best = WorldRewardConfig().max_reward
    ids, seeds = [r["trace_id"] for r in later], [0] * len(later)
    completions = [r["completion"] for r in later]
    # The gold last turn completes every task where the prompt's earlier turns left the world ...
    assert fn(completions, prompts=[r["prompt"] for r in later], trace_id=ids, seed=seeds) == [best] * len(
        later
    )
    # ... while alone in a fresh world (the earlier turns never ran) it falls short on some.
    assert min(fn(completions, trace_id=ids, seed=seeds)) < best
    # An assistant turn that no tool result follows (a refine row's first attempt) is not run.
    row = later[0]
    attempt = [row["prompt"][0], row["prompt"][1], {"role": "user", "content": "Check again."}]
    alone = fn([row["completion"]], trace_id=[row["trace_id"]], seed=[0])
    assert fn([row["completion"]], prompts=[attempt], trace_id=[row["trace_id"]], seed=[0]) == alone
