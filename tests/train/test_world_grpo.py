"""The world's TRL form inside TRL's real GRPOTrainer: tools called by the trainer's tool loop,
rewards from the world's grading.

A random tiny model writes no tool call, so this one is steered: its ``generate`` forces a
scripted reply per rollout (a logits processor), while its weights, forward pass, the trainer,
TRL's response parser, its tool loop and the environment are all real.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolmend.world import trl_environment_factory, world_dataset

tiny_llm = pytest.importorskip("tiny_llm")

TASK = "world-0-todo_add-1"
TOOLS = ["todo_create", "todo_list"]
GOOD = '<tool_call>\n{"name": "todo_create", "arguments": {"title": "Send invoices", "due_date": "2025-07-24", "priority": "high"}}\n</tool_call>'
BAD = '<tool_call>\n{"name": "todo_create", "arguments": {"titel": "Send invoices"}}\n</tool_call>'
FINAL = "Done."


def _scripted_model(path: Path, tokenizer: Any) -> Any:
    import torch
    from transformers import LlamaForCausalLM, LogitsProcessor, LogitsProcessorList

    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def ids(text: str) -> list[int]:
        return [*tokenizer.encode(text, add_special_tokens=False), eos]

    class Script(LogitsProcessor):
        """Row 0 of a group calls the tool right, row 1 with a misspelt parameter; after a tool
        result, both answer."""

        def __init__(self) -> None:
            self.start: int | None = None
            self.plans: list[list[int]] = []

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            if self.start is None:
                self.start = input_ids.shape[1]
                for row in range(input_ids.shape[0]):
                    prompt = tokenizer.decode(input_ids[row], skip_special_tokens=False)
                    answered = "<tool_response>" in prompt
                    self.plans.append(ids(FINAL if answered else (GOOD if row % 2 == 0 else BAD)))
            step = input_ids.shape[1] - self.start
            forced = torch.full_like(scores, float("-inf"))
            for row, plan in enumerate(self.plans):
                forced[row, plan[step] if step < len(plan) else eos] = 0.0
            return forced

    class ScriptedLlama(LlamaForCausalLM):
        def generate(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["logits_processor"] = LogitsProcessorList([Script()])
            return super().generate(*args, **kwargs)

    return ScriptedLlama.from_pretrained(path)


@pytest.fixture
def one_thread() -> Any:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 150k-parameter model: a second thread only waits on the first
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
def test_grpo_trainer_runs_the_world_environment(
    corpus: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trl
    from datasets import Dataset
    from transformers import AutoTokenizer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental
    rows = [r for r in world_dataset(seed=0) if r["task_id"] == TASK]
    make = trl_environment_factory(seed=0, tools=TOOLS)
    probe = make()
    docs = [getattr(probe, n).__doc__ or "" for n in TOOLS]
    path = tiny_llm.save_tiny(
        tmp_path / "model",
        template=trl.chat_template_utils.qwen3_chat_template,
        corpus=[*corpus, GOOD, BAD, FINAL, *docs, *(m["content"] for m in rows[0]["prompt"])],
    )
    tokenizer = AutoTokenizer.from_pretrained(path)
    made: list[Any] = []

    def factory() -> Any:
        made.append(make())
        return made[-1]

    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=128,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=_scripted_model(path, tokenizer),
        args=args,
        train_dataset=Dataset.from_list(rows * 2),
        processing_class=tokenizer,
        environment_factory=factory,
    )
    trainer.train()
    assert trainer.state.global_step == 1

    # TRL's tool loop called the world's tools: one rollout right, one with a misspelt parameter,
    # which came back as the coded error body (not a Python exception, so no tool failure).
    rollouts = sorted((e for e in made if e._env.episode is not None), key=lambda e: e.get_reward())
    assert len(rollouts) == 2
    bad, good = (e._env.episode for e in rollouts)
    assert [(s.call.name, s.ok) for s in good.steps] == [("todo_create", True)]
    assert [(s.call.name, s.ok) for s in bad.steps] == [("todo_create", False)]
    assert bad.steps[0].codes == ["redundant_parameter", "missing_required"]
    assert json.loads(bad.steps[0].content)["error"]["type"] == "invalid_request"
    assert any(t.title == "Send invoices" for t in good.session.world.state.todos.values())
    # The reward TRL logged is the world's grade of each rollout's final state.
    assert [e.get_reward() for e in rollouts] == [0.0, 1.0]
    assert [e._env.grade().success for e in rollouts] == [False, True]
    log = trainer.state.log_history[0]
    assert log["rewards/WorldToolEnv/mean"] == 0.5 and log["reward_std"] > 0
    assert log["tools/call_frequency"] == 1.0 and log["tools/failure_frequency"] == 0.0
