"""Details checked against the authors' released code (see docs/benchmarks/reflection.md).

The reward cases are the differences the comparison harness found between our reward and the
released one before ``RewardConfig.released()`` existed; each is computed here by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend.benchmarks.reflection_bench._reward import RewardConfig, reflection_reward, reward_breakdown
from toolmend.benchmarks.reflection_bench._scoring import score_attempt
from toolmend.benchmarks.reflection_bench._tags import released_calls, split_reply

RELEASED = RewardConfig.released()


def _block(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


def _call(name: object, args: object) -> str:
    return _block(json.dumps({"name": name, "arguments": args}))


# --- how the released reward reads calls -------------------------------------------------


def test_released_reader_takes_first_object_after_leading_text() -> None:
    text = _block('here it is: {"name": "f", "arguments": {"a": 1}} and more')
    assert released_calls(text) == [{"name": "f", "arguments": {"a": 1}}]
    assert split_reply(text).calls == []  # the tolerant reader wants the block to be JSON


def test_released_reader_forgives_a_trailing_comma() -> None:
    assert released_calls(_block('{"name": "f", "arguments": {"a": 1,},}')) == [
        {"name": "f", "arguments": {"a": 1}}
    ]


def test_released_reader_ignores_parameters_key_call_tag_and_lists() -> None:
    assert released_calls(_block('{"name": "f", "parameters": {}}')) == []
    assert released_calls(_block('[{"name": "f", "arguments": {}}]')) == []
    assert released_calls('<call>[{"name": "f", "arguments": {}}]</call>') == []
    assert released_calls(_block('{"name": 3, "arguments": {}}')) == []


def test_released_reader_on_a_reflection_that_swallows_a_call() -> None:
    # Six sample gold replies open a <tool_call> inside <reflect> and never close it, so the
    # first block runs into the real one; the released reader keeps the quoted call only.
    gold = (
        '<reflect>retry:\n<tool_call>\n{"name": "g", "arguments": {}}</reflect>'
        '<tool_call>{"name": "h", "arguments": {"k": 2}}\n</tool_call>'
    )
    assert [c["name"] for c in split_reply(gold, released=True).calls] == ["g"]
    assert split_reply(gold).calls == []
    assert (
        reflection_reward(
            '<reflect>x</reflect><tool_call>{"name": "g", "arguments": {}}</tool_call>', gold, RELEASED
        )
        > 0
    )


# --- reward values -------------------------------------------------------------------------


def test_released_equality_is_json_text_so_int_and_float_differ() -> None:
    gold = _call("f", {"n": 1})
    reply = _call("f", {"n": 1.0})
    assert reflection_reward(reply, gold) == 1.0
    assert reflection_reward(reply, gold, RELEASED) == 0.0  # the gate: calls differ


def test_released_epsilon_keeps_an_exact_reply_just_below_one() -> None:
    gold = _call("f", {"a": "x"})
    r = reflection_reward(gold, gold, RELEASED)
    # call score = (0.5 + 0.5·1/(1+1e-8)) / (1+1e-8) ≈ 1 − 1.5e-8
    assert r == pytest.approx(1 - 1.5e-8, abs=1e-12)
    assert r < 1.0


def test_released_greedy_matching_can_pair_a_call_with_the_wrong_twin() -> None:
    a = {"x": "p q r"}
    b = {"x": "p q r", "y": 1}
    gold = _call("f", a) + _call("f", b)
    reply = _call("f", b) + _call("f", a)  # the same bag, other order
    assert reflection_reward(reply, gold) == 1.0
    # Gold a takes the first reply call scoring 1 (b: its x matches); gold b is left with
    # reply a: name 0.5 + 0.5·1/2 = 0.75. Call score (1 + 0.75)/2 = 0.875, no format penalty.
    br = reward_breakdown(reply, gold, RELEASED)
    assert br.s_calls == pytest.approx(0.875, abs=1e-7)
    assert br.reward == pytest.approx(0.875, abs=1e-7)


def test_released_graded_call_score_without_the_gate() -> None:
    gold = _call("f", {"a": "x", "b": "y"})
    reply = _call("f", {"a": "x", "b": "zzz"})
    cfg = RewardConfig(match_released=True)
    # name 0.5 + args 0.5·1/2 (b is neither equal nor similar) = 0.75
    assert reward_breakdown(reply, gold, cfg).s_calls == pytest.approx(0.75, abs=1e-7)
    assert reward_breakdown(reply, gold).s_calls == 0.0


def test_released_backoff_text_escapes_non_ascii() -> None:
    gold = "<final>done</final>"
    reply = _call("é", {})
    # Backoff texts: gold "[] done" (7 chars), reply the JSON of its calls; no shared n-grams,
    # so only 0.1 × the length ratio survives, and the released code measures escaped JSON.
    ascii_text = json.dumps([{"name": "é", "arguments": {}}])
    utf8_text = json.dumps([{"name": "é", "arguments": {}}], ensure_ascii=False)
    assert len(ascii_text) != len(utf8_text)
    released = reflection_reward(reply, gold, RELEASED)
    assert released == pytest.approx(0.15 * 0.1 * 7 / len(ascii_text), rel=1e-6)
    assert reflection_reward(reply, gold) == pytest.approx(0.15 * 0.1 * 7 / len(utf8_text), rel=1e-6)


def test_released_preset_accepts_overrides() -> None:
    cfg = RewardConfig.released(w_reflect=0.3)
    assert (cfg.strict_call_gate, cfg.match_released, cfg.w_reflect) == (True, True, 0.3)


# --- the harness's correctness rule on cases the comparison exercised -----------------------


def test_compat_mixed_name_types_cannot_be_sorted_and_score_zero() -> None:
    gold = _call("f", {})
    reply = _call("f", {}) + _call(5, {})
    result = score_attempt(reply, gold, "compat")
    assert (result.correct, result.partial) == (False, 0.0)


def test_compat_null_arguments_are_a_plain_value() -> None:
    gold = _call("f", None)
    result = score_attempt(gold, gold, "compat")
    assert (result.correct, result.partial) == (True, 1.0)
    other = score_attempt(_call("f", {}), gold, "compat")
    assert (other.correct, other.partial) == (False, 0.0)


def test_compat_deeply_nested_block_is_a_format_error() -> None:
    deep = '{"name": "f", "arguments": {"a": ' + "[" * 5000 + "]" * 5000 + "}}"
    result = score_attempt(_call("f", {}) + _block(deep), _call("f", {}), "compat")
    assert (result.correct, result.partial) == (False, 0.0)


def test_released_reward_of_gold_replies_on_real_data(data_dir: Path) -> None:
    path = data_dir / "tool-reflection-bench" / "test_qwen_sample.jsonl"
    golds = [json.loads(line)["ground_truth"] for line in path.read_text(encoding="utf-8").splitlines()]
    rewards = [reflection_reward(g, g, RELEASED) for g in golds]
    # Fed back, every gold reply matches itself up to the 1e-8 smoothing.
    assert min(rewards) > 1 - 1e-7 and max(rewards) <= 1.0
