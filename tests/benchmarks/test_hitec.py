"""HiTEC's F1 Name / F1 Name + Parameter, reply parsing, and the call-list benchmark base."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._schema import ToolCall
from toolmend.benchmarks._hitec import CallCounts, call_counts, hitec_f1, parse_hitec_output


def C(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, arguments=args)


GOLD = [C("f", a=1, b=2), C("g", x="y")]
PRED = [C("f", a=1, b=3), C("f", a=1, b=2), C("h")]


def test_compat_counts_by_membership_and_first_sharing_gold() -> None:
    c = call_counts(PRED, GOLD, "compat")
    assert (c.pred_calls, c.gold_calls, c.correct_calls) == (3, 2, 2)
    # 1 + 2 correct parameters; h() has one empty-arguments slot
    assert (c.pred_params, c.gold_params, c.correct_params) == (5, 3, 3)
    f1 = hitec_f1([c])
    assert f1["f1_name"] == pytest.approx(0.8)
    assert f1["f1_name_param"] == pytest.approx(0.75)


def test_improved_aligns_one_to_one() -> None:
    c = call_counts(PRED, GOLD, "improved")
    assert (c.correct_calls, c.correct_params) == (1, 2)
    f1 = hitec_f1([c])
    assert f1["f1_name"] == pytest.approx(0.4)
    assert f1["f1_name_param"] == pytest.approx(2 * 0.4 * (2 / 3) / (0.4 + 2 / 3))


def test_compat_takes_first_gold_with_any_shared_parameter() -> None:
    gold = [C("f", key="k", q="a"), C("f", key="k", q="b")]
    pred = [C("f", key="k", q="a"), C("f", key="k", q="b")]
    assert call_counts(pred, gold, "compat").correct_params == 3  # the 2nd call is checked against the 1st
    assert call_counts(pred, gold, "improved").correct_params == 4


def test_parameter_rules() -> None:
    assert call_counts([C("f")], [C("f")]).model_dump(exclude={"format_ok"}) == {
        "pred_calls": 1,
        "gold_calls": 1,
        "correct_calls": 1,
        "pred_params": 1,
        "gold_params": 1,
        "correct_params": 1,
    }
    empty_ignored = call_counts([C("f", a=1)], [C("f", a=1, b="")])
    assert (empty_ignored.gold_params, empty_ignored.correct_params) == (1, 1)
    assert call_counts([C("f", n=40.7)], [C("f", n="40.7")]).correct_params == 1  # str() comparison
    reordered = ([C("f", d={"b": 2, "a": 1})], [C("f", d={"a": 1, "b": 2})])
    assert call_counts(*reordered, "compat").correct_params == 0
    assert call_counts(*reordered, "improved").correct_params == 1


def test_format_error_is_one_wrong_call() -> None:
    c = call_counts(None, GOLD)
    assert (c.format_ok, c.pred_calls, c.correct_calls, c.pred_params) == (False, 1, 0, 0)


def test_micro_average_over_samples() -> None:
    a = CallCounts(
        pred_calls=1, gold_calls=1, correct_calls=1, pred_params=2, gold_params=2, correct_params=2
    )
    b = CallCounts(
        pred_calls=1, gold_calls=3, correct_calls=0, pred_params=1, gold_params=2, correct_params=0
    )
    f1 = hitec_f1([a, b])
    assert (f1["precision_name"], f1["recall_name"]) == (0.5, 0.25)
    assert f1["f1_name"] == pytest.approx(1 / 3)
    assert (f1["precision_param"], f1["recall_param"]) == (2 / 3, 0.5)
    assert hitec_f1([])["f1_name"] == 0.0


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('[{"name": "f", "arguments": {"a": 1}}]', ["f"]),
        ('```json\n{"tool_calls": [{"name": "f", "arguments": {}}]}\n```', ["f"]),
        ('Sure! [{"name": "f", "parameters": {"a": 1}}, {"api_name": "g", "args": "{}"}] done', ["f", "g"]),
        ('{"name": "f", "arguments": "{\\"a\\": 1}"}', ["f"]),
        ('[{"type": "function", "function": {"name": "f", "arguments": "{}"}}]', ["f"]),
        ("[AddAlarm(token='t', time='2021-10-14 08:00:00'), GetUserToken()]", ["AddAlarm", "GetUserToken"]),
        ("[]", []),
    ],
)
def test_parse_calls_accepts_common_shapes(text: str, names: list[str]) -> None:
    calls = parse_hitec_output(text)
    assert calls is not None and [c.name for c in calls] == names


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I cannot help",
        '[{"arguments": {}}]',
        '[{"name": "f", "arguments": [1]}]',
        "[f(1)]",
        "[__import__('os')()]",
    ],
)
def test_parse_calls_rejects_unreadable(text: str) -> None:
    assert parse_hitec_output(text) is None


_CALLS = st.lists(
    st.builds(
        lambda n, a: ToolCall(name=n, arguments=a),
        st.sampled_from(["f", "g"]),
        st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from([1, 2, "", "x"]), max_size=2),
    ),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(pred=_CALLS, gold=_CALLS.filter(bool), data=st.data())
def test_f1s_are_bounded_and_improved_is_order_free(
    pred: list[ToolCall], gold: list[ToolCall], data: st.DataObject
) -> None:
    for mode in ("compat", "improved"):
        f1 = hitec_f1([call_counts(pred, gold, mode)])
        assert all(0.0 <= v <= 1.0 for v in f1.values())
    base = call_counts(pred, gold, "improved")
    shuffled = call_counts(data.draw(st.permutations(pred)), data.draw(st.permutations(gold)), "improved")
    assert (shuffled.correct_calls, shuffled.correct_params) == (base.correct_calls, base.correct_params)
    assert hitec_f1([call_counts(gold, gold, "improved")])["f1_name_param"] == 1.0
    text = json.dumps([{"name": c.name, "arguments": c.arguments} for c in pred])
    assert parse_hitec_output(text) == pred
