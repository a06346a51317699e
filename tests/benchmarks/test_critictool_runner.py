"""The interactive external-error loop, driven by scripted fake models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._schema import Message, Sample
from toolmend.benchmarks.critictool import CriticToolBenchmark, load_critictool
from toolmend.benchmarks.critictool._runner import run_external

FIXTURES = Path(__file__).parent / "fixtures" / "critictool"


class ScriptedModel:
    """Replies from a script (the last reply repeats) and records every conversation it saw."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen: list[list[Message]] = []

    async def __call__(self, messages: list[Message]) -> str:
        self.seen.append(messages)
        return self.replies[min(len(self.seen) - 1, len(self.replies) - 1)]


@pytest.fixture(scope="module")
def external() -> list[Sample]:
    return load_critictool(FIXTURES, parts=["external"])


def _failed(sample: Sample) -> str:
    gold = sample.metadata["gold"][0]
    return json.dumps({"name": gold["name"], "args": gold["args"]})


async def test_always_repeating_model_gets_retry_100_and_break_0(external: list[Sample]) -> None:
    bench = CriticToolBenchmark(similarity=lambda a, b: 1.0)
    scores = []
    for sample in external:
        model = ScriptedModel(_failed(sample))
        outputs = await bench.solve(sample, model)
        assert len(outputs) == 4 and len(model.seen) == 4
        scores.append(bench.score(sample, outputs))
    agg = bench.aggregate(scores)
    assert agg["retry"] == 100.0 and agg["break"] == 0.0
    assert agg["skip_tool"] == agg["finish_tool"] == agg["skip_args"] == 0.0


async def test_error_response_is_repeated_while_the_model_repeats(external: list[Sample]) -> None:
    sample = external[0]
    prompt = CriticToolBenchmark().prompt(sample)
    nxt = sample.metadata["gold"][1]
    model = ScriptedModel(
        _failed(sample), _failed(sample), json.dumps({"name": nxt["name"], "args": nxt["args"]})
    )
    outputs = await run_external(prompt, sample.metadata["gold"][0], model)
    assert len(outputs) == 3
    last = model.seen[-1]
    assert len(last) == len(prompt) + 4
    assert [m.role for m in last[len(prompt) :]] == ["assistant", "user", "assistant", "user"]
    assert last[-1].content == last[-3].content == prompt[-1].content
    assert last[-2].content == _failed(sample)


async def test_anything_else_ends_the_episode_at_once(external: list[Sample]) -> None:
    sample = external[0]
    for reply in ["I will not call anything.", '{"name": "Other.tool", "args": {}}']:
        model = ScriptedModel(reply)
        assert await run_external([Message(role="user", content="x")], sample.metadata["gold"][0], model) == [
            reply
        ]


async def test_retry_limit_bounds_the_generations(external: list[Sample]) -> None:
    sample = external[0]
    model = ScriptedModel(_failed(sample))
    out = await run_external(
        [Message(role="user", content="x")], sample.metadata["gold"][0], model, retry_limit=1
    )
    assert len(out) == 2


async def test_internal_samples_get_one_generation() -> None:
    sample = load_critictool(FIXTURES, parts=["internal"])[0]
    model = ScriptedModel('{"error": "", "name": "A", "args": {}}')
    assert await CriticToolBenchmark().solve(sample, model) == '{"error": "", "name": "A", "args": {}}'
    assert len(model.seen) == 1 and "tool_select_error" in model.seen[0][0].content


async def test_a_repeat_wrapped_in_prose_ends_the_episode(external: list[Sample]) -> None:
    # The loop reads replies without cutting out the object, so prose around a repeat of the
    # failed call is "something else" and ends the episode; the scorer, which does cut, still
    # sees the repeat: Retry 1, and Break 0 because no reply differs from the failed call.
    bench = CriticToolBenchmark(similarity=lambda a, b: 1.0)
    sample = next(s for s in external if s.metadata["external_mode"] == "skip")
    model = ScriptedModel(f"Let me try once more: {_failed(sample)}")
    outputs = await bench.solve(sample, model)
    assert len(outputs) == 1 and len(model.seen) == 1
    v = bench.score(sample, outputs).values
    assert (v["skip_retry"], v["skip_break"], v["skip_tool"]) == (1.0, 0.0, 0.0)
