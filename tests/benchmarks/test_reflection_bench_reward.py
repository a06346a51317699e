"""The structured-reflection reward (paper eq. 11–25): hand-computed cases and totality."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._errors import ConfigError
from toolmend.benchmarks.reflection_bench._reward import (
    RewardConfig,
    lexical_similarity,
    make_reward_fn,
    reflection_reward,
    reward_breakdown,
    reward_fn,
)
from toolmend.benchmarks.reflection_bench._tags import split_reply


def _call(name: str, **args: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


GOLD = "<reflect>a b c</reflect>" + _call("f", x=1)


def test_perfect_reply_scores_one() -> None:
    b = reward_breakdown(GOLD, GOLD)
    assert (b.structure, b.format_factor, b.reward, b.backoff) == (1.0, 1.0, 1.0, False)


def test_missing_reflection_mask_and_reduced_penalty() -> None:
    b = reward_breakdown(_call("f", x=1), GOLD)
    # S = (0.1·0 + 0.7·1) / 0.8 ; P_miss = 0.1 ; F = 1 − 0.8·0.1·r_reduce(0.3)
    assert b.structure == pytest.approx(0.875)
    assert b.p_miss == pytest.approx(0.1)
    assert b.format_factor == pytest.approx(1 - 0.8 * 0.1 * 0.3)
    assert b.reward == pytest.approx(0.875 * 0.976)


def test_wrong_call_keeps_reflection_credit() -> None:
    b = reward_breakdown("<reflect>a b c</reflect>" + _call("f", x=2), GOLD)
    assert b.s_calls == 0.0 and b.s_reflect == 1.0
    assert b.structure == pytest.approx(0.125) and b.format_factor == 1.0
    assert b.reward == pytest.approx(0.125)


def test_count_penalty() -> None:
    b = reward_breakdown("<reflect>a b c</reflect>" + _call("f", x=1) + _call("g"), GOLD)
    # P_count = 0.7·|1−2|/2 ; P_total = γ 0.6 · 0.35 ; no reduction since calls differ
    assert b.p_count == pytest.approx(0.35)
    assert b.format_factor == pytest.approx(1 - 0.8 * 0.6 * 0.35)
    assert b.reward == pytest.approx(0.125 * (1 - 0.8 * 0.21))


def test_extra_final_penalty() -> None:
    b = reward_breakdown(GOLD + "<final>done</final>", GOLD)
    assert b.p_extra == pytest.approx(0.2)
    assert b.format_factor == pytest.approx(1 - 0.8 * (0.8 * 0.2) * 0.3)
    assert b.reward == pytest.approx(b.format_factor)


def test_extra_calls_when_gold_has_none() -> None:
    gold = "<final>the answer is 4</final>"
    b = reward_breakdown("<final>the answer is 4</final>" + _call("f"), gold)
    assert b.structure == 1.0 and b.p_extra == pytest.approx(0.7)
    assert b.format_factor == pytest.approx(1 - 0.8 * 0.8 * 0.7)


def test_similarity_backoff() -> None:
    b = reward_breakdown("", GOLD)
    assert b.core == 0.0 and b.backoff
    linear_gold = 'a b c [{"name": "f", "arguments": {"x": 1}}] '
    # Only the length ratio of "[]" vs the gold's linearisation survives (no shared n-grams).
    expected = 0.15 * 0.1 * 2 / len(linear_gold.strip())
    assert b.reward == pytest.approx(expected)


def test_every_weight_is_a_parameter() -> None:
    cfg = RewardConfig(w_reflect=0.5, w_calls=0.5, lambda_m=0.0, backoff_weight=1.0)
    b = reward_breakdown(_call("f", x=1), GOLD, cfg)
    assert b.structure == pytest.approx(0.5) and b.format_factor == 1.0
    gate = RewardConfig(strict_call_gate=True)
    assert reflection_reward("<reflect>a b c</reflect>" + _call("f", x=2), GOLD, gate) == 0.0
    with pytest.raises(ValueError):
        RewardConfig(r_reduce=0.0)


def test_custom_similarity_is_clamped_and_errors_are_zero() -> None:
    def boom(a: str, b: str) -> float:
        raise RuntimeError("model down")

    assert reflection_reward(_call("f", x=2), GOLD, sim=lambda a, b: 7.0) <= 1.0
    assert reflection_reward("<reflect>a b c</reflect>" + _call("f", x=2), GOLD, sim=boom) == 0.0


def test_lexical_similarity_by_hand() -> None:
    # unigrams 2/4, bigrams 1/3, equal lengths: 0.6·0.5 + 0.3/3 + 0.1
    assert lexical_similarity("a b c", "A  b d") == pytest.approx(0.5)
    assert lexical_similarity("same text", " Same   text ") == 1.0


def test_split_reply_accepts_call_lists_and_ignores_garbage() -> None:
    parts = split_reply(
        '<call>[{"name": "a", "arguments": {}}, {"name": "b", "parameters": {"k": 1}}]</call>'
    )
    assert [c["name"] for c in parts.calls] == ["a", "b"]
    assert split_reply("<tool_call>{oops</tool_call><reflect>unclosed").calls == []
    assert split_reply(None).calls == [] and split_reply(12).reflect == ""


def test_trl_wrapper() -> None:
    completions = [GOLD, [{"role": "assistant", "content": GOLD}], "nothing"]
    rewards = reward_fn(completions, ground_truth=[GOLD] * 3, prompts=["p"] * 3)
    assert rewards[:2] == [1.0, 1.0] and 0.0 <= rewards[2] < 0.15
    custom = make_reward_fn(column="gold_reply")
    assert custom([GOLD], gold_reply=[GOLD]) == [1.0]
    with pytest.raises(ConfigError, match="gold column"):
        reward_fn([GOLD], prompts=["p"])
    with pytest.raises(ConfigError, match="1 completions but 2"):
        reward_fn([GOLD], ground_truth=[GOLD, GOLD])


_FRAGMENTS = st.sampled_from(
    [
        "<reflect>",
        "</reflect>",
        "<tool_call>",
        "</tool_call>",
        "<call>",
        "</call>",
        "<final>",
        "</final>",
        "<think>",
        "</think>",
        '{"name": "f", "arguments": {"x": 1}}',
        '[{"name": "f", "arguments": {}}]',
        '{"name": 3, "arguments": []}',
        "{",
        "]",
        "null",
        "\n",
    ]
)
_TEXT = st.one_of(
    st.text(max_size=200), st.lists(st.one_of(_FRAGMENTS, st.text(max_size=10)), max_size=25).map("".join)
)


@settings(max_examples=300, deadline=None)
@given(completion=_TEXT, gold=_TEXT)
def test_reward_is_total_and_bounded(completion: str, gold: str) -> None:
    r = reflection_reward(completion, gold)
    assert isinstance(r, float) and 0.0 <= r <= 1.0
    b = reward_breakdown(completion, gold)
    assert 0.0 <= b.structure <= 1.0 and 0.0 <= b.format_factor <= 1.0


@settings(max_examples=100, deadline=None)
@given(text=_TEXT)
def test_reward_of_gold_against_itself_is_one(text: str) -> None:
    parts = split_reply(text)
    if parts.calls or parts.reflect or parts.final:
        assert reflection_reward(text, text) == 1.0


def test_a_bug_inside_the_reward_scores_zero_but_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken(a: str, b: str) -> float:
        raise RuntimeError("similarity bug")

    gold = '<reflect>The date was wrong.</reflect>\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    with caplog.at_level("ERROR", logger="toolmend.benchmarks.reflection_bench._reward"):
        value = reflection_reward(gold, gold, sim=broken)
    assert 0.0 <= value <= 1.0
    assert caplog.records and all(r.exc_info is not None for r in caplog.records)
    assert "similarity function failed" in caplog.records[0].getMessage()
