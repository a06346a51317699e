"""The rewards: hand-computed values per component, gold scores the maximum, bugs raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats import write_calls
from toolmend.train import (
    CallMatchConfig,
    SchemaRewardConfig,
    call_match_reward,
    call_match_score,
    reflection_config,
    schema_reward,
    schema_score,
    structured_reflection_reward,
)

TOOLS = json.dumps(
    [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
         "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "send", "parameters": {"type": "object",
         "properties": {"to": {"type": "string"}}, "required": ["to"]}}},
    ]
)  # fmt: skip


def _tag(name: str, args: dict) -> str:
    return write_calls([ToolCall(name=name, arguments=args)], "tags")


def test_schema_reward_hand_computed() -> None:
    fn = schema_reward()
    replies = [
        _tag("get_weather", {"city": "Oslo"}),  # clean: 1.0
        _tag("get_weather", {"city": "Oslo", "zip": 1}),  # redundant_parameter 0.25 → 0.75
        _tag("get_weather", {"days": "3"}),  # missing_required 0.5 + invalid_type 0.5 → 0.0
        _tag("get_wether", {"city": "Oslo"}),  # wrong_tool_name 1.0 → 0.0
        "I think it is sunny.",  # no call at all → min
        # Prose around a bare call list is redundant information (0.25); prose beside tags is allowed.
        [{"role": "assistant", "content": 'Sure: [send(to="a")]'}],
    ]
    assert fn(replies, tools=[TOOLS] * len(replies)) == [1.0, 0.75, 0.0, 0.0, -1.0, 0.75]
    harsh = SchemaRewardConfig(penalties={"redundant_parameter": 2.0})
    assert schema_score(replies[1], TOOLS, harsh) == -1.0  # floored at min_reward


def test_call_match_hand_computed() -> None:
    gold = [ToolCall(name="get_weather", arguments={"city": "Oslo", "days": 3})]
    # max = name 1 + keys 1 + 2 values = 4; ToolRL maps ratio r onto [-3, 3] as 6r - 3.
    assert call_match_score(gold, gold) == 3.0
    half = [ToolCall(name="get_weather", arguments={"city": "Oslo"})]  # 1 + 1/2 + 1 = 2.5 → 0.75
    assert call_match_score(half, gold) == pytest.approx(6 * 2.5 / 4 - 3)
    wrong_name = [ToolCall(name="send", arguments={"to": "x"})]  # name Jaccard 0 → -3
    assert call_match_score(wrong_name, gold) == -3.0
    extra = [*gold, ToolCall(name="send", arguments={})]  # names {gw} vs {gw, send}: 1/2 → 3.5/4
    assert call_match_score(extra, gold) == pytest.approx(6 * 3.5 / 4 - 3)
    assert call_match_score(half, gold, CallMatchConfig(low=0, high=1, values_weight=0)) == pytest.approx(
        1.5 / 2
    )
    fn = call_match_reward()
    assert fn(
        [write_calls(gold, "tags"), "nonsense"], gold_calls=[json.dumps([gold[0].model_dump()])] * 2
    ) == [
        3.0,
        -3.0,
    ]


def test_reflection_reward_presets_and_values() -> None:
    gold = '<reflect>the city was wrong</reflect><tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    paper, released = structured_reflection_reward("paper"), structured_reflection_reward("released")
    assert paper([gold], ground_truth=[gold]) == [1.0]
    # The released code adds 1e-8 to its denominators, so its maximum is 1 - O(1e-8).
    assert released([gold], ground_truth=[gold]) == [pytest.approx(1.0, abs=1e-6)]
    wrong_call = (
        '<reflect>the city was wrong</reflect><tool_call>{"name": "f", "arguments": {"a": 2}}</tool_call>'
    )
    # Released code gates on the calls (0 when they differ); the paper's equations do not.
    assert released([wrong_call], ground_truth=[gold]) == [0.0]
    assert 0.0 < paper([wrong_call], ground_truth=[gold])[0] < 1.0
    assert reflection_config("released").strict_call_gate and not reflection_config("paper").strict_call_gate


def test_bugs_raise_instead_of_scoring_zero() -> None:
    with pytest.raises(ConfigError, match="tools"):
        schema_reward()(["x"], gold_calls=["[]"])
    with pytest.raises(ConfigError, match="2 values"):
        call_match_reward()(["x"], gold_calls=["[]", "[]"])
    with pytest.raises(ConfigError, match="string or a list of messages"):
        structured_reflection_reward()([42], ground_truth=["<reflect>x</reflect>"])
    # With the gold's count known, a repeated call costs duplicate_call and wrong_tool_count (0.25 each).
    two = write_calls([ToolCall(name="send", arguments={"to": "a"})] * 2, "tags")
    assert schema_reward()(
        [two], tools=[TOOLS], gold_calls=['[{"name": "send", "arguments": {"to": "a"}}]']
    ) == [0.5]
    with pytest.raises(ConfigError, match="JSON list"):
        call_match_reward()(["x"], gold_calls=['{"name": "f"}'])

    def broken(a: str, b: str) -> float:
        raise RuntimeError("similarity bug")

    # The benchmark's reward logs a failing similarity and scores the term 0; in training it raises.
    with pytest.raises(RuntimeError, match="similarity bug"):
        structured_reflection_reward(sim=broken)(
            ["<reflect>a b</reflect>"], ground_truth=["<reflect>a c</reflect>"]
        )


_names = st.sampled_from(["get_weather", "send"])
_values = st.one_of(st.integers(-5, 5), st.text("abcxyz", min_size=1, max_size=5), st.booleans())


@st.composite
def _gold_calls(draw: st.DrawFn) -> list[ToolCall]:
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(_names)
        if name == "send":
            args = {"to": draw(st.text("abc", min_size=1, max_size=4))}
        else:
            args = {"city": draw(st.text("OsloParis", min_size=1, max_size=6))}
            if draw(st.booleans()):
                args["days"] = draw(st.integers(1, 9))
        calls.append(ToolCall(name=name, arguments=args))
    return calls


@settings(max_examples=40, deadline=None)
@given(_gold_calls(), st.text("abc ", max_size=20))
def test_gold_gets_the_maximum_reward(calls: list[ToolCall], reflection: str) -> None:
    text = write_calls(calls, "tags")
    gold_json = json.dumps([c.model_dump() for c in calls])
    assert schema_reward()([text], tools=[TOOLS], gold_calls=[gold_json]) == [SchemaRewardConfig().max_reward]
    assert call_match_reward()([text], gold_calls=[gold_json]) == [CallMatchConfig().high]
    reply = f"<reflect>{reflection or 'x'}</reflect>{text}"
    assert structured_reflection_reward()([reply], ground_truth=[reply]) == [1.0]
    assert structured_reflection_reward("released")([reply], ground_truth=[reply]) == [
        pytest.approx(1.0, abs=1e-6)
    ]
